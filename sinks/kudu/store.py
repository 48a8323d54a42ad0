"""Committed positions in an Apache Kudu table, through the Java client over JPype (extra ``spyt-queue[kudu]``).

URI (the ``offsets.store`` option)::

    kudu://master1:7051[,master2:7051]/<table>[?keep=100&create=true&buckets=2]

Kudu has no compare-and-set on a row's value and no atomic multi-row write outside experimental transactions, so
the store is an **insert-only log of commits**, fenced by Kudu's put-if-absent ``INSERT``:

* **Rows.** Primary key ``(group_id STRING, source STRING, generation INT64)``; value columns ``positions``
  (STRING, JSON ``{"version": 1, "generation": n, "positions": {"0": 120, "1": 98}}``: every partition's next
  offset, including partitions the commit did not move) and ``updated`` (UNIXTIME_MICROS, when it was written).
  One row holds every partition, so a commit is one single-row write: never half-applied across partitions.
* **Fence.** An advance reads the newest generation ``n`` of its (group, source) (one scan on the two leading key
  columns), compares every partition of ``new`` with ``old``, and ``INSERT`` s generation ``n + 1``. Two writers
  that read the same ``n`` both insert ``n + 1``; Kudu accepts exactly one and answers the other
  ``AlreadyPresent``, which raises :class:`~spyt_queue.errors.ConsumerConflictError` (nothing of it was written).
* **Head check.** Old generations are pruned (below), so a writer stale by more than ``keep`` generations could
  insert a generation that was pruned. After its insert the writer therefore checks that no higher generation
  exists; if one does, its row is not the head (readers take the highest generation, so it was never in force):
  it deletes its row and raises ``ConsumerConflictError``. The head itself is never pruned.
* **Retention.** Every 16 commits, the writer deletes all but the newest ``keep`` generations (default 100;
  0 = keep all). History stays readable (:meth:`KuduStore.history`).
* **Table.** Created on the first advance if missing (``create=false``: a missing table is an error naming it),
  hash-partitioned on ``(group_id, source)`` into ``buckets`` tablets (default 2), with the cluster's default
  replication (the master's ``--default_num_replicas``). Reads of a missing table see no positions.
* Timeouts, unavailable servers and network errors are transient (the committer retries and recognises an advance
  whose reply was lost). A row whose ``positions`` is not a commit raises
  :class:`~spyt_queue.errors.SpytQueueError` naming the table and the row.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import unquote

from spyt_queue.errors import ConsumerConflictError, OptionError, SpytQueueError, UnreachableError
from spyt_queue.redaction import shown
from spyt_queue.sinks.kudu.client import ColumnSpec, KuduWriteError, get_client
from spyt_queue.sinks.kudu.mutations import Mutation
from spyt_queue.stores.commit_log import FORMAT_VERSION, CommitLogStore, refuse_credentials, uri_flag
from spyt_queue.stores.registry import OPTION

__all__ = ["KuduStore", "from_uri", "parse_uri"]

SCHEME = "kudu"
DEFAULT_PORT = 7051
DEFAULT_KEEP = 100
DEFAULT_BUCKETS = 2
COLUMNS = ("group_id", "source", "generation", "positions", "updated")
#: Why the store takes no ``offsets.store.user``/``offsets.store.password`` (nor ``user:password@`` in the URI).
NO_CREDENTIALS = (
    "Kudu authenticates clients with Kerberos, not a password: run kinit (or give the process a keytab) before "
    "starting Spark"
)


class KuduStore(CommitLogStore):
    """Committed positions of ``source`` for ``group`` in Kudu table ``table`` on ``masters`` (see the module
    docstring for the layout and the fence). The client connects on first use."""

    NUMBER: ClassVar[str] = "generation"

    _LIVE: ClassVar[dict[str, Any]] = {"_table": None}  # the open connection: reopened after unpickling

    def __init__(
        self,
        masters: str,
        table: str,
        source: str,
        group: str | None = None,
        *,
        keep: int = DEFAULT_KEEP,
        create: bool = True,
        buckets: int = DEFAULT_BUCKETS,
        jars: str | None = None,
    ) -> None:
        self.masters, self.table_name = masters, table
        self.source, self.group = source, group or ""
        self.keep, self.create, self.buckets, self.jars = int(keep), create, int(buckets), jars
        super().__init__()

    def describe(self) -> str:
        """``kudu://masters/table`` and the (group, source) of this store."""
        return f"{SCHEME}://{self.masters}/{self.table_name} (group {self.group!r}, source {self.source!r})"

    # ------------------------------------------------------------------------------------------ client

    def _open(self, create: bool) -> Any:
        """The table (created when missing and ``create``), or None when it is missing."""
        with self._lock:
            if self._table is not None:
                return self._table
            client = get_client(self.masters, jars=self.jars)
            if not client.table_exists(self.table_name):
                if not create:
                    return None
                if not self.create:
                    raise SpytQueueError(
                        f"{self.describe()}: table {self.table_name!r} does not exist and the URI says create=false"
                    )
                client.create_table(
                    self.table_name,
                    [
                        ColumnSpec("group_id", "string", key=True),
                        ColumnSpec("source", "string", key=True),
                        ColumnSpec("generation", "int64", key=True),
                        ColumnSpec("positions", "string", nullable=True),
                        ColumnSpec("updated", "unixtime_micros", nullable=True),
                    ],
                    hash_columns=["group_id", "source"],
                    hash_buckets=self.buckets,
                    ignore_existing=True,
                )
            table = client.table(self.table_name)
            missing = [c for c in COLUMNS if c not in table.by_name]
            if missing:
                raise SpytQueueError(f"{self.describe()}: table {self.table_name!r} has no column(s) {missing}")
            self._table = table
            return table

    def start_client(self) -> None:
        """Start the JVM and the process's Kudu client for the masters (the client connects on its first call)."""
        get_client(self.masters, jars=self.jars)

    def close(self) -> None:
        """Forget the table handle (the process-wide client stays open for other users)."""
        with self._lock:
            self._table = None

    def is_transient(self, error: BaseException) -> bool:
        """Timeouts, unavailable servers and network errors (the client marks them) are worth retrying."""
        if isinstance(error, ConsumerConflictError):
            return False
        return isinstance(error, UnreachableError) or bool(getattr(error, "transient", False))

    # ------------------------------------------------------------------------------------------- reads

    def _parse(self, row: Mapping[str, Any]) -> dict[str, int]:
        return self._parse_document(row)["positions"]

    def _parse_document(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON document of one commit row; its ``positions`` hold checked integer offsets."""
        where = f"table {self.table_name!r}, row (group_id={self.group!r}, source={self.source!r}, " + (
            f"generation={row['generation']})"
        )
        try:
            doc = json.loads(row["positions"] or "")
            positions = doc["positions"]
            if not isinstance(doc, dict) or doc.get("version") != FORMAT_VERSION or not isinstance(positions, dict):
                raise ValueError("not a commit document")
            out = {str(k): int(v) for k, v in positions.items()}
            if any(isinstance(v, bool) or not isinstance(v, int) for v in positions.values()):
                raise ValueError("positions are not integers")
            return {**doc, "positions": out}
        except (ValueError, TypeError, KeyError, AttributeError):
            raise SpytQueueError(
                f"{self.describe()}: {where} is not a commit of positions: {str(row['positions'])[:80]!r}"
            ) from None

    def _rows(self, table: Any, at_least: int | None = None) -> list[dict[str, Any]]:
        return table.scan(
            equal={"group_id": self.group, "source": self.source},
            at_least={"generation": at_least} if at_least is not None else None,
            columns=["generation", "positions"],
        )

    def newest(self) -> tuple[int, dict[str, int]]:
        """``(generation, positions)`` of the newest commit; ``(0, {})`` before the first one."""
        generation, doc = self.newest_document()
        return generation, doc.get("positions", {})

    def newest_document(self) -> tuple[int, dict[str, Any]]:
        """``(generation, document)`` of the newest commit; ``(0, {})`` before the first one."""
        table = self._open(create=False)
        if table is None:
            return 0, {}
        rows = self._rows(table)
        if not rows:
            return 0, {}
        head = max(rows, key=lambda r: r["generation"])
        return int(head["generation"]), self._parse_document(head)

    def history(self, limit: int = 10) -> list[tuple[int, dict[str, int]]]:
        """The newest ``limit`` retained commits, newest first: ``(generation, positions)``."""
        table = self._open(create=False)
        if table is None:
            return []
        rows = sorted(self._rows(table), key=lambda r: -r["generation"])[:limit]
        return [(int(r["generation"]), self._parse(r)) for r in rows]

    # ----------------------------------------------------------------------------------------- advance

    def _before_advance(self) -> None:
        self._open(create=True)

    def _put_if_absent(self, number: int, document: str) -> bool:
        """``INSERT`` of generation ``number``: Kudu answers AlreadyPresent when it is taken."""
        key = {"group_id": self.group, "source": self.source, "generation": number}
        row = {**key, "positions": document, "updated": dt.datetime.now(dt.timezone.utc)}
        try:
            self._open(create=True).apply([Mutation("insert", row)])
        except KuduWriteError as error:
            if any(e.already_present for e in error.errors):
                return False
            raise
        return True

    def _after_put(self, number: int, previous: int) -> None:
        """A writer stale past retention inserted a generation that was pruned long ago: it is not the head."""
        table = self._open(create=True)
        above = [r["generation"] for r in self._rows(table, at_least=number + 1)]
        if above:
            table.apply([Mutation("delete", {"group_id": self.group, "source": self.source, "generation": number})])
            raise ConsumerConflictError(
                f"{self.describe()}: advanced from generation {previous}, but generation {max(above)} exists: "
                "another query (or tool) moved the positions long ago; nothing was written."
            )

    def _prune(self, newest: int) -> None:
        """Delete all but the ``keep`` generations up to ``newest`` (never the head)."""
        table = self._open(create=True)
        old = [r["generation"] for r in self._rows(table) if r["generation"] <= newest - self.keep]
        if not old:
            return
        try:
            table.apply(
                Mutation("delete", {"group_id": self.group, "source": self.source, "generation": g}) for g in old
            )
        except Exception as error:  # the commit is written; pruning is retried 16 commits later
            if not self.is_transient(error) and not all(
                getattr(e, "not_found", False) for e in getattr(error, "errors", [None])
            ):
                raise


# ----------------------------------------------------------------------------------------------------- URI


def parse_uri(uri: str) -> dict:
    """The :class:`KuduStore` keyword arguments (``masters``, ``table``, ``keep``, ``create``, ``buckets``) of a
    ``kudu://`` URI; nothing is contacted."""
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme.lower() != SCHEME:
        raise OptionError(OPTION, f"expected 'kudu://master:7051/<table>', got {shown(OPTION, uri)}")
    refuse_credentials(OPTION, uri, NO_CREDENTIALS)
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    masters = []
    for part in netloc.split(","):
        host, colon, port = part.rpartition(":") if ":" in part else (part, "", "")
        if not host or (colon and not port.isdigit()):
            raise OptionError(
                OPTION, f"the Kudu masters in {shown(OPTION, uri)} are not 'host[:port][,host[:port]...]'"
            )
        masters.append(f"{host}:{port or DEFAULT_PORT}")
    table = unquote(path.strip("/"))
    if not table:
        raise OptionError(
            OPTION, f"expected a Kudu table name after the masters in {shown(OPTION, uri)} ('kudu://m:7051/t')"
        )
    params: dict[str, str] = {}
    for pair in filter(None, query.split("&")):
        name, _, value = pair.partition("=")
        params[unquote(name)] = unquote(value)
    known = ("keep", "create", "buckets")
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise OptionError(OPTION, f"unknown Kudu URI parameter(s) {unknown}; known: {', '.join(known)}")
    try:
        keep = int(params.get("keep", DEFAULT_KEEP))
        buckets = int(params.get("buckets", DEFAULT_BUCKETS))
    except ValueError:
        raise OptionError(OPTION, f"keep and buckets must be integers in {shown(OPTION, uri)}") from None
    if keep < 0 or buckets < 2:
        raise OptionError(OPTION, f"keep must be >= 0 and buckets >= 2 (Kudu's minimum) in {shown(OPTION, uri)}")
    return {
        "masters": ",".join(masters),
        "table": table,
        "keep": keep,
        "create": uri_flag(OPTION, "create", params.get("create", "true")),
        "buckets": buckets,
    }


def from_uri(uri: str, source: str, group: str | None) -> KuduStore:
    """A :class:`KuduStore` for ``source`` and ``group`` from a ``kudu://`` URI."""
    return KuduStore(source=source, group=group, **parse_uri(uri))
