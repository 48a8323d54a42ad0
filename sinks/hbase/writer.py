"""The ``spyt_hbase`` sink: Spark rows to HBase cells through the Thrift1 gateway (``happybase``'s client).

Every task sends its rows in bounded batches (``batch_size`` rows per ``mutateRows`` call); a failed call fails the
task with the table and the first row key of the batch, so Spark retries or stops the query, and nothing is dropped
silently. With ``timestamp_column`` every cell carries the row's event time as its HBase timestamp: HBase returns
the version with the highest timestamp, so a replayed batch rewrites identical cells and an older event written
late lands underneath the newer one. See the README section "HBase sink" for what that does not cover.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from spyt_queue.errors import BadRecordError, OptionError, SpytQueueError, UnreachableError
from spyt_queue.options import Options
from spyt_queue.sinks.hbase.codec import encoder_for, key_part, physical

__all__ = [
    "KNOWN_OPTIONS",
    "HBaseBatchWriter",
    "HBaseSinkSettings",
    "HBaseStreamWriter",
    "HBaseWriteCommit",
    "settings_from_options",
]

log = logging.getLogger(__name__)

KNOWN_OPTIONS = (
    "thrift",
    "table",
    "family",
    "row_key",
    "row_key_separator",
    "row_key_prefix",
    "column_mapping",
    "timestamp_column",
    "write_key_columns",
    "batch_size",
    "create_table",
    "timeout",
    "transport",
    "protocol",
)
SPARK_OPTIONS = ("path", "checkpointLocation", "queryName")
DEFAULT_PORT = 9090
DEFAULT_FAMILY = "d"
DEFAULT_BATCH_SIZE = 1000
WHAT = "the spyt_hbase sink"


@dataclass(frozen=True)
class HBaseSinkSettings:
    """Everything a task needs (picklable: encoders are built on the executor from ``schema``)."""

    host: str
    port: int
    table: str
    schema: T.StructType
    key_columns: tuple[str, ...]
    separator: bytes
    prefix: tuple[str, int] | None  # ("salt", buckets) or ("hash", hex digits)
    cells: tuple[tuple[str, bytes], ...]  # (column, b"family:qualifier")
    timestamp_column: str | None
    batch_size: int
    create_table: bool
    timeout_ms: int
    transport: str
    protocol: str
    families: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        return f"HBase table {self.table!r} via Thrift {self.host}:{self.port}"


# ---------------------------------------------------------------------------------------------------- options


def _endpoint(value: str) -> tuple[str, int]:
    host, colon, port = value.rpartition(":") if ":" in value else (value, "", "")
    if not host or (colon and not port.isdigit()):
        raise OptionError("thrift", f"expected 'host' or 'host:port' of the HBase Thrift1 gateway, got {value!r}")
    return host, int(port or DEFAULT_PORT)


def _prefix(value: str | None) -> tuple[str, int] | None:
    if value is None or value.lower() == "none":
        return None
    kind, _, number = value.lower().partition(":")
    limits = {"salt": (2, 10000), "hash": (1, 32)}
    if kind not in limits or not number.isdigit() or not limits[kind][0] <= int(number) <= limits[kind][1]:
        raise OptionError(
            "row_key_prefix", f"expected none, salt:<2..10000 buckets> or hash:<1..32 hex digits>, got {value!r}"
        )
    return kind, int(number)


def settings_from_options(options: Options, schema: T.StructType) -> HBaseSinkSettings:
    """Validate the options against the DataFrame's schema (no server contact)."""
    options.check_known((*KNOWN_OPTIONS, *SPARK_OPTIONS), WHAT)
    host, port = _endpoint(options.require_str("thrift", "Set the HBase Thrift1 gateway: .option('thrift', 'h:9090')"))
    table = options.get_str("table") or options.get_str("path")
    if not table:
        raise OptionError("table", "required: .option('table', 'events') or .save('events')")
    names = [f.name for f in schema.fields]
    types = {f.name: f.dataType for f in schema.fields}
    key_text = options.require_str("row_key", "Name the row-key column(s): .option('row_key', 'user_id,event_id')")
    key_columns = tuple(c.strip() for c in key_text.split(",") if c.strip())
    missing = [c for c in key_columns if c not in types]
    if not key_columns or missing:
        raise OptionError("row_key", f"column(s) {missing or key_text!r} not in the DataFrame (columns: {names})")
    separator = (options.get_str("row_key_separator") or "|").encode("utf-8")
    family = options.get_str("family", DEFAULT_FAMILY) or DEFAULT_FAMILY
    mapping: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in (options.get_str("column_mapping") or "").split(","))):
        column, eq, target = item.partition("=")
        column, target = column.strip(), target.strip()
        if not eq or column not in types or not target:
            raise OptionError(
                "column_mapping", f"{item!r} is not '<column>=<family>:<qualifier>' for a DataFrame column ({names})"
            )
        mapping[column] = target if ":" in target else f"{family}:{target}"
    write_keys = options.get_bool("write_key_columns", False)
    timestamp_column = options.get_str("timestamp_column")
    if timestamp_column is not None:
        ts_type = types.get(timestamp_column)
        if not isinstance(ts_type, (T.TimestampType, T.TimestampNTZType, T.LongType, T.IntegerType)):
            raise OptionError(
                "timestamp_column",
                f"{timestamp_column!r} must be a timestamp or an integer (ms since the epoch) column of the DataFrame, "
                f"got {ts_type.simpleString() if ts_type else 'no such column'} (columns: {names})",
            )
    cells = []
    for name in names:
        if name in key_columns and not write_keys and name not in mapping:
            continue
        encoder_for(name, types[name], "column_mapping")  # refuses unsupported types now, naming the column
        cells.append((name, mapping.get(name, f"{family}:{name}").encode("utf-8")))
    if not cells:
        raise OptionError("row_key", "every column is part of the row key: nothing is left to write as a cell")
    families = tuple(sorted({qualifier.split(b":", 1)[0].decode() for _, qualifier in cells}))
    batch_size = options.get_int("batch_size", DEFAULT_BATCH_SIZE) or DEFAULT_BATCH_SIZE
    timeout = options.get_int("timeout", 30) or 30
    transport, protocol = options.get_str("transport") or "buffered", options.get_str("protocol") or "binary"
    if transport not in ("buffered", "framed"):
        raise OptionError("transport", f"expected buffered or framed, got {transport!r}")
    if protocol not in ("binary", "compact"):
        raise OptionError("protocol", f"expected binary or compact, got {protocol!r}")
    return HBaseSinkSettings(
        host=host,
        port=port,
        table=table,
        schema=schema,
        key_columns=key_columns,
        separator=separator,
        prefix=_prefix(options.get_str("row_key_prefix")),
        cells=tuple(cells),
        timestamp_column=timestamp_column,
        batch_size=batch_size,
        create_table=options.get_bool("create_table", False),
        timeout_ms=int(timeout * 1000),
        transport=transport,
        protocol=protocol,
        families=families,
    )


# ------------------------------------------------------------------------------------------------ connections

_connections: dict[tuple, Any] = {}
_lock = threading.Lock()


def _thrift():
    import happybase  # noqa: F401 - loads the Thrift1 IDL as the module Hbase_thrift
    import Hbase_thrift

    return Hbase_thrift


def connection(settings: HBaseSinkSettings):
    """A cached ``happybase.Connection`` of this Python process for the settings' gateway."""
    key = (settings.host, settings.port, settings.timeout_ms, settings.transport, settings.protocol)
    with _lock:
        conn = _connections.get(key)
        if conn is None:
            import happybase

            try:
                conn = happybase.Connection(
                    settings.host,
                    settings.port,
                    timeout=settings.timeout_ms,
                    transport=settings.transport,
                    protocol=settings.protocol,
                )
            except Exception as error:
                raise UnreachableError(
                    f"HBase Thrift gateway {settings.host}:{settings.port} did not answer ({error}); check the "
                    "'thrift' option and that the gateway runs (hbase thrift start)"
                ) from None
            _connections[key] = conn
        return conn


def drop_connection(settings: HBaseSinkSettings) -> None:
    """Forget (and close) the cached connection after an error: the next use reconnects."""
    key = (settings.host, settings.port, settings.timeout_ms, settings.transport, settings.protocol)
    with _lock:
        conn = _connections.pop(key, None)
    if conn is not None:
        try:
            conn.close()
        except Exception:  # already broken
            pass


def check_table(settings: HBaseSinkSettings) -> None:
    """On the driver, before any task: the table and every family the mapping uses exist (``create_table=true``
    creates the table with them, one version each, no TTL). Errors name the table or family."""
    try:
        conn = connection(settings)
        tables = {t.decode() for t in conn.tables()}
        if settings.table not in tables:
            if not settings.create_table:
                raise SpytQueueError(
                    f"{settings.describe()} does not exist; create it with families {list(settings.families)} or set "
                    "create_table=true"
                )
            try:
                conn.create_table(settings.table, {f: {"max_versions": 1} for f in settings.families})
            except _thrift().AlreadyExists:
                pass
        present = {name.decode() for name in conn.table(settings.table).families()}
    except SpytQueueError:
        raise
    except Exception as error:
        drop_connection(settings)
        raise UnreachableError(f"{settings.describe()}: {type(error).__name__}: {error}") from None
    missing = [f for f in settings.families if f not in present]
    if missing:
        raise SpytQueueError(
            f"{settings.describe()} has no column family {', '.join(map(repr, missing))} "
            f"(families: {sorted(present)}); add it (alter) or map the columns elsewhere with family / column_mapping"
        )


# ----------------------------------------------------------------------------------------------------- tasks


@dataclass
class HBaseWriteCommit(WriterCommitMessage):
    """What one task wrote: rows put, cells put, rows skipped because every cell was null."""

    rows: int = 0
    cells: int = 0
    empty_rows: int = 0


def _key_builder(settings: HBaseSinkSettings) -> Callable[[list[Any]], bytes]:
    sep, prefix = settings.separator, settings.prefix

    def build(parts: list[Any]) -> bytes:
        natural = sep.join(key_part(p) for p in parts)
        if prefix is None:
            return natural
        kind, n = prefix
        if kind == "salt":
            return f"{zlib.crc32(natural) % n:0{len(str(n - 1))}d}".encode() + sep + natural
        return hashlib.md5(natural, usedforsecurity=False).hexdigest()[:n].encode() + sep + natural

    return build


def _timestamps(settings: HBaseSinkSettings, batch: pa.RecordBatch) -> list[int | None] | None:
    if settings.timestamp_column is None:
        return None
    array = batch.column(batch.schema.get_field_index(settings.timestamp_column))
    values = physical(array)
    if pa.types.is_timestamp(array.type):
        return [None if v is None else v // 1000 for v in values]  # microseconds -> HBase milliseconds
    return values


def write_task(settings: HBaseSinkSettings, batches: Iterator[pa.RecordBatch]) -> HBaseWriteCommit:
    """Write one task's rows in batches of ``batch_size`` rows; any failed call fails the task."""
    thrift = _thrift()
    Mutation, BatchMutation = thrift.Mutation, thrift.BatchMutation
    types = {f.name: f.dataType for f in settings.schema.fields}
    encoders = [(column, qualifier, encoder_for(column, types[column])) for column, qualifier in settings.cells]
    build_key = _key_builder(settings)
    table = settings.table.encode()
    commit = HBaseWriteCommit()
    pending: list[tuple[int | None, Any]] = []
    done = 0

    def flush() -> None:
        nonlocal done
        if not pending:
            return
        groups: dict[int | None, list[Any]] = {}
        for ts, mutation in pending:
            groups.setdefault(ts, []).append(mutation)
        conn = connection(settings)
        for ts, mutations in groups.items():
            try:
                if ts is None:
                    conn.client.mutateRows(table, mutations, {})
                else:
                    conn.client.mutateRowsTs(table, mutations, ts, {})
            except Exception as error:
                drop_connection(settings)
                raise SpytQueueError(
                    f"{settings.describe()}: writing {len(mutations)} row(s) from row key {mutations[0].row!r} failed "
                    f"after {done} row(s) of this task were written ({type(error).__name__}: {error}); the task fails "
                    "and Spark retries it or stops the query"
                ) from error
        done += len(pending)
        pending.clear()

    for batch in batches:
        if batch.num_rows == 0:
            continue
        index = {name: i for i, name in enumerate(batch.schema.names)}
        keys = [batch.column(index[c]).to_pylist() for c in settings.key_columns]
        values = [(qualifier, encode, physical(batch.column(index[column]))) for column, qualifier, encode in encoders]
        stamps = _timestamps(settings, batch)
        for r in range(batch.num_rows):
            parts = [k[r] for k in keys]
            if any(p is None for p in parts):
                column = settings.key_columns[parts.index(None)]
                raise BadRecordError(
                    f"{settings.describe()}: row-key column {column!r} is null in row {commit.rows + r} of this task"
                )
            row = build_key(parts)
            mutations = [Mutation(column=q, value=encode(v[r])) for q, encode, v in values if v[r] is not None]
            if not mutations:
                commit.empty_rows += 1
                continue
            ts = None
            if stamps is not None:
                ts = stamps[r]
                if ts is None:
                    raise BadRecordError(
                        f"{settings.describe()}: timestamp_column {settings.timestamp_column!r} is null for row key "
                        f"{row!r}: an event time is needed for replays to converge"
                    )
            pending.append((ts, BatchMutation(row=row, mutations=mutations)))
            commit.cells += len(mutations)
            if len(pending) >= settings.batch_size:
                flush()
        commit.rows += batch.num_rows
    flush()
    commit.rows -= commit.empty_rows
    return commit


def _summary(messages: list[WriterCommitMessage | None]) -> str:
    done = [m for m in messages if isinstance(m, HBaseWriteCommit)]
    return f"{sum(m.rows for m in done)} row(s), {sum(m.cells for m in done)} cell(s) from {len(done)} task(s)"


class HBaseStreamWriter(DataSourceStreamArrowWriter):
    """Each micro-batch's rows as HBase puts; the batch commits when every task did."""

    def __init__(self, settings: HBaseSinkSettings) -> None:
        self.settings = settings

    def write(self, iterator: Iterator[pa.RecordBatch]) -> HBaseWriteCommit:  # type: ignore[override]
        return write_task(self.settings, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info("%s: batch %s wrote %s", self.settings.describe(), batchId, _summary(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning(
            "%s: batch %s aborted; finished tasks wrote %s, failed tasks may have written some rows. A replay "
            "rewrites them (with timestamp_column, to the same cells and versions).",
            self.settings.describe(),
            batchId,
            _summary(messages),
        )


class HBaseBatchWriter(DataSourceArrowWriter):
    """A DataFrame's rows as HBase puts."""

    def __init__(self, settings: HBaseSinkSettings) -> None:
        self.settings = settings

    def write(self, iterator: Iterator[pa.RecordBatch]) -> HBaseWriteCommit:  # type: ignore[override]
        return write_task(self.settings, iterator)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning(
            "%s: write aborted; finished tasks wrote %s, failed tasks may have written some rows",
            self.settings.describe(),
            _summary(messages),
        )
