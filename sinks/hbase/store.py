"""Committed positions in Apache HBase through its Thrift1 gateway and ``happybase`` (extra ``spyt-queue[hbase]``).

Cloudera's "offsets in HBase" pattern (one row per batch holding every partition), with its defects fixed.

URI (the ``offsets.store`` option)::

    hbase://thrift-host[:9090]/<table>[?keep=1000&family=o&create=true&timeout=10&transport=buffered&protocol=binary]

* **Rows.** One row per commit of one (group, source), keyed
  ``<group>/<source>/<20-digit reversed commit number>``: group and source URL-encoded (``/`` escaped, so the
  prefix of one pair is never the prefix of another), the commit number ``n`` written as ``99999999999999999999 - n``
  zero-padded to 20 digits. Keys are fixed-width, so byte order is number order (Cloudera's unpadded keys put
  ``...:9`` after ``...:10``), and the newest commit is the **first** row of the prefix: one forward scan with
  ``limit=1`` finds it, however long the history.
* **Cell.** The row has one cell, ``<family>:positions`` (family ``o`` by default), holding JSON
  ``{"version": 1, "commit": n, "positions": {"0": 120, "1": 98}}``: every partition's **next offset** (the next
  unread row), including partitions this advance did not move. One cell is one atomic row write: the partitions
  of a commit are never half-written.
* **Fence.** An advance reads the newest commit ``n``, compares every partition of ``new`` with ``old``, and
  writes commit ``n + 1`` with ``checkAndPut(row n+1, <family>:positions, expected=absent)``: a put-if-absent that
  HBase applies atomically in the row's region. Two writers that read the same ``n`` both aim at row ``n + 1``;
  exactly one creates it, the other gets ``False`` and raises :class:`~spyt_queue.errors.ConsumerConflictError`
  without writing anything. A writer that read an older ``n`` collides with the existing row ``n + 1`` the same
  way. The newest row therefore is the head: no separate pointer to keep consistent.
* **History and retention.** Old commits stay (for audit and rewinds: ``ytqueue status`` shows the newest). The
  family has no TTL (a TTL is reset by every put to the same cell in Cloudera's layout, and expires the *newest*
  offsets of a job that was down longer than the TTL, which then silently starts over). Instead the store deletes
  the rows more than ``keep`` commits older than the newest (default 1000; ``keep=0`` keeps everything), every 16
  commits, never rewriting or touching the newest rows.
* **Table.** Created on the first advance if missing (``create=false``: a missing table is an error naming it),
  with one family of one version and no TTL. A table without the family is an error naming both.
* Transport failures and HBase ``IOError`` replies (region moves, a busy server) are transient; the committer
  retries, and recognises an advance whose reply was lost. A row of the prefix that does not hold a commit raises
  :class:`~spyt_queue.errors.SpytQueueError` naming the table and row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import quote, unquote

from spyt_queue.errors import OptionError, SpytQueueError
from spyt_queue.redaction import shown
from spyt_queue.stores.commit_log import FORMAT_VERSION, CommitLogStore, refuse_credentials, uri_flag
from spyt_queue.stores.registry import OPTION

__all__ = ["HBaseStore", "commit_row_key", "from_uri", "parse_uri"]

SCHEME = "hbase"
DEFAULT_PORT = 9090
DEFAULT_FAMILY = "o"
DEFAULT_KEEP = 1000
DEFAULT_TIMEOUT = 10.0
QUALIFIER = "positions"
#: Why the store takes no ``offsets.store.user``/``offsets.store.password`` (nor ``user:password@`` in the URI).
NO_CREDENTIALS = (
    "the HBase store talks to the Thrift gateway without authentication (happybase has none): keep the gateway on a "
    "trusted network"
)
#: Digits of the reversed commit number in row keys.
WIDTH = 20
_TOP = 10**WIDTH - 1


def commit_row_key(prefix: bytes, commit: int) -> bytes:
    """The row key of commit number ``commit`` (>= 1) under ``prefix``: newer commits sort first."""
    if not 0 <= commit <= _TOP:
        raise SpytQueueError(f"commit number {commit} out of range for a {WIDTH}-digit row key")
    return prefix + f"{_TOP - commit:0{WIDTH}d}".encode("ascii")


def _thrift():
    """happybase's Thrift1 IDL module (``Hbase_thrift``: ``Mutation``, ``IOError``, ``AlreadyExists``)."""
    # lazy: happybase/thriftpy2 (the hbase extra) load only where an HBase store is used
    import happybase  # noqa: F401 - loads the IDL as the module Hbase_thrift
    import Hbase_thrift

    return Hbase_thrift


def _prefix(group: str, source: str) -> bytes:
    return f"{quote(group, safe='')}/{quote(source, safe='')}/".encode("ascii")


class HBaseStore(CommitLogStore):
    """Committed positions of ``source`` for ``group`` in HBase table ``table``, through the Thrift1 gateway at
    ``host:port`` (see the module docstring for the layout). The connection opens on first use."""

    # the open connection: reopened after unpickling
    _LIVE: ClassVar[dict[str, Any]] = {"_conn": None, "_table_checked": False}

    def __init__(
        self,
        host: str,
        port: int,
        table: str,
        source: str,
        group: str | None = None,
        *,
        family: str = DEFAULT_FAMILY,
        keep: int = DEFAULT_KEEP,
        create: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        transport: str = "buffered",
        protocol: str = "binary",
    ) -> None:
        self.host, self.port, self.table = host, int(port), table
        self.source, self.group = source, group or ""
        self.family, self.keep, self.create = family, int(keep), create
        self.timeout, self.transport, self.protocol = float(timeout), transport, protocol
        self.prefix = _prefix(self.group, source)
        self.column = f"{family}:{QUALIFIER}".encode()
        super().__init__()

    def describe(self) -> str:
        """``hbase://host:port/table`` and the row prefix of this (group, source)."""
        return f"{SCHEME}://{self.host}:{self.port}/{self.table} (rows {self.prefix.decode()}*)"

    # ------------------------------------------------------------------------------------------ client

    def connection(self):
        """The ``happybase.Connection`` of this store (opened on first use, reopened after a transport error)."""
        with self._lock:
            if self._conn is None:
                # lazy: happybase/thriftpy2 (the hbase extra) load only where an HBase store is used
                import happybase

                self._conn = happybase.Connection(
                    self.host,
                    self.port,
                    timeout=int(self.timeout * 1000),
                    transport=self.transport,
                    protocol=self.protocol,
                )
            return self._conn

    def close(self) -> None:
        """Close the Thrift connection."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def is_transient(self, error: BaseException) -> bool:
        """Transport failures (refused, reset, timed out) and HBase ``IOError`` replies are worth retrying."""
        # lazy: happybase/thriftpy2 (the hbase extra) load only where an HBase store is used
        from thriftpy2.transport import TTransportException

        return isinstance(error, (TTransportException, _thrift().IOError, OSError))

    def _call(self, fn, idempotent: bool = False):
        """``fn(connection)``; a transport error drops the connection so the retry reconnects. An ``idempotent``
        call (reads, the table check, pruning) is retried at once on a new connection: the gateway closes
        connections idle longer than ``hbase.thrift.server.socket.read.timeout`` (60 s by default), so a store
        idle between batches finds its connection closed. A commit's ``checkAndPut`` is not retried here: the
        committer retries the whole advance, which tells a lost reply from a conflict."""
        with self._lock:
            for attempt in (1, 2):
                try:
                    return fn(self.connection())
                except Exception as error:
                    if not self.is_transient(error) or _is_reply(error):
                        raise
                    conn, self._conn = self._conn, None
                    if conn is not None:
                        try:
                            conn.close()
                        except Exception:  # already broken
                            pass
                    if not idempotent or attempt == 2:
                        raise
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------------------------------- table

    def _ensure_table(self, create: bool) -> bool:
        """Whether the table exists (created when ``create``); a table without the family is an error."""
        if self._table_checked:
            return True

        def check(conn) -> bool:
            tables = {t.decode() for t in conn.tables()}
            if self.table not in tables:
                if not create:
                    return False
                if not self.create:
                    raise SpytQueueError(
                        f"{self.describe()}: table {self.table!r} does not exist; create it with family "
                        f"{self.family!r} or drop create=false from the {OPTION} URI"
                    )
                try:
                    conn.create_table(self.table, {self.family: {"max_versions": 1}})
                except _thrift().AlreadyExists:  # created by a concurrent store
                    pass
            families = {name.decode() for name in conn.table(self.table).families()}
            if self.family not in families:
                raise SpytQueueError(
                    f"HBase table {self.table!r} on {self.host}:{self.port} has no column family {self.family!r} "
                    f"(families: {sorted(families)}); add it or name another with family=... in the {OPTION} URI"
                )
            self._table_checked = True
            return True

        return self._call(check, idempotent=True)

    # ------------------------------------------------------------------------------------------- reads

    def _parse(self, row: bytes, data: Mapping[bytes, bytes]) -> tuple[int, dict[str, int]]:
        commit, doc = self._parse_document(row, data)
        return commit, doc["positions"]

    def _parse_document(self, row: bytes, data: Mapping[bytes, bytes]) -> tuple[int, dict[str, Any]]:
        """``(commit number, document)`` of one commit row; ``document["positions"]`` holds checked offsets."""
        where = f"HBase table {self.table!r} on {self.host}:{self.port}, row {row.decode('utf-8', 'replace')!r}"
        suffix = row[len(self.prefix) :]
        value = data.get(self.column)
        try:
            if len(suffix) != WIDTH or not suffix.isdigit() or value is None:
                raise ValueError("row key or cell")
            doc = json.loads(value)
            commit = _TOP - int(suffix)
            positions = doc["positions"]
            if doc.get("version") != FORMAT_VERSION or doc.get("commit") != commit or not isinstance(positions, dict):
                raise ValueError("document")
            parsed = {str(k): v for k, v in positions.items()}
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in parsed.values()):
                raise ValueError("offsets")
        except (ValueError, TypeError, KeyError, AttributeError):
            shown = (value or b"")[:60]
            raise SpytQueueError(
                f"{where} holds {shown!r}, not a commit of positions written by spyt-queue "
                "(was it written by another tool?); fix or delete the row"
            ) from None
        return commit, {**doc, "positions": parsed}

    def newest(self) -> tuple[int, dict[str, int]]:
        """``(commit number, positions)`` of the newest commit, ``(0, {})`` when there is none."""
        commit, doc = self.newest_document()
        return commit, doc.get("positions", {})

    def newest_document(self) -> tuple[int, dict[str, Any]]:
        """``(commit number, document)`` of the newest commit, ``(0, {})`` when there is none."""
        if not self._ensure_table(create=False):
            return 0, {}

        def scan(conn) -> list:
            return list(conn.table(self.table).scan(row_prefix=self.prefix, columns=[self.column], limit=1))

        rows = self._call(scan, idempotent=True)
        if not rows:
            return 0, {}
        return self._parse_document(*rows[0])

    def history(self, limit: int = 10) -> list[tuple[int, int, dict[str, int]]]:
        """The newest ``limit`` commits as ``(commit number, commit time in ms, positions)``, newest first."""
        if not self._ensure_table(create=False):
            return []

        def scan(conn) -> list:
            table = conn.table(self.table)
            return list(table.scan(row_prefix=self.prefix, columns=[self.column], limit=limit, include_timestamp=True))

        result = []
        for row, cells in self._call(scan, idempotent=True):
            value, ts = cells[self.column]
            commit, positions = self._parse(row, {self.column: value})
            result.append((commit, ts, positions))
        return result

    # ----------------------------------------------------------------------------------------- advance

    def _before_advance(self) -> None:
        self._ensure_table(create=True)

    def _put_if_absent(self, number: int, document: str) -> bool:
        """``checkAndPut`` with no expected value: HBase's atomic put-if-absent in the row's region."""
        row = commit_row_key(self.prefix, number)

        def put_if_absent(conn) -> bool:
            mutation = _thrift().Mutation(column=self.column, value=document.encode(), isDelete=False)
            return bool(conn.client.checkAndPut(self.table.encode(), row, self.column, None, mutation, {}))

        return self._call(put_if_absent)

    def _prune(self, newest: int) -> None:
        """Delete the commits more than ``keep`` older than ``newest`` (rows are deleted, never rewritten)."""

        def prune(conn) -> None:
            table = conn.table(self.table)
            start = commit_row_key(self.prefix, newest - self.keep)
            stop = self.prefix[:-1] + bytes([self.prefix[-1] + 1])
            with table.batch(batch_size=500) as batch:
                for row, _ in table.scan(row_start=start, row_stop=stop, columns=[self.column]):
                    batch.delete(row)

        try:
            self._call(prune, idempotent=True)
        except Exception as error:  # the commit is written; pruning is retried 16 commits later
            if not self.is_transient(error):
                raise


def _is_reply(error: BaseException) -> bool:
    """An error the server replied with (the connection is fine), rather than a broken transport."""
    return isinstance(error, _thrift().IOError)


# ----------------------------------------------------------------------------------------------------- URI


def parse_uri(uri: str) -> dict:
    """The :class:`HBaseStore` keyword arguments (``host``, ``port``, ``table``, ``family``, ``keep``, ``create``,
    ``timeout``, ``transport``, ``protocol``) of an ``hbase://`` URI; nothing is contacted."""
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme.lower() != SCHEME:
        raise OptionError(OPTION, f"expected 'hbase://thrift-host:9090/<table>', got {shown(OPTION, uri)}")
    refuse_credentials(OPTION, uri, NO_CREDENTIALS)
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    host, colon, port = netloc.rpartition(":") if ":" in netloc else (netloc, "", "")
    if not host or (colon and not port.isdigit()):
        raise OptionError(OPTION, f"the HBase Thrift gateway in {shown(OPTION, uri)} is not 'host' or 'host:port'")
    table = unquote(path.strip("/"))
    if not table or "/" in table or not all(c.isalnum() or c in "_-.:" for c in table):
        raise OptionError(
            OPTION, f"expected one HBase table name after the host in {shown(OPTION, uri)} ('hbase://h:9090/t')"
        )
    params: dict[str, str] = {}
    for pair in filter(None, query.split("&")):
        name, _, value = pair.partition("=")
        params[unquote(name)] = unquote(value)
    known = ("keep", "family", "create", "timeout", "transport", "protocol")
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise OptionError(OPTION, f"unknown HBase URI parameter(s) {unknown}; known: {', '.join(known)}")
    try:
        keep = int(params.get("keep", DEFAULT_KEEP))
        timeout = float(params.get("timeout", DEFAULT_TIMEOUT))
    except ValueError:
        raise OptionError(
            OPTION, f"keep must be an integer and timeout a number of seconds in {shown(OPTION, uri)}"
        ) from None
    if keep < 0 or timeout <= 0:
        raise OptionError(OPTION, f"keep must be >= 0 and timeout > 0 in {shown(OPTION, uri)}")
    family = params.get("family", DEFAULT_FAMILY)
    if not family or not all(c.isalnum() or c in "_-." for c in family):
        raise OptionError(OPTION, f"family must be a column family name, got {family!r}")
    transport, protocol = params.get("transport", "buffered"), params.get("protocol", "binary")
    if transport not in ("buffered", "framed") or protocol not in ("binary", "compact"):
        raise OptionError(OPTION, "transport must be buffered or framed, protocol binary or compact")
    return {
        "host": host,
        "port": int(port or DEFAULT_PORT),
        "table": table,
        "family": family,
        "keep": keep,
        "create": uri_flag(OPTION, "create", params.get("create", "true")),
        "timeout": timeout,
        "transport": transport,
        "protocol": protocol,
    }


def from_uri(uri: str, source: str, group: str | None) -> HBaseStore:
    """An :class:`HBaseStore` for ``source`` and ``group`` from an ``hbase://`` URI."""
    return HBaseStore(source=source, group=group, **parse_uri(uri))
