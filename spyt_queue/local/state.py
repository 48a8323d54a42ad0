"""The server state: Cypress, dynamic tables, transactions and the commit path, behind one state lock."""

from __future__ import annotations

import bisect
import itertools
import operator
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yt.yson as yson

from spyt_queue.local import expiration, ids, ordered, sorted_tables, tablet_checks, value_paths
from spyt_queue.local.cypress import (
    Cypress,
    Node,
    TableMeta,
    Tablet,
    check_consumer_flag,
    check_tablet_cell_bundle,
    node_type_for_value,
    parse_commit_ordering,
)
from spyt_queue.local.errors import (
    RESOLVE_ERROR,
    TABLET_NOT_MOUNTED,
    TOO_MANY_ROWS_IN_TRANSACTION,
    YtError,
    resolve_error,
)
from spyt_queue.local.schema import (
    CONSUMER_SCHEMA,
    PRODUCER_SCHEMA,
    TABLET_INDEX,
    TableSchema,
)
from spyt_queue.local.storage import Storage
from spyt_queue.local.transactions import (
    DEFAULT_MAX_ROWS_PER_TRANSACTION,
    MAX_ROWS_PER_TRANSACTION_HARD_LIMIT,
    MAX_TRANSACTION_TIMEOUT_MS,
    SortedWrite,
    Transaction,
    TransactionManager,
)
from spyt_queue.local.ypath import RichPath, split_path

DEFAULT_CLUSTER_NAME = "local"

#: ``set`` of an existing map node needs ``force`` (test_cypress.py test_force, test_invalid_cases).
SET_MAP_WITHOUT_FORCE = '"set" command without "force" flag is forbidden; use "create" instead'


@dataclass
class Registration:
    """A queue consumer registration."""

    queue_cluster: str
    queue_path: str
    consumer_cluster: str
    consumer_path: str
    vital: bool
    partitions: list[int] | None


class State:
    """Everything the commands act on; every mutation commits one SQLite transaction under :attr:`lock`."""

    def __init__(
        self,
        data_dir: str | Path,
        cluster_name: str = DEFAULT_CLUSTER_NAME,
        max_rows_per_transaction: int = DEFAULT_MAX_ROWS_PER_TRANSACTION,
    ) -> None:
        if not 0 < max_rows_per_transaction <= MAX_ROWS_PER_TRANSACTION_HARD_LIMIT:
            raise ValueError(
                f"max_rows_per_transaction must be in [1, {MAX_ROWS_PER_TRANSACTION_HARD_LIMIT}], "
                f"got {max_rows_per_transaction}"
            )
        self.cluster_name = cluster_name
        self.max_rows_per_transaction = max_rows_per_transaction
        self.storage = Storage(data_dir)
        self.lock = threading.RLock()
        self.timestamps = ids.TimestampGenerator(self.storage.get_meta("last_timestamp"))
        self.ids = ids.IdGenerator(self.timestamps.generate())
        self.cypress = Cypress(self.ids)
        self.cypress.load(self.storage.load_nodes())
        self._load_tablets()
        self.registrations: list[Registration] = [
            Registration(qc, qp, cc, cp, bool(v), list(yson.loads(p)) if p is not None else None)
            for qc, qp, cc, cp, v, p in self.storage.load_registrations()
        ]
        self.transactions = TransactionManager(self.timestamps)
        with self.storage.transaction() as conn:
            for path in ("//tmp", "//home", "//sys", "//sys/operations"):  # no operations run here: stays empty
                if self.cypress.find(path) is None:
                    self.cypress.create(
                        conn, "map_node", path, recursive=False, ignore_existing=True, force=False, attributes={}
                    )
            self._persist_meta(conn)
        self._stop = threading.Event()
        self._sweeper = threading.Thread(target=self._sweep_loop, name="ytqueue-tx-sweeper", daemon=True)
        self._sweeper.start()

    def close(self) -> None:
        """Stop background work."""
        self._stop.set()

    def _sweep_loop(self) -> None:
        """Every 0.25 s: remove nodes whose ``@expiration_time`` passed; every second: expire transactions."""
        tick = 0
        while not self._stop.wait(0.25):
            try:
                self._remove_expired_nodes()
            except YtError:
                pass  # a node that cannot be removed now is tried again on the next tick
            tick += 1
            if tick % 4 == 0:
                self.transactions.sweep()

    def _remove_expired_nodes(self) -> None:
        with self.lock:
            due = expiration.due(list(self.cypress.by_id.values()), time.time())
            if not due:
                return
            with self.storage.transaction() as conn:
                for node in due:
                    if node.id in self.cypress.by_id:  # not gone with an expired ancestor
                        self._drop_tables(conn, self.cypress.remove_node(conn, node))

    def _load_tablets(self) -> None:
        rows: dict[str, list[tuple[Any, ...]]] = {}
        for row in self.storage.load_tablets():
            rows.setdefault(row[0], []).append(row)
        for node in list(self.cypress.by_id.values()):
            if node.table is None:
                continue
            loaded = [
                Tablet(
                    int(index),
                    self._tablet_id(node.id, int(index)),
                    str(state),
                    int(total),
                    int(trimmed),
                    int(last_ts),
                    int(cdw),
                )
                for _table_id, index, state, total, trimmed, last_ts, cdw in rows.get(node.id, [])
            ]
            if not node.table.dynamic:
                node.table.static_tablet = loaded[0] if loaded else None
                continue
            tablet_chunks = (node.sys.get("table") or {}).get("tablet_chunks") or {}
            for tablet in loaded:
                tablet.chunks = [list(c) for c in tablet_chunks.get(str(tablet.index)) or []]
            node.table.tablets.extend(loaded)

    @staticmethod
    def _tablet_id(table_id: str, index: int) -> str:
        parts = ids.parse_id(table_id)
        counter = ((parts[0] << 32) | parts[1]) + index + 1
        return ids.format_id(counter & 0xFFFFFFFFFFFFFFFF, ids.TYPE_TABLET, parts[3])

    def _persist_meta(self, conn: Any) -> None:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_timestamp', ?)", (self.timestamps.last,))

    # ----------------------------------------------------------------------------------------------------------
    # Paths

    def local_path(self, rich: RichPath) -> str:
        """The plain path of a rich path on this cluster (other clusters are refused)."""
        cluster = rich.cluster
        if cluster is not None and cluster != self.cluster_name:
            raise YtError(
                f"Cluster {cluster!r} is not known to the local server (its cluster name is {self.cluster_name!r})",
                attributes={"path": rich.path},
            )
        return normalize_path(rich.path)

    def dynamic_table(self, path: str) -> Node:
        """A dynamic table node."""
        node = self.cypress.resolve_table(path)
        assert node.table is not None
        if not node.table.dynamic:
            raise YtError(f"Table {node.path} is not dynamic", attributes={"path": node.path})
        return node

    # ----------------------------------------------------------------------------------------------------------
    # Cypress commands

    def create(
        self, node_type: str, path: str, recursive: bool, ignore_existing: bool, force: bool, attributes: dict[str, Any]
    ) -> str:
        """``create``: map nodes, tables (static or dynamic), documents, queue consumers and producers."""
        attributes = {str(k): v for k, v in attributes.items()}
        table: TableMeta | None = None
        value = None
        auto_mount = False
        if node_type in ("queue_consumer", "queue_producer"):
            if "schema" in attributes:
                raise YtError(f"Cannot specify schema for {node_type}")
            schema = CONSUMER_SCHEMA if node_type == "queue_consumer" else PRODUCER_SCHEMA
            flag = "treat_as_queue_consumer" if node_type == "queue_consumer" else "treat_as_queue_producer"
            attributes[flag] = True
            attributes.pop("dynamic", None)
            table = TableMeta(TableSchema(list(schema.columns), True, True), True)
            node_type = "table"
            auto_mount = True
        elif node_type == "table":
            dynamic = bool(attributes.pop("dynamic", False))
            raw_schema = attributes.pop("schema", None)
            if raw_schema is None:
                if dynamic:
                    raise YtError("Dynamic table must have a schema", code=314)
                schema = TableSchema([], strict=False, unique_keys=False)
            else:
                schema = TableSchema.parse(raw_schema, dynamic=dynamic)
            table = TableMeta(schema, dynamic)
        elif node_type == "document":
            value = attributes.pop("value", yson.YsonEntity())
        elif node_type == "map_node":
            pass
        elif node_type in ("string_node", "int64_node", "uint64_node", "double_node", "boolean_node", "list_node"):
            value = attributes.pop(
                "value",
                {
                    "string_node": "",
                    "int64_node": 0,
                    "uint64_node": yson.YsonUint64(0),
                    "double_node": 0.0,
                    "boolean_node": False,
                    "list_node": [],
                }[node_type],
            )
        else:
            raise YtError(
                f"Creating objects of type {node_type!r} is not supported by ytqueue local",
                attributes={"type": node_type},
            )
        tablet_count = attributes.pop("tablet_count", None) if table is not None else None
        pivot_keys = attributes.pop("pivot_keys", None) if table is not None else None
        trimmed = attributes.pop("trimmed_row_counts", None) if table is not None else None
        weights = attributes.pop("cumulative_data_weights", None) if table is not None else None
        if "commit_ordering" in attributes:
            attributes["commit_ordering"] = parse_commit_ordering(attributes["commit_ordering"])
        if "tablet_cell_bundle" in attributes:
            check_tablet_cell_bundle(attributes["tablet_cell_bundle"])
        if "treat_as_queue_consumer" in attributes:
            check_consumer_flag(table)
        if table is not None and table.dynamic:
            # As TTableNodeTypeHandler::DoCreate and TTableNode::ValidateReshard (table_server).
            if tablet_count is not None and int(tablet_count) <= 0:
                raise YtError("Tablet count must be positive")
            if pivot_keys is not None and not table.schema.sorted:
                raise YtError("Table is ordered; must provide tablet count")
            count = int(tablet_count) if tablet_count is not None else (len(pivot_keys) if pivot_keys else 1)
            table.pivot_keys = list(pivot_keys) if pivot_keys else []
            trimmed_counts = _per_tablet_counts("trimmed_row_counts", trimmed, table, tablet_count)
            start_weights = _per_tablet_counts("cumulative_data_weights", weights, table, tablet_count)
            table.tablets = [
                Tablet(
                    i,
                    "",
                    total_row_count=trimmed_counts[i] if trimmed_counts else 0,
                    trimmed_row_count=trimmed_counts[i] if trimmed_counts else 0,
                    cumulative_data_weight=start_weights[i] if start_weights else 0,
                    last_chunk=(),
                )
                for i in range(count)
            ]
        elif tablet_count is not None:
            raise YtError('"tablet_count" can only be given for a dynamic table')
        with self.lock, self.storage.transaction() as conn:
            node, created = self.cypress.create(
                conn,
                node_type,
                path,
                recursive=recursive,
                ignore_existing=ignore_existing,
                force=force,
                attributes=attributes,
                table=table,
                value=value,
            )
            if created and node.table is not None and node.table.dynamic:
                for tablet in node.table.tablets:
                    tablet.tablet_id = self._tablet_id(node.id, tablet.index)
                    if auto_mount:
                        tablet.state = "mounted"
                    ordered.persist_tablet(conn, node.id, tablet)
            return node.id

    def link(
        self,
        target_path: str,
        link_path: str,
        recursive: bool,
        ignore_existing: bool,
        force: bool,
        attributes: dict[str, Any],
    ) -> str:
        """``link``: a symbolic link node at ``link_path`` to an existing ``target_path``."""
        with self.lock:
            if self.cypress.link_passes_through(target_path, self.cypress.canonical_path(link_path)):
                raise YtError(
                    "Failed to create link: link is cyclic",
                    attributes={"target_path": target_path, "path": link_path},
                )
            if ignore_existing and force:
                raise YtError('Cannot specify both "ignore_existing" and "force" options simultaneously')
            if not force:  # with force a link may point to a missing node (it is then @broken)
                self.cypress.resolve(target_path)
            with self.storage.transaction() as conn:
                node, created = self.cypress.create(
                    conn,
                    "link",
                    link_path,
                    recursive=recursive,
                    ignore_existing=ignore_existing,
                    force=force,
                    attributes={str(k): v for k, v in attributes.items()},
                )
                if created:
                    node.sys["target_path"] = normalize_path(target_path)
                    self.cypress.persist(conn, node)
                return node.id

    def get(self, path: str, attributes: list[str] | None) -> Any:
        """``get``."""
        with self.lock:
            target = self._transaction_target(path)
            if target is not None:
                return self._get_transaction_object(path, *target, attributes)
            return self.cypress.get(path, attributes)

    # Transactions as objects: ``#<id>``, ``//sys/transactions/<id>``, ``//sys/topmost_transactions/<id>``.

    def _transaction_target(self, path: str) -> tuple[Transaction | None, list[str] | None, bool] | None:
        """``(transaction, attribute, topmost)`` when ``path`` names a transaction or one of the transaction maps
        (transaction ``None`` for the map itself), ``None`` for other paths. An object id that does not parse is
        an error, as is one of a cell other than this one (``exists`` included: such an id is not an object id of
        this cluster); the null id ``0-0-0-0`` and a missing transaction are resolve errors."""
        components, attribute = split_path(path)
        if components and components[0].startswith("#"):
            object_id = components[0][1:].rstrip("&")
            parts = _parse_guid(object_id)
            if parts == (0, 0, 0, 0):
                raise resolve_error(path, f"No such object {object_id}")
            if parts[2] >> 16 != ids.CELL_TAG:
                raise YtError(f"Unknown master cell tag {parts[2] >> 16}")
            if parts[2] & 0xFFFF not in _TRANSACTION_TYPES:
                return None
            tx = self.transactions.find(object_id)
            if tx is None:
                raise resolve_error(path, f"No such transaction {object_id}")
            if len(components) > 1:
                raise resolve_error(path, f"Transaction {object_id} cannot have children")
            return tx, attribute, False
        if len(components) < 2 or components[0] != "sys" or components[1] not in _TRANSACTION_MAPS:
            return None
        topmost = components[1] == "topmost_transactions"
        if len(components) == 2:
            return None, attribute, topmost
        key = components[2]
        _parse_guid(key)
        tx = self.transactions.find(key)
        if tx is None or tx.type != "master" or (topmost and tx.parent_id is not None):
            raise resolve_error(path, f'Node //sys/{components[1]} has no child with key "{key}"')
        if len(components) > 3:
            raise resolve_error(path, f"Transaction {key} cannot have children")
        return tx, attribute, topmost

    def _transaction_attributes(self, tx: Transaction) -> dict[str, Any]:
        """A transaction's attributes (``transaction_proxy.cpp``) and its user attributes."""
        if tx.type != "master":
            return {
                "id": tx.id,
                "type": "tablet_transaction",
                "timeout": tx.timeout_ms,
                "start_timestamp": tx.start_ts,
                **tx.attributes,
            }
        result: dict[str, Any] = {
            "id": tx.id,
            "type": "nested_transaction" if tx.parent_id else "transaction",
            "owner": "root",
            "state": "active",
            "timeout": tx.timeout_ms,
            "parent_id": tx.parent_id or "0-0-0-0",
            "start_time": _instant(tx.start_time),
            "last_ping_time": _instant(time.time() - (time.monotonic() - tx.last_ping)),
            "nested_transaction_ids": list(tx.nested),
            "prerequisite_transaction_ids": list(tx.prerequisite_ids),
            "dependent_transaction_ids": list(tx.dependent_ids),
            "depth": tx.depth,
            "cypress_transaction": True,
            "start_timestamp": tx.start_ts,
        }
        if tx.deadline is not None:
            result["deadline"] = _instant(tx.deadline)
        result.update(tx.attributes)
        return result

    def _get_transaction_object(
        self,
        path: str,
        tx: Transaction | None,
        attribute: list[str] | None,
        topmost: bool,
        attributes: list[str] | None = None,
    ) -> Any:
        if tx is None:  # the map itself
            if attribute is not None:
                raise YtError(f"Attributes of {path} are not supported by ytqueue local")
            value = {
                tx_id: self._with_attributes(yson.YsonEntity(), self._transaction_attributes(child), attributes)
                for tx_id in self.transactions.master_ids(topmost)
                if (child := self.transactions.find(tx_id)) is not None
            }
            own = {"type": "topmost_transaction_map" if topmost else "transaction_map", "count": len(value)}
            return self._with_attributes(value, own, attributes)
        if attribute is None:
            return self._with_attributes(yson.YsonEntity(), self._transaction_attributes(tx), attributes)
        value: Any = self._transaction_attributes(tx)
        for depth, name in enumerate(attribute):
            if isinstance(value, dict) and name in value:
                value = value[name]
            elif isinstance(value, list) and name.lstrip("-").isdigit() and -len(value) <= int(name) < len(value):
                value = value[int(name)]
            else:
                shown = "/".join(attribute[: depth + 1])
                raise resolve_error(path, f'Attribute "{shown}" is not found')
        return value

    @staticmethod
    def _with_attributes(value: Any, available: dict[str, Any], attributes: list[str] | None) -> Any:
        """``value`` carrying the requested ``attributes`` it has (as ``get``/``list`` with an attribute filter)."""
        selected = {name: available[name] for name in attributes or () if name in available}
        return yson.to_yson_type(value, attributes=selected) if selected else value

    def list(self, path: str, attributes: list[str] | None) -> Any:
        """``list``."""
        with self.lock:
            target = self._transaction_target(path)
            if target is not None:
                tx, attribute, topmost = target
                if tx is None and attribute is None:
                    return [
                        self._with_attributes(tx_id, self._transaction_attributes(child), attributes)
                        for tx_id in self.transactions.master_ids(topmost)
                        if (child := self.transactions.find(tx_id)) is not None
                    ]
                if attribute == []:
                    return list(self._transaction_attributes(tx)) if tx is not None else []
                raise YtError(f"Cannot list {path}: it is not a map node")
            return self.cypress.list(path, attributes)

    def exists(self, path: str) -> bool:
        """``exists``."""
        with self.lock:
            try:
                target = self._transaction_target(path)
                if target is not None:
                    self._get_transaction_object(path, *target)
                    return True
            except YtError as exc:
                if exc.contains_code(RESOLVE_ERROR):
                    return False
                raise
            return self.cypress.exists(path)

    def _set_transaction_attribute(self, path: str, value: Any) -> bool:
        """``set`` of a transaction's attribute (``@timeout`` or a user attribute); whether ``path`` was one."""
        target = self._transaction_target(path)
        if target is None:
            return False
        tx, attribute, _ = target
        if tx is None or not attribute:
            raise YtError(f"Cannot set {path}: only attributes of a transaction can be set here")
        name = attribute[0]
        if name == "timeout" and len(attribute) == 1:
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise YtError(f"Invalid transaction timeout {value!r}")
            tx.timeout_ms = min(int(value), MAX_TRANSACTION_TIMEOUT_MS)
            return True
        if name in self._transaction_attributes(tx) and name not in tx.attributes:
            raise YtError(f'Builtin attribute "{name}" cannot be set', attributes={"path": path})
        if len(attribute) > 1:
            raise YtError(f"Setting nested keys of a transaction attribute ({path}) is not supported by ytqueue local")
        tx.attributes[name] = value
        return True

    def remove(self, path: str, recursive: bool, force: bool) -> None:
        """``remove`` (a table's rows, chunks and registrations go with it); ``path/*`` removes every child of a
        map or list node (``RemoveAll`` of a composite node)."""
        with self.lock:
            components, attribute = split_path(path)
            if attribute is None and components and components[-1] == "*" and not path.endswith("\\*"):
                self._remove_all(path[: -len("/*")])
                return
            into = self.cypress.value_target(path)
            if into is not None and attribute is not None:
                raise value_paths.refuse_attributes(into.node.path, into.rest)
            try:
                node = None if into is not None else self.cypress.resolve(path, follow_last=False)  # a link itself
            except YtError as exc:
                if force and exc.code == 500:
                    return
                raise
            with self.storage.transaction() as conn:
                if into is not None:
                    self.cypress.store_value(conn, into.node, value_paths.remove_item(*_item_args(into), force))
                    return
                if attribute is not None:
                    self.cypress.remove_attribute(conn, node, attribute, path, force)
                    return
                if node.type == "map_node" and node.children and not recursive:
                    raise YtError(f"Cannot remove non-empty composite node {node.path}")
                if node is self.cypress.root or node.path in ("//sys",):
                    raise YtError(f"Node {node.path} cannot be removed")
                self._drop_tables(conn, self.cypress.remove_node(conn, node))

    def _remove_all(self, path: str) -> None:
        node = self.cypress.resolve(path)
        with self.storage.transaction() as conn:
            if node.type == "map_node":
                for child in list(node.children.values()):
                    self._drop_tables(conn, self.cypress.remove_node(conn, child))
            elif node.type == "list_node":
                self.cypress.store_value(conn, node, [])
            else:
                raise YtError(f"Node {node.path} of type {node.type} has no children to remove")

    @staticmethod
    def _drop_tables(conn: Any, removed: list[Node]) -> None:
        """The stored rows, chunks and tablets of removed table nodes."""
        for table in removed:
            conn.execute("DELETE FROM chunks WHERE table_id = ?", (table.id,))
            conn.execute("DELETE FROM tablets WHERE table_id = ?", (table.id,))
            conn.execute("DELETE FROM versions WHERE table_id = ?", (table.id,))

    def set(self, path: str, value: Any, recursive: bool, force: bool) -> None:
        """``set``: attributes, scalar/document values, or a new subtree."""
        with self.lock:
            if self._set_transaction_attribute(path, value):
                return
        with self.lock, self.storage.transaction() as conn:
            _, attribute = split_path(path)
            into = self.cypress.value_target(path)
            if into is not None:
                if attribute is not None:
                    raise value_paths.refuse_attributes(into.node.path, into.rest)
                new_value = value_paths.set_item(*_item_args(into, _plain(value)), recursive=recursive)
                self.cypress.store_value(conn, into.node, new_value)
                return
            if not path.strip("/") and attribute is None:  # the root is a map node that cannot be replaced
                if not force:
                    raise YtError(SET_MAP_WITHOUT_FORCE)
                raise YtError("Node / cannot be replaced")
            if attribute is not None:
                node = self.cypress.resolve(path)
                self.cypress.set_attribute(conn, node, attribute, value, path)
                return
            existing = self.cypress.find(path)
            if existing is not None and existing.type in (
                "document",
                "string_node",
                "int64_node",
                "uint64_node",
                "double_node",
                "boolean_node",
                "list_node",
            ):
                if existing.type != "document" and node_type_for_value(value) != existing.type and not force:
                    raise YtError(f"Cannot change the type of node {existing.path} from {existing.type!r}; use force")
                existing.sys["value"] = _plain(value)
                existing.attrs.update(_value_attributes(value))
                self.cypress.persist(conn, existing)
                return
            if existing is not None and existing.type == "map_node" and not force:
                raise YtError(SET_MAP_WITHOUT_FORCE, attributes={"path": existing.path})  # test_force
            if (
                existing is not None
                and existing.type == "map_node"
                and isinstance(value, dict)
                and existing is not self.cypress.root
            ):
                for child in list(existing.children.values()):
                    self.cypress.remove_node(conn, child)
                existing.attrs.update(_value_attributes(value))
                self._set_tree(conn, path, value)
                return
            if existing is not None:
                if not force:
                    raise YtError(
                        f"Node {existing.path} already exists and cannot be overwritten without force", code=501
                    )
                self.cypress.remove_node(conn, existing)
            self._create_value(conn, path, value, recursive)

    def _create_value(self, conn: Any, path: str, value: Any, recursive: bool) -> None:
        """A node for ``value``; attributes the value carries (``<a=1>{...}``) become the node's attributes."""
        node_type = node_type_for_value(value)
        attributes = _value_attributes(value)
        if node_type == "map_node":
            self.cypress.create(
                conn, "map_node", path, recursive=recursive, ignore_existing=False, force=False, attributes=attributes
            )
            self._set_tree(conn, path, value)
        else:
            self.cypress.create(
                conn,
                node_type,
                path,
                recursive=recursive,
                ignore_existing=False,
                force=False,
                attributes=attributes,
                value=_plain(value),
            )

    def _set_tree(self, conn: Any, path: str, value: dict[str, Any]) -> None:
        for key, item in value.items():
            self._create_value(conn, f"{path.rstrip('/')}/{key}", item, False)

    # ----------------------------------------------------------------------------------------------------------
    # Chunks

    def new_chunk_id(self) -> str:
        """A fresh chunk id (object type 100, ``EObjectType::Chunk``)."""
        return self.ids.generate(ids.TYPE_CHUNK)

    # ----------------------------------------------------------------------------------------------------------
    # Transactions and commit

    def transaction_for(self, tx_id: str | None) -> Transaction | None:
        """The tablet transaction named by ``transaction_id`` (``None`` for the null id)."""
        if not tx_id or tx_id == "0-0-0-0":
            return None
        tx = self.transactions.get(tx_id)
        if tx.type != "tablet":
            raise YtError(
                f"Transaction {tx_id} is a master transaction; dynamic-table commands need a tablet transaction",
                attributes={"transaction_id": tx_id},
            )
        return tx

    def implicit_transaction(self) -> Transaction:
        """A one-shot tablet transaction for a write without ``transaction_id``."""
        start = self.timestamps.generate()
        return Transaction(ids.format_id(start, ids.TYPE_ATOMIC_TABLET_TRANSACTION), "tablet", start, 60000, {})

    def read_timestamp(self, tx: Transaction | None, timestamp: Any = None) -> int:
        """The snapshot a read uses: the transaction start, an explicit timestamp, or the latest."""
        if tx is not None:
            return tx.start_ts
        if timestamp is not None:
            value = int(timestamp)
            # SyncLastCommitted/AsyncLastCommitted and friends mean "latest".
            if value >= 0x3FFFFFFFFFFFFF00:
                return 1 << 62
            return value
        return 1 << 62

    def buffer_ordered(self, tx: Transaction, node: Node, rows: list[dict[bytes, Any]]) -> None:
        """Validate targets and buffer ordered-table rows (grouped by tablet) into ``tx``."""
        table = node.table
        assert table is not None
        by_tablet: dict[int, list[dict[bytes, Any]]] = {}
        default_tablet: int | None = None
        explicit = sum(map(operator.contains, rows, itertools.repeat(TABLET_INDEX)))
        if explicit == len(rows) and rows:
            indexes = list(map(operator.methodcaller("pop", TABLET_INDEX), rows))
            if len(set(indexes)) == 1:  # the usual batch: one tablet, no per-row grouping
                by_tablet[int(indexes[0])] = rows
            else:
                for index, row in zip(indexes, rows, strict=True):
                    by_tablet.setdefault(int(index), []).append(row)
        else:
            for row in rows:
                index = row.pop(TABLET_INDEX, None)
                if index is None:
                    if default_tablet is None:
                        mounted = [t.index for t in table.tablets if t.state == "mounted"]
                        if not mounted:
                            raise YtError(
                                f"Table {node.path} has no mounted tablets",
                                code=TABLET_NOT_MOUNTED,
                                attributes={"table_path": node.path},
                            )
                        default_tablet = random.choice(mounted)
                    index = default_tablet
                by_tablet.setdefault(int(index), []).append(row)
        count = len(table.tablets)
        for index in by_tablet:
            if not 0 <= index < count:  # as YTsaurus's client routes rows: a plain error, not 1701 NoSuchTablet
                raise YtError(f"Invalid tablet index: actual {index}, expected in range [0, {count - 1}]")
            tablet_checks.validate_mounted(node, tablet_checks.tablet_at(node, index), write=True)
        target = tx.ordered_writes.setdefault(node.id, {})
        tx.table_paths[node.id] = node.path
        for index, group in by_tablet.items():
            target.setdefault(index, []).extend(group)

    def buffer_sorted(
        self, tx: Transaction, node: Node, rows: list[dict[bytes, Any]], delete: bool, update: bool
    ) -> None:
        """Buffer sorted-table upserts or deletes into ``tx`` (later writes of a key win)."""
        table = node.table
        assert table is not None
        schema = table.schema
        tablet_checks.validate_keys_mounted(node, (sorted_tables.key_of(schema, row) for row in rows), write=True)
        target = tx.sorted_writes.setdefault(node.id, {})
        tx.table_paths[node.id] = node.path
        for row in rows:
            key = sorted_tables.key_of(schema, row)
            if delete:
                target.pop(key, None)
                target[key] = SortedWrite(key, None)
                continue
            previous = target.get(key)
            if update and previous is not None and previous.row is not None:
                merged = dict(previous.row)
                merged.update(row)
                target[key] = SortedWrite(key, merged, previous.update)
            else:
                target.pop(key, None)
                target[key] = SortedWrite(key, dict(row), update)

    def check_row_limit(self, tx: Transaction) -> None:
        """Error 1717 when ``tx`` writes more than :attr:`max_rows_per_transaction` rows into one tablet, as the
        native client checks when it prepares a commit: nothing of the transaction is applied."""
        counts = dict(tx.ordered_row_counts())
        for table_id, writes in tx.sorted_writes.items():
            node = self.cypress.by_id.get(table_id)
            table = node.table if node is not None else None
            pivots = _encoded_pivots(table.pivot_keys) if table is not None and len(table.tablets) > 1 else []
            for key in writes:
                index = bisect.bisect_right(pivots, key) - 1 if pivots else 0
                counts[(table_id, max(index, 0))] = counts.get((table_id, max(index, 0)), 0) + 1
        for (table_id, index), count in counts.items():
            if count > self.max_rows_per_transaction:
                path = tx.table_paths.get(table_id, f"#{table_id}")
                raise YtError(
                    "Transaction affects too many rows in tablet",
                    code=TOO_MANY_ROWS_IN_TRANSACTION,
                    attributes={
                        "limit": self.max_rows_per_transaction,
                        "row_count": count,
                        "table_path": path,
                        "tablet_index": index,
                        "transaction_id": tx.id,
                    },
                )

    def commit(self, tx: Transaction) -> int:
        """Apply a tablet transaction atomically; returns the commit timestamp."""
        with self.lock:
            if not tx.has_writes():
                return self.timestamps.generate()
            self.check_row_limit(tx)
            saved: list[tuple[Tablet, tuple[int, int, int, int, Any]]] = []
            try:
                with self.storage.transaction() as conn:
                    for table_id, writes in tx.sorted_writes.items():
                        node = self._live_table(table_id, tx)
                        tablet_checks.validate_keys_mounted(node, writes, write=True)
                        for key in writes:
                            sorted_tables.check_conflict(
                                conn, self.storage, table_id, node.path, key, tx.start_ts, tx.id
                            )
                    for table_id, per_tablet in tx.ordered_writes.items():
                        node = self._live_table(table_id, tx)
                        for index in per_tablet:
                            tablet_checks.validate_mounted(node, tablet_checks.tablet_at(node, index), write=True)
                    commit_ts = self.timestamps.generate()
                    active = self.transactions.min_active_start_ts()
                    horizon = commit_ts if active is None else min(active, commit_ts)
                    for table_id, per_tablet in tx.ordered_writes.items():
                        node = self.cypress.by_id[table_id]
                        assert node.table is not None
                        for index, rows in per_tablet.items():
                            tablet = node.table.tablets[index]
                            saved.append(
                                (
                                    tablet,
                                    (
                                        tablet.total_row_count,
                                        tablet.last_write_ts,
                                        tablet.cumulative_data_weight,
                                        tablet.trimmed_row_count,
                                        tablet.last_chunk,
                                    ),
                                )
                            )
                            ordered.append(conn, self.storage, table_id, tablet, node.table.schema, rows, commit_ts)
                    for table_id, writes in tx.sorted_writes.items():
                        node = self.cypress.by_id[table_id]
                        assert node.table is not None
                        for write in writes.values():
                            sorted_tables.apply_write(
                                conn,
                                table_id,
                                node.path,
                                node.table.schema,
                                write.key,
                                write.row,
                                write.update,
                                commit_ts,
                                horizon,
                            )
                    self._persist_meta(conn)
            except BaseException:
                for tablet, (total, last_ts, cdw, trimmed, _last_chunk) in saved:
                    tablet.total_row_count, tablet.last_write_ts = total, last_ts
                    tablet.cumulative_data_weight, tablet.trimmed_row_count = cdw, trimmed
                    tablet.last_chunk = None
                raise
            return commit_ts

    def _live_table(self, table_id: str, tx: Transaction) -> Node:
        node = self.cypress.by_id.get(table_id)
        if node is None or node.table is None:
            path = tx.table_paths.get(table_id, f"#{table_id}")
            raise YtError(
                f"Table {path} was removed before the transaction committed",
                code=500,
                attributes={"transaction_id": tx.id},
            )
        return node

    def write(self, tx: Transaction | None, apply: Any) -> None:
        """Run ``apply(tx)`` in ``tx``, or in an implicit transaction committed right away."""
        if tx is not None:
            tx.busy += 1
            try:
                with self.lock:
                    apply(tx)
            finally:
                tx.busy -= 1
            return
        implicit = self.implicit_transaction()
        with self.lock:
            apply(implicit)
            self.commit(implicit)

    # ----------------------------------------------------------------------------------------------------------
    # Sorted reads

    def lookup(self, node: Node, keys: list[dict[bytes, Any]], ts: int) -> Iterator[dict[bytes, Any] | None]:
        """Rows for ``keys`` at ``ts`` (``None`` for missing keys)."""
        table = node.table
        assert table is not None
        for key_row in keys:
            key = sorted_tables.key_of(table.schema, key_row)
            yield sorted_tables.lookup(self.storage, node.id, key, ts)


def _item_args(into: value_paths.IntoValue, *item: Any) -> tuple[Any, ...]:
    """The arguments of ``value_paths.set_item``/``remove_item`` for a path below a list or document node."""
    return (into.node.sys.get("value"), into.rest, *item, value_paths.display_root(into.node), into.full_path)


def _per_tablet_counts(name: str, values: Any, table: TableMeta, tablet_count: Any) -> list[int] | None:
    """``trimmed_row_counts`` / ``cumulative_data_weights`` of ``create``: one non-negative value per tablet, for
    ordered tables given with ``tablet_count`` (checks and messages of ``TTableNodeTypeHandler::DoCreate``)."""
    if not values:
        return None
    if table.schema.sorted:
        raise YtError(f'"{name}" can only be set for ordered tables')
    if tablet_count is None:
        raise YtError(f'"{name}" cannot be specified without "tablet_count"')
    counts = [int(v) for v in values]
    if len(counts) != int(tablet_count):
        raise YtError(f'"{name}" has invalid size: expected 0 or {int(tablet_count)}, got {len(counts)}')
    tablet_checks.check_nonnegative(name, counts)
    return counts


def _encoded_pivots(pivot_keys: list[Any]) -> list[bytes]:
    """Pivot keys of a sorted table's tablets in the stored key encoding (empty when they can not be encoded)."""
    from spyt_queue.local.schema import encode_key

    try:
        return [encode_key(list(pivot or [])) for pivot in pivot_keys]
    except Exception:  # a pivot of a type the encoding does not know: count the table as one tablet
        return []


_TRANSACTION_MAPS = ("transactions", "topmost_transactions")
_TRANSACTION_TYPES = (ids.TYPE_TRANSACTION, ids.TYPE_ATOMIC_TABLET_TRANSACTION, ids.TYPE_NESTED_TRANSACTION)


def _parse_guid(text: str) -> tuple[int, int, int, int]:
    """The four parts of an object id; ``Error parsing GUID`` as ``TGuid::FromString`` refuses a malformed one."""
    try:
        return ids.parse_id(text)
    except ValueError:
        raise YtError(f'Error parsing GUID "{text}"') from None


def _instant(seconds: float) -> str:
    """A ``TInstant`` as YSON writes it (ISO 8601, microseconds, ``Z``)."""
    import datetime as dt

    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _value_attributes(value: Any) -> dict[str, Any]:
    """The attributes a YSON value carries (``<a=1>{...}``), which ``set`` gives the node it creates; builtin
    read-only ones are refused."""
    from spyt_queue.local.cypress import READ_ONLY_ATTRIBUTES

    attributes = {str(k): v for k, v in (getattr(value, "attributes", None) or {}).items()}
    for name in attributes:
        if name in READ_ONLY_ATTRIBUTES:
            raise YtError(f'Builtin attribute "{name}" cannot be set')
    return attributes


def _plain(value: Any) -> Any:
    """A scalar node's value without the attributes of its top level."""
    return _strip(value) if getattr(value, "attributes", None) else value


def _strip(value: Any) -> Any:
    if isinstance(value, (bool, yson.YsonBoolean)):
        return bool(value)
    if isinstance(value, yson.YsonUint64):
        return yson.YsonUint64(int(value))
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def normalize_path(path: str) -> str:
    """A table path without trailing slashes (``//tmp/q/`` -> ``//tmp/q``)."""
    if len(path) > 2 and path.endswith("/"):
        return path.rstrip("/")
    return path
