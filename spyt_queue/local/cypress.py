"""The Cypress subset: a tree of map, scalar, document and table nodes with attributes, persisted in SQLite.

All methods run under the server's state lock (see :class:`spyt_queue.local.state.State`).
"""

from __future__ import annotations

import copy
import datetime as _dt
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import yt.yson as yson

from spyt_queue.local import expiration, ids, value_paths
from spyt_queue.local.errors import ALREADY_EXISTS, RESOLVE_ERROR, YtError, resolve_error
from spyt_queue.local.schema import TableSchema
from spyt_queue.local.ypath import join, split_path

SCALAR_TYPES = ("string_node", "int64_node", "uint64_node", "double_node", "boolean_node", "list_node", "document")
# Builtin attributes that ``set`` may not change.
READ_ONLY_ATTRIBUTES = {
    "id",
    "type",
    "path",
    "key",
    "parent_id",
    "user_attribute_keys",
    "user_attributes",
    "creation_time",
    "modification_time",
    "access_time",
    "schema",
    "dynamic",
    "sorted",
    "key_columns",
    "sorted_by",
    "tablet_state",
    "actual_tablet_state",
    "expected_tablet_state",
    "tablet_count",
    "tablets",
    "pivot_keys",
    "row_count",
    "chunk_row_count",
    "ref_counter",
    "owner",
    "count",
    "unmerged_row_count",
    "value",
    "attribute_revision",
}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class Tablet:
    """One tablet of a dynamic table (for ordered tables: a queue partition)."""

    index: int
    tablet_id: str
    state: str = "unmounted"
    total_row_count: int = 0
    trimmed_row_count: int = 0
    last_write_ts: int = 0
    cumulative_data_weight: int = 0
    # Cache of the last chunk: (first_row, row_count, data), None = unknown, () = no chunk.
    last_chunk: Any = None
    #: The tablet's flushed chunks as ``[chunk_id, first_row, row_count]`` (a flush at unmount/freeze, or the chunks
    #: of a static table made dynamic): which rows a conversion to static keeps, and ``@chunk_count``.
    chunks: list[list[Any]] = field(default_factory=list)


COMMIT_ORDERINGS = ("weak", "strong")


def parse_commit_ordering(value: Any) -> str:
    """A ``commit_ordering`` value (``ECommitOrdering``: ``weak`` or ``strong``), refused as YTsaurus's enum parser
    refuses an unknown one."""
    text = value.decode() if isinstance(value, bytes) else value
    if not isinstance(text, str) or text not in COMMIT_ORDERINGS:
        raise YtError(f'Error parsing ECommitOrdering value "{text}"')
    return str(text)


#: Attributes of a dynamic table that change only while every tablet is unmounted, and what they set
#: (test_mounted_table_attributes_update_validation, test_no_storage_change_for_mounted; the commit-ordering text
#: is YTsaurus's, the others paraphrase it).
#: Table attributes that ``TTableNodeProxy::SetBuiltinAttribute`` changes only outside a master transaction
#: (``ValidateNoTransaction``, before it looks at the table's kind); ``commit_ordering`` too, on ordered tables.
#: ``RemoveBuiltinAttribute`` validates the same for ``queue_agent_stage``.
SET_OUTSIDE_TRANSACTION = frozenset(
    {
        "atomicity",
        "enable_tablet_balancer",
        "disable_tablet_balancer",
        "min_tablet_size",
        "max_tablet_size",
        "desired_tablet_size",
        "desired_tablet_count",
        "enable_dynamic_store_read",
        "enable_consistent_chunk_replica_placement",
        "queue_agent_stage",
        "treat_as_queue_consumer",
        "vital_queue_consumer",
    }
)
REMOVE_OUTSIDE_TRANSACTION = frozenset({"queue_agent_stage"})


def check_outside_transaction(node: Node, attribute: list[str] | None, removing: bool) -> None:
    """Refuse a change of ``node``'s ``@attribute`` inside a master transaction where YTsaurus does (the caller
    knows the request names a master transaction)."""
    if node.table is None or attribute is None or len(attribute) != 1:
        return
    name = attribute[0]
    names = REMOVE_OUTSIDE_TRANSACTION if removing else SET_OUTSIDE_TRANSACTION
    if name in names or (not removing and name == "commit_ordering" and not node.table.schema.sorted):
        raise YtError("Operation cannot be performed in transaction")


FIXED_WHILE_MOUNTED = {
    "commit_ordering": "commit ordering mode",
    "atomicity": "atomicity mode",
    "in_memory_mode": "in-memory mode",
    "vital": "storage parameters",  # test_no_storage_change_for_mounted
    "replication_factor": "storage parameters",
    "media": "storage parameters",
}


#: The ``//sys`` attribute listing queues and consumers (opaque: ``get //sys/@`` shows an entity).
QUEUE_AGENT_OBJECT_REVISIONS = "queue_agent_object_revisions"


def check_consumer_flag(table: TableMeta | None) -> None:
    """``@treat_as_queue_consumer`` is an attribute of sorted dynamic tables only: on another table, setting it
    (at ``create`` too) is refused as ``TTableNodeProxy::SetBuiltinAttribute`` does."""
    if table is not None and not (table.dynamic and table.schema.sorted):
        raise YtError('Builtin attribute "treat_as_queue_consumer" cannot be set')


def check_tablet_cell_bundle(value: Any) -> None:
    """A tablet cell bundle must exist (``GetTabletCellBundleByNameOrThrow``); this server has only ``default``."""
    if value != "default":
        raise YtError(f'No such tablet cell bundle "{value}"', code=RESOLVE_ERROR)


@dataclass
class TableMeta:
    """Dynamic-table state of a ``table`` node."""

    schema: TableSchema
    dynamic: bool
    tablets: list[Tablet] = field(default_factory=list)
    pivot_keys: list[Any] = field(default_factory=list)
    #: A static table's chunks as ``[chunk_id, row_count]`` (``concatenate`` may list one chunk twice); its rows are
    #: stored as tablet 0 of the table (``static_tablet``).
    chunks: list[list[Any]] = field(default_factory=list)
    static_tablet: Tablet | None = None

    def live_chunk_count(self) -> int:
        """Chunks a dynamic ordered table still references (fully trimmed ones are dropped), or a static table's."""
        if not self.dynamic:
            return len(self.chunks)
        return sum(1 for t in self.tablets for _, first, count in t.chunks if first + count > t.trimmed_row_count)

    @property
    def ordered(self) -> bool:
        """Ordered (queue) tables have no key columns."""
        return not self.schema.sorted

    def tablet_state(self) -> str:
        """The aggregate ``@tablet_state``: the common state, or ``mixed``."""
        states = {t.state for t in self.tablets}
        if not states:
            return "unmounted"
        return states.pop() if len(states) == 1 else "mixed"


@dataclass
class Node:
    """A Cypress node."""

    path: str
    id: str
    type: str
    attrs: dict[str, Any] = field(default_factory=dict)
    sys: dict[str, Any] = field(default_factory=dict)
    children: dict[str, Node] = field(default_factory=dict)
    table: TableMeta | None = None

    @property
    def key(self) -> str:
        """The node's name in its parent."""
        return self.path.rsplit("/", 1)[-1] if self.path not in ("/", "") else ""


class Cypress:
    """The node tree; mutations persist through the write connection passed in."""

    def __init__(self, id_generator: ids.IdGenerator) -> None:
        self._ids = id_generator
        self.root = Node(
            "/",
            ids.format_id(0, ids.NODE_TYPE_CODES["map_node"], 0),
            "map_node",
            sys={"creation_time": _now(), "modification_time": _now()},
        )
        self.by_id: dict[str, Node] = {self.root.id: self.root}
        #: The last ``@revision`` given: every persisted change of a node (its value, attributes or, for a map
        #: node, its children) gives it the next one, as a master mutation gives the nodes it changes its revision.
        self.revision = 0

    # ----------------------------------------------------------------------------------------------------------
    # Persistence

    def load(self, rows: list[tuple[str, str, str, bytes, bytes]]) -> None:
        """Rebuild the tree from stored rows (parents first)."""
        for path, node_id, node_type, sys_blob, attrs_blob in rows:
            sys_data = yson.loads(sys_blob)
            attrs = yson.loads(attrs_blob)
            self.revision = max(self.revision, int(sys_data.get("revision", 0)))
            if path == "/":
                self.root.sys = dict(sys_data)
                self.root.attrs = dict(attrs)
                continue
            components, _ = split_path(path)
            parent = self._walk(components[:-1], path)
            node = Node(path, node_id, node_type, dict(attrs), dict(sys_data))
            if node_type == "table":
                table_sys = sys_data["table"]
                node.table = TableMeta(
                    TableSchema.from_storage(table_sys["schema"]),
                    bool(table_sys["dynamic"]),
                    pivot_keys=list(table_sys.get("pivot_keys") or []),
                    chunks=[list(c) for c in table_sys.get("chunks") or []],
                )
            parent.children[components[-1]] = node
            self.by_id[node_id] = node

    def persist(self, conn: sqlite3.Connection, node: Node) -> None:
        """Write one node (and its table metadata) through ``conn``; the node gets the next ``@revision``."""
        self.revision += 1
        node.sys["revision"] = self.revision
        node.sys.setdefault("attribute_revision", self.revision)  # the creation's, until an attribute changes
        sys_data = dict(node.sys)
        if node.table is not None:
            sys_data["table"] = {
                "schema": node.table.schema.to_storage(),
                "dynamic": node.table.dynamic,
                "pivot_keys": node.table.pivot_keys,
                "chunks": node.table.chunks,
                "tablet_chunks": {str(t.index): t.chunks for t in node.table.tablets},
            }
        conn.execute(
            "INSERT OR REPLACE INTO nodes (path, id, type, sys, attrs) VALUES (?, ?, ?, ?, ?)",
            (node.path, node.id, node.type, yson.dumps(sys_data), yson.dumps(node.attrs)),
        )

    def persist_subtree(self, conn: sqlite3.Connection, node: Node) -> None:
        """Write a node and all its descendants."""
        self.persist(conn, node)
        for child in node.children.values():
            self.persist_subtree(conn, child)

    # ----------------------------------------------------------------------------------------------------------
    # Resolution

    def _walk(self, components: list[str], full_path: str, follow_last: bool = True, depth: int = 0) -> Node:
        """The node at ``components``; links are followed, the last one only with ``follow_last`` and without a
        trailing ``&`` (as Cypress does: ``//tmp/link&`` is the link node itself)."""
        node = self.root
        if components and components[0].startswith("#"):
            object_id = components[0][1:]
            suppress = object_id.endswith("&")
            object_id = object_id.rstrip("&")
            node = self.by_id.get(object_id)
            if node is None:
                raise resolve_error(full_path, f"No such object {object_id}")
            components = components[1:]
            if node.type == "link" and not suppress and (components or follow_last):
                node = self._follow(node, full_path, depth)
        if components and components[-1].endswith("&"):
            components = [*components[:-1], components[-1][:-1]]
            follow_last = False
        for index, name in enumerate(components):
            # ``&`` suppresses the redirection of a link; on any other node it means nothing.
            suppress = index < len(components) - 1 and name.endswith("&")
            name = name[:-1] if suppress else name
            if node.type == "map_node":
                child = node.children.get(name)
                if child is None:
                    raise resolve_error(full_path, f'Node {self._display(node)} has no child with key "{name}"')
                node = child
                if node.type == "link" and not suppress and (follow_last or index < len(components) - 1):
                    node = self._follow(node, full_path, depth)
            elif node.type in ("list_node", "document"):
                raise value_paths.IntoValue(node, [c.rstrip("&") for c in components[index:]], full_path)
            else:
                rest = "/".join(components[index:])
                raise resolve_error(full_path, f'Node {self._display(node)} cannot have children (unexpected "{rest}")')
        return node

    def link_passes_through(self, target_path: str, forbidden: str, depth: int = 0) -> bool:
        """Whether resolving ``target_path`` (following links) passes through ``forbidden``, the path a new link
        is to take: such a link is cyclic (``checkAcyclicity`` of ``cypress_server/helpers.cpp``)."""
        components, _ = split_path(target_path)
        node = self.root
        for index, raw in enumerate(components):
            name = raw.rstrip("&")
            child = node.children.get(name) if node.type == "map_node" else None
            if child is None:
                prefix = "//" if node is self.root else node.path + "/"
                return prefix + "/".join(components[index:]) == forbidden
            if child.path == forbidden:
                return True
            if child.type == "link" and not raw.endswith("&"):
                if depth >= 32:
                    return True
                rest = components[index + 1 :]
                target = str(child.sys.get("target_path", ""))
                return self.link_passes_through(target + ("/" + "/".join(rest) if rest else ""), forbidden, depth + 1)
            node = child
        return (node.path if node is not self.root else "/") == forbidden

    def canonical_path(self, path: str) -> str:
        """``path`` with its parent resolved (links followed): where a node created at ``path`` would be."""
        components, _ = split_path(path)
        if not components:
            return "/"
        name = components[-1].rstrip("&")
        try:
            parent = self._walk(components[:-1], path)
        except YtError:
            return join([c.rstrip("&") for c in components[:-1]] + [name])
        return ("//" if parent is self.root else parent.path + "/") + name

    def _follow(self, link: Node, full_path: str, depth: int) -> Node:
        """The target of a symbolic link (links to links are followed; a cycle or a dangling link is an error)."""
        if depth >= 32:
            raise YtError(f"Too many levels of symbolic links while resolving {full_path}", code=RESOLVE_ERROR)
        target = str(link.sys.get("target_path", ""))
        components, _ = split_path(target)
        try:
            return self._walk(components, target, True, depth + 1)
        except YtError as exc:
            if exc.contains_code(RESOLVE_ERROR):
                raise resolve_error(full_path, f"Link {link.path} points to a missing object {target}") from None
            raise

    @staticmethod
    def _display(node: Node) -> str:
        return node.path if node.path != "/" else "/"

    def resolve(self, path: str, follow_last: bool = True) -> Node:
        """The node at ``path`` (attribute suffix ignored); resolve error 500 if absent. Symbolic links are
        followed (the last one only with ``follow_last``)."""
        components, attribute = split_path(path)
        return self._walk(components, path, follow_last or attribute is not None)

    def value_target(self, path: str) -> value_paths.IntoValue | None:
        """Where ``path`` goes below a list or document node: the node and the rest of the path (``None`` when
        it names a node, or does not resolve)."""
        components, _ = split_path(path)
        try:
            self._walk(components, path)
        except value_paths.IntoValue as into:
            return into
        except YtError:
            return None
        return None

    def find(self, path: str) -> Node | None:
        """The node at ``path`` or ``None``."""
        try:
            return self.resolve(path)
        except YtError as exc:
            if exc.contains_code(RESOLVE_ERROR):
                return None
            raise

    def resolve_table(self, path: str) -> Node:
        """A table node at ``path``; error if the node is not a table."""
        node = self.resolve(path)
        if node.table is None:
            raise YtError(
                f"Node {node.path} is not a table (it has type {node.type!r})", attributes={"path": node.path}
            )
        return node

    # ----------------------------------------------------------------------------------------------------------
    # Attributes

    def builtin_attributes(self, node: Node) -> dict[str, Any]:
        """System attributes of a node as the local server models them."""
        result: dict[str, Any] = {
            "id": node.id,
            "type": node.type,
            "path": node.path,
            "key": node.key,
            "owner": "root",
            "creation_time": node.sys.get("creation_time"),
            "modification_time": node.sys.get("modification_time"),
            "access_time": node.sys.get("modification_time"),
            "ref_counter": 1,
            "account": "tmp",
            "acl": [],
            "inherit_acl": True,
            "revision": yson.YsonUint64(int(node.sys.get("revision", 0))),
            "attribute_revision": yson.YsonUint64(int(node.sys.get("attribute_revision", node.sys.get("revision", 0)))),
            "user_attribute_keys": list(node.attrs),
            "user_attributes": copy.deepcopy(node.attrs),
        }
        if node is not self.root:
            parent = self.find(node.path.rsplit("/", 1)[0] or "/") if node.path.count("/") > 2 else self.root
            if parent is not None:
                result["parent_id"] = parent.id
        if node.type == "link":
            result["target_path"] = node.sys.get("target_path")
            try:
                self.resolve(str(node.sys.get("target_path", "")))
                result["broken"] = False
            except YtError:
                result["broken"] = True
        if node.type == "map_node":
            result["count"] = len(node.children)
        table = node.table
        if table is not None:
            schema = table.schema
            result.update(
                {
                    "dynamic": table.dynamic,
                    "schema": schema.to_yson(),
                    "schema_mode": "strong",
                    "sorted": schema.sorted,
                    "key_columns": schema.key_names,
                    "optimize_for": "lookup",
                    "compression_codec": "lz4",
                    "erasure_codec": "none",
                    "replication_factor": 1,
                    "treat_as_queue_producer": False,
                    "chunk_count": table.live_chunk_count(),
                    "chunk_row_count": sum(int(c[1]) for c in table.chunks) if not table.dynamic else 0,
                    "row_count": sum(int(c[1]) for c in table.chunks) if not table.dynamic else 0,
                    "resource_usage": {"chunk_count": table.live_chunk_count(), "node_count": 1, "disk_space": 0},
                    "data_weight": 0,
                    "uncompressed_data_size": 0,
                    "compressed_data_size": 0,
                    "unique_keys": schema.unique_keys,
                }
            )
            if schema.sorted:
                result["sorted_by"] = schema.key_names
            if table.dynamic:
                state = table.tablet_state()
                result.update(
                    {
                        "tablet_state": state,
                        "actual_tablet_state": state,
                        "expected_tablet_state": state,
                        "tablet_count": len(table.tablets),
                        "tablet_count_by_state": _count_by_state(table),
                        "tablet_cell_bundle": "default",
                        # GetEffectiveQueueAgentStage: //sys/@config's default_queue_agent_stage, "production"
                        "queue_agent_stage": "production",
                        "atomicity": "full",
                        "in_memory_mode": "none",
                        "enable_dynamic_store_read": True,
                        "tablets": [self._tablet_info(table, t) for t in table.tablets],
                    }
                )
                if schema.sorted:
                    result["pivot_keys"] = table.pivot_keys or [[]]
                    result["treat_as_queue_consumer"] = False  # of sorted dynamic tables only (table_node_proxy.cpp)
                else:
                    result["commit_ordering"] = "weak"  # an attribute of ordered tables only (test_no_commit_ordering)
                    rows = sum(t.total_row_count - t.trimmed_row_count for t in table.tablets)
                    result["chunk_row_count"] = rows
                    result["row_count"] = rows
        elif node.type in SCALAR_TYPES:
            if node.type == "document":
                result["value"] = node.sys.get("value")
            if node.type == "list_node":
                result["count"] = len(node.sys.get("value") or [])
        return result

    @staticmethod
    def _tablet_info(table: TableMeta, tablet: Tablet) -> dict[str, Any]:
        info: dict[str, Any] = {
            "index": tablet.index,
            "tablet_id": tablet.tablet_id,
            "state": tablet.state,
            "cell_id": ids.format_id(1, 700, 0),
            "statistics": {"uncompressed_data_size": 0},
        }
        if table.ordered:
            info.update({"trimmed_row_count": tablet.trimmed_row_count, "flushed_row_count": tablet.total_row_count})
        elif table.pivot_keys:
            info["pivot_key"] = table.pivot_keys[tablet.index] if tablet.index < len(table.pivot_keys) else []
        return info

    def attributes(self, node: Node) -> dict[str, Any]:
        """All attributes: builtin ones overridden by user-set ones."""
        result = self.builtin_attributes(node)
        if node.path == "//sys":
            result[QUEUE_AGENT_OBJECT_REVISIONS] = yson.YsonEntity()  # opaque: computed when asked for by name
            result["current_commit_revision"] = yson.YsonUint64(self.revision)  # the last change's revision
        for name in _queue_agent_attributes(node):
            result[name] = yson.YsonEntity()  # opaque: served by a queue agent
        result.update(node.attrs)
        return result

    def queue_agent_object_revisions(self) -> dict[str, dict[str, Any]]:
        """``//sys/@queue_agent_object_revisions``: every queue (ordered dynamic table) and consumer (sorted
        dynamic table with ``@treat_as_queue_consumer``) by path, with its ``@attribute_revision``, as
        ``TTableManager::GetQueueAgentObjectRevisionsAsync`` lists them for the Cypress synchronizer."""
        result: dict[str, dict[str, Any]] = {"queues": {}, "consumers": {}}
        for node in self.by_id.values():
            table = node.table
            if table is None or not table.dynamic:
                continue
            revision = self.builtin_attributes(node)["attribute_revision"]
            if not table.schema.sorted:
                result["queues"][node.path] = revision
            elif bool(node.attrs.get("treat_as_queue_consumer", False)):
                result["consumers"][node.path] = revision
        return result

    def get_attribute(self, node: Node, attribute: list[str], full_path: str) -> Any:
        """Value at ``@attribute[/sub/...]``."""
        if not attribute:
            return self.attributes(node)
        name = attribute[0]
        attrs = self.attributes(node)
        if name not in attrs:
            raise resolve_error(full_path, f'Attribute "{name}" is not found')
        value = attrs[name]
        if node.path == "//sys" and name == QUEUE_AGENT_OBJECT_REVISIONS and name not in node.attrs:
            value = self.queue_agent_object_revisions()
        if name in _queue_agent_attributes(node) and name not in node.attrs:
            # GetQueueAgentAttributeAsync: no queue agent serves any stage here.
            raise YtError(f'Queue agent stage "{attrs.get("queue_agent_stage", "production")}" is not found')
        for key in attribute[1:]:
            if isinstance(value, dict) and key in value:
                value = value[key]
            elif isinstance(value, list) and key.lstrip("-").isdigit() and -len(value) <= int(key) < len(value):
                value = value[int(key)]
            else:
                raise resolve_error(full_path, f'Node /{"/".join(attribute)} has no child with key "{key}"')
        return value

    # ----------------------------------------------------------------------------------------------------------
    # Reads

    def get(self, path: str, attributes: list[str] | None = None) -> Any:
        """The ``get`` command value."""
        components, attribute = split_path(path)
        try:
            node = self._walk(components, path)
        except value_paths.IntoValue as into:
            if attribute is not None:
                raise value_paths.refuse_attributes(into.node.path, into.rest) from None
            return value_paths.get(into.node.sys.get("value"), into.rest, value_paths.display_root(into.node), path)
        if attribute == [] and attributes is not None:  # get(path/@, attributes=[...]): only those
            available = self.attributes(node)
            return {name: available[name] for name in attributes if name in available}
        if attribute is not None:
            return self.get_attribute(node, attribute, path)
        return self._value(node, attributes, depth=0)

    def _value(self, node: Node, attributes: list[str] | None, depth: int) -> Any:
        if node.type == "map_node":
            value: Any = {name: self._value(child, attributes, depth + 1) for name, child in node.children.items()}
        elif node.type in SCALAR_TYPES:
            value = copy.deepcopy(node.sys.get("value"))
        else:
            value = yson.YsonEntity()
        if attributes:
            available = self.attributes(node)
            selected = {name: available[name] for name in attributes if name in available}
            if selected:
                value = yson.to_yson_type(value, attributes=selected)
        return value

    def list(self, path: str, attributes: list[str] | None = None) -> Any:
        """The ``list`` command value."""
        components, attribute = split_path(path)
        node = self._walk(components, path)
        if attribute is not None:
            value = self.get_attribute(node, attribute, path)
            if not isinstance(value, dict):
                raise YtError(f"Attribute {path} cannot be listed: it is not a map")
            return list(value)
        if node.type != "map_node":
            raise YtError(f"Node {node.path} of type {node.type!r} cannot be listed")
        result = []
        for name, child in node.children.items():
            item: Any = name
            if attributes:
                available = self.attributes(child)
                selected = {a: available[a] for a in attributes if a in available}
                if selected:
                    item = yson.to_yson_type(name, attributes=selected)
            result.append(item)
        return result

    def exists(self, path: str) -> bool:
        """The ``exists`` command value."""
        into = self.value_target(path)
        if into is not None:
            if split_path(path)[1] is not None:
                raise value_paths.refuse_attributes(into.node.path, into.rest)
            return value_paths.exists(into.node.sys.get("value"), into.rest)
        try:
            attribute = split_path(path)[1]
            if attribute is not None and len(attribute) == 1:
                node = self.resolve(path)
                if attribute[0] in _queue_agent_attributes(node) and attribute[0] not in node.attrs:
                    return True  # present; a queue agent would serve its value
            self.get(path) if "/@" in path else self.resolve(path)
        except YtError as exc:
            if exc.contains_code(RESOLVE_ERROR):
                return False
            raise
        return True

    # ----------------------------------------------------------------------------------------------------------
    # Mutations

    def create(
        self,
        conn: sqlite3.Connection,
        node_type: str,
        path: str,
        *,
        recursive: bool,
        ignore_existing: bool,
        force: bool,
        attributes: dict[str, Any],
        table: TableMeta | None = None,
        value: Any = None,
    ) -> tuple[Node, bool]:
        """Create a node; returns ``(node, created)``. ``table`` carries table metadata for tables."""
        if expiration.ATTRIBUTE in attributes:
            expiration.check(attributes[expiration.ATTRIBUTE], is_root=False)
        components, attribute = split_path(path)
        if attribute is not None:
            raise YtError('Expected "literal" in YPath but found "at" token "@"', attributes={"path": path})
        if not components or components[0].startswith("#"):
            raise YtError(f"Cannot create a node at {path}")
        components = [c[:-1] if c.endswith("&") else c for c in components]  # ``&`` means nothing on map nodes
        parent = self._ensure_parent(conn, components, path, recursive)
        name = components[-1]
        existing = parent.children.get(name)
        if existing is not None:
            if ignore_existing and existing.type == node_type:
                return existing, False
            if ignore_existing:
                raise YtError(
                    f'{existing.path} already exists and has type "{existing.type}" while node of '
                    f'"{node_type}" type is about to be created',
                    code=ALREADY_EXISTS,
                )
            if not force:
                raise YtError(
                    f"Node {existing.path} already exists", code=ALREADY_EXISTS, attributes={"path": existing.path}
                )
            self.remove_node(conn, existing)
        type_code = ids.NODE_TYPE_CODES.get(node_type, ids.TYPE_TABLE)
        node = Node(
            join(components),
            self._ids.generate(type_code),
            node_type,
            dict(attributes),
            {"creation_time": _now(), "modification_time": _now()},
            table=table,
        )
        if value is not None:
            node.sys["value"] = value
        parent.children[name] = node
        self.by_id[node.id] = node
        self.persist(conn, node)
        self.persist(conn, parent)
        return node, True

    def _ensure_parent(self, conn: sqlite3.Connection, components: list[str], path: str, recursive: bool) -> Node:
        node = self.root
        for index, name in enumerate(components[:-1]):
            if node.type != "map_node":
                raise resolve_error(path, f"Node {self._display(node)} cannot have children")
            child = node.children.get(name)
            if child is None:
                if not recursive:
                    raise resolve_error(path, f'Node {self._display(node)} has no child with key "{name}"')
                child = Node(
                    join(components[: index + 1]),
                    self._ids.generate(ids.NODE_TYPE_CODES["map_node"]),
                    "map_node",
                    sys={"creation_time": _now(), "modification_time": _now()},
                )
                node.children[name] = child
                self.by_id[child.id] = child
                self.persist(conn, child)
            node = child
        if node.type != "map_node":
            raise resolve_error(path, f"Node {self._display(node)} cannot have children")
        return node

    def remove_node(self, conn: sqlite3.Connection, node: Node) -> list[Node]:
        """Detach a node and its subtree; returns removed table nodes (their data is dropped by the caller)."""
        if node is self.root:
            raise YtError("Node / cannot be removed")
        components, _ = split_path(node.path)
        parent = self._walk(components[:-1], node.path)
        parent.children.pop(components[-1], None)
        self.persist(conn, parent)
        removed_tables: list[Node] = []
        stack = [node]
        while stack:
            current = stack.pop()
            self.by_id.pop(current.id, None)
            if current.table is not None:
                removed_tables.append(current)
            stack.extend(current.children.values())
        conn.execute(
            "DELETE FROM nodes WHERE path = ? OR path LIKE ? ESCAPE '\\'", (node.path, _like_prefix(node.path))
        )
        return removed_tables

    def store_value(self, conn: sqlite3.Connection, node: Node, value: Any) -> None:
        """Store a list or document node's new value (after a change below it)."""
        node.sys["value"] = value
        node.sys["modification_time"] = _now()
        self.persist(conn, node)

    def set_attribute(
        self, conn: sqlite3.Connection, node: Node, attribute: list[str], value: Any, full_path: str
    ) -> None:
        """``set //node/@name[/sub]``."""
        if node.type == "document" and attribute and attribute[0] == "value":  # a document's value, or inside it
            inner = attribute[1:]
            current = node.sys.get("value")
            new = value if not inner else value_paths.set_item(current, inner, value, "", full_path)
            self.store_value(conn, node, new)
            return
        if not attribute:
            if not isinstance(value, dict):
                raise YtError("Attributes can only be set from a map")
            for name in value:
                if name in READ_ONLY_ATTRIBUTES:
                    raise YtError(f'Builtin attribute "{name}" cannot be set')
            if expiration.ATTRIBUTE in value:
                expiration.check(value[expiration.ATTRIBUTE], is_root=node is self.root)
            node.attrs = dict(value)
        else:
            name = attribute[0]
            if name in READ_ONLY_ATTRIBUTES:
                raise YtError(f'Builtin attribute "{name}" cannot be set', attributes={"path": full_path})
            if len(attribute) == 1:
                if name == "tablet_cell_bundle":
                    check_tablet_cell_bundle(value)
                if name == "treat_as_queue_consumer":
                    check_consumer_flag(node.table)
                if name == expiration.ATTRIBUTE:
                    expiration.check(value, is_root=node is self.root)
                if name in FIXED_WHILE_MOUNTED and node.table is not None and node.table.dynamic:
                    if name == "commit_ordering":
                        value = parse_commit_ordering(value)
                    if any(t.state != "unmounted" for t in node.table.tablets):  # TTableNodeProxy::SetBuiltinAttribute
                        raise YtError(
                            f"Cannot change table {FIXED_WHILE_MOUNTED[name]} since not all tablets are unmounted"
                        )
                node.attrs[name] = value
            else:
                if name not in node.attrs:
                    raise resolve_error(full_path, f'Attribute "{name}" is not found')
                target = node.attrs[name]
                for key in attribute[1:-1]:
                    if not isinstance(target, dict) or key not in target:
                        raise resolve_error(full_path, f'Node has no child with key "{key}"')
                    target = target[key]
                if not isinstance(target, dict):
                    raise YtError(f"Cannot set {full_path}: the parent is not a map")
                target[attribute[-1]] = value
        node.sys["modification_time"] = _now()
        node.sys["attribute_revision"] = self.revision + 1  # persist gives the node this revision
        self.persist(conn, node)

    def remove_attribute(
        self, conn: sqlite3.Connection, node: Node, attribute: list[str], full_path: str, force: bool
    ) -> None:
        """``remove //node/@name`` and ``remove //node/@name/key/...`` (a key of a map, an item of a list, inside a
        user attribute's value)."""
        name = attribute[0] if attribute else ""
        if node.type == "document" and name == "value" and len(attribute) > 1:  # inside a document's value
            value = value_paths.remove_item(node.sys.get("value"), attribute[1:], "", full_path, force)
            self.store_value(conn, node, value)
            return
        if attribute == ["*"]:  # remove(path/@*): every user attribute
            node.attrs = {}
            node.sys["modification_time"] = _now()
            node.sys["attribute_revision"] = self.revision + 1
            self.persist(conn, node)
            return
        if name in READ_ONLY_ATTRIBUTES:
            raise YtError(f'Attribute "{name}" cannot be removed', attributes={"path": full_path})
        if not attribute or name not in node.attrs:
            if force:
                return
            raise resolve_error(full_path, f'Attribute "{name}" is not found')
        if len(attribute) == 1:
            del node.attrs[name]
        else:
            parent = node.attrs[name]
            for key in attribute[1:-1]:
                parent = _child(parent, key)
                if parent is None:
                    break
            last = attribute[-1]
            index = _child_index(parent, last)
            if index is None:
                if force:
                    return
                raise resolve_error(full_path, f'Node /{"/".join(attribute[:-1])} has no child with key "{last}"')
            del parent[index]
        node.sys["modification_time"] = _now()
        node.sys["attribute_revision"] = self.revision + 1
        self.persist(conn, node)


def _queue_agent_attributes(node: Node) -> tuple[str, ...]:
    """The attributes a queue agent serves for ``node`` (a queue, consumer or producer), none for other nodes."""
    table = node.table
    if table is None or not table.dynamic:
        return ()
    if not table.schema.sorted:
        return ("queue_status", "queue_partitions")
    if bool(node.attrs.get("treat_as_queue_consumer", False)):
        return ("queue_consumer_status", "queue_consumer_partitions")
    if bool(node.attrs.get("treat_as_queue_producer", False)):
        return ("queue_producer_status", "queue_producer_partitions")
    return ()


def _child(value: Any, key: str) -> Any:
    """The child ``key`` of a map or list inside an attribute's value, ``None`` when there is none."""
    index = _child_index(value, key)
    return None if index is None else value[index]


def _child_index(value: Any, key: str) -> Any:
    """The index of child ``key`` in a map (the key) or list (an integer, negative from the end), else ``None``."""
    if isinstance(value, dict):
        return key if key in value else None
    if isinstance(value, list) and key.lstrip("-").isdigit() and -len(value) <= int(key) < len(value):
        return int(key)
    return None


def _like_prefix(path: str) -> str:
    escaped = path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.rstrip("/") + "/%"


def node_type_for_value(value: Any) -> str:
    """The scalar node type ``set`` creates for a value."""
    if value is None or isinstance(value, yson.YsonEntity):
        raise YtError("Entity nodes cannot be created")
    if isinstance(value, (bool, yson.YsonBoolean)):
        return "boolean_node"
    if isinstance(value, yson.YsonUint64):
        return "uint64_node"
    if isinstance(value, int):
        return "int64_node"
    if isinstance(value, float):
        return "double_node"
    if isinstance(value, (str, bytes)):
        return "string_node"
    if isinstance(value, list):
        return "list_node"
    if isinstance(value, dict):
        return "map_node"
    raise YtError(f"Cannot set a value of type {type(value).__name__}")


#: ``ETabletState`` values a tablet may be in (``@tablet_count_by_state`` lists every one).
TABLET_STATES = (
    "mounting",
    "mounted",
    "unmounting",
    "unmounted",
    "freezing",
    "frozen",
    "unfreezing",
    "frozen_mounting",
)


def _count_by_state(table: TableMeta) -> dict[str, int]:
    counts = dict.fromkeys(TABLET_STATES, 0)
    for tablet in table.tablets:
        counts[tablet.state] = counts.get(tablet.state, 0) + 1
    return counts
