"""The ``spyt_hbase`` sink: Spark rows to HBase cells through a Thrift gateway (:mod:`spyt_queue.sinks.hbase.senders`:
Thrift1 through ``happybase``'s client, or Thrift2).

Every task sends its rows in bounded batches (``batch_size`` rows per ``mutateRows`` call); a failed call fails the
task with the table and the first row key of the batch, so Spark retries or stops the query, and nothing is dropped
silently; with ``deadLetter.*`` rows that can not become a put and puts HBase refuses go to the dead-letter target
instead (:func:`write_task_diverting`). With ``timestamp_column`` every cell carries the row's event time as its
HBase timestamp: HBase returns the version with the highest timestamp, so a replayed batch rewrites identical cells
and an older event written late lands underneath the newer one. See docs/hbase.md ("Guarantees") for what that does not
cover.
"""

from __future__ import annotations

import hashlib
import logging
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import WriterCommitMessage

from spyt_queue.deadletter import BoundDeadLetters, DeadLetterCollector
from spyt_queue.deadletter_targets import dead_letter_target
from spyt_queue.errors import BadRecordError, OptionError, SpytQueueError
from spyt_queue.kafka.options import SUBSCRIPTION_OPTIONS
from spyt_queue.options import WRITE, Option, Options
from spyt_queue.records import batch_coordinates
from spyt_queue.redaction import shown
from spyt_queue.sink_options import check_sink_options
from spyt_queue.sinks.hbase.codec import (
    ESCAPE,
    encode_column,
    encoder_for,
    epoch_micros,
    escape_key_part,
    key_column,
    key_part,
)
from spyt_queue.sinks.hbase.senders import Sender, check_table, drop_connection, error_text, reconnecting
from spyt_queue.spark.sink_skeleton import (
    SINK_STAGE,
    SinkBatchWriter,
    SinkFormat,
    SinkStreamWriter,
    WriteTask,
    batch_writer,
    finished,
    stream_writer,
)
from spyt_queue.yt.declarations import YT_SOURCE_OPTIONS

__all__ = [
    "HBASE_SINK_OPTIONS",
    "HBaseWriteCommit",
    "HBaseWriteTask",
    "hbase_batch_writer",
    "hbase_stream_writer",
    "settings_from_options",
]

log = logging.getLogger(__name__)

DEFAULT_PORT = 9090
DEFAULT_FAMILY = "d"
DEFAULT_BATCH_SIZE = 1000
WHAT = "the spyt_hbase sink"
HBASE_SINK = SinkFormat("spyt_hbase", "puts rows into the table")

_W = (WRITE,)
THRIFT = Option("thrift", "host[:port] of the Thrift gateway (Thrift1, or Thrift2 with thrift_api=2)", modes=_W)
THRIFT_API = Option("thrift_api", "1: Thrift1 gateway (happybase); 2: Thrift2 gateway", default="1", modes=_W)
THRIFT2_IDL = Option("thrift2_idl", "the hbase-thrift jar (or its directory, or the .thrift file) of Thrift2", modes=_W)
TABLE = Option("table", "HBase table (namespace:table allowed), or the save() path", modes=_W)
ROW_KEY = Option("row_key", "comma-separated key columns, parts written as text", modes=_W)
ROW_KEY_SEPARATOR = Option("row_key_separator", "between key parts (and after a prefix)", default="|", modes=_W)
ROW_KEY_PREFIX = Option(
    "row_key_prefix", "none, salt:N or hash:K: spreads hot keys over regions", default="none", modes=_W
)
#: ``row_key_encoding`` values: the current keys, and those spyt-queue wrote before composite parts were escaped and
#: timestamp parts put in UTC (commit 06060f6), for a table that holds such keys.
ESCAPED_KEYS, LEGACY_KEYS = "escaped", "legacy"
ROW_KEY_ENCODING = Option(
    "row_key_encoding",
    "escaped, or legacy: keys as written before escaping (parts joined as they are, timestamps in the session zone)",
    kind="choice",
    default=ESCAPED_KEYS,
    choices=(ESCAPED_KEYS, LEGACY_KEYS),
    modes=_W,
)
FAMILY = Option("family", "column family of columns not in column_mapping", default=DEFAULT_FAMILY, modes=_W)
COLUMN_MAPPING = Option("column_mapping", "col=family:qualifier,col2=qualifier", modes=_W)
WRITE_KEY_COLUMNS = Option(
    "write_key_columns", "also write the key columns as cells", kind="bool", default=False, modes=_W
)
TIMESTAMP_COLUMN = Option(
    "timestamp_column", "timestamp column, or integer ms since the epoch, used as every cell's timestamp", modes=_W
)
BATCH_SIZE = Option("batch_size", "rows per Thrift call", kind="int", default=DEFAULT_BATCH_SIZE, modes=_W)
CREATE_TABLE = Option(
    "create_table",
    "create a missing table with the families used (1 version, no TTL)",
    kind="bool",
    default=False,
    modes=_W,
)
TIMEOUT = Option("timeout", "seconds per Thrift call", kind="int", default=30, modes=_W)
TRANSPORT = Option(
    "transport",
    "buffered or framed (as the gateway runs)",
    kind="choice",
    default="buffered",
    choices=("buffered", "framed"),
    modes=_W,
)
PROTOCOL = Option(
    "protocol",
    "binary or compact (as the gateway runs)",
    kind="choice",
    default="binary",
    choices=("binary", "compact"),
    modes=_W,
)
#: Every option the sink reads; Spark adds path/checkpointLocation/queryName, dead letters add deadLetter.*.
HBASE_SINK_OPTIONS = (
    THRIFT,
    THRIFT_API,
    THRIFT2_IDL,
    TABLE,
    ROW_KEY,
    ROW_KEY_SEPARATOR,
    ROW_KEY_PREFIX,
    ROW_KEY_ENCODING,
    FAMILY,
    COLUMN_MAPPING,
    WRITE_KEY_COLUMNS,
    TIMESTAMP_COLUMN,
    BATCH_SIZE,
    CREATE_TABLE,
    TIMEOUT,
    TRANSPORT,
    PROTOCOL,
)


@dataclass(frozen=True)
class HBaseWriteTask(WriteTask):
    """The HBase sink's task: everything a task needs (picklable: encoders are built on the executor from
    ``schema``); its tasks put their rows (:func:`write_task`), nothing is left to do on the driver."""

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
    api: int = 1  # 1: Thrift1 gateway (happybase), 2: Thrift2 gateway (thriftpy2, IDL from the hbase-thrift jar)
    idl: str | None = None  # thrift2_idl: where the Thrift2 IDL is (None: SPYT_HBASE_THRIFT_JAR, the install dir)
    #: ``deadLetter.*``: where rows with a null row key or event time, and puts HBase refuses, go (None: they fail
    #: the task).
    dead_letters: BoundDeadLetters | None = None
    #: ``row_key_encoding``: :data:`ESCAPED_KEYS`, or :data:`LEGACY_KEYS` for a table written before escaping.
    key_encoding: str = ESCAPED_KEYS

    def describe(self) -> str:
        """``HBase table 't' via Thrift h:9090``."""
        return f"HBase table {self.table!r} via Thrift{'2' if self.api == 2 else ''} {self.host}:{self.port}"

    def write(self, batches: Iterator[pa.RecordBatch]) -> HBaseWriteCommit:
        """Put one task's rows (:func:`write_task`)."""
        return write_task(self, batches)

    def summary(self, messages: Sequence[WriterCommitMessage | None]) -> str:
        """Rows and cells put."""
        return _summary(messages)

    def abort(self, messages: Sequence[WriterCommitMessage | None], batch_id: int | None) -> str:
        """Puts of finished tasks stay; writing again rewrites them."""
        return (
            f"finished tasks wrote {_summary(messages)}, failed tasks may have written some rows; writing again "
            "rewrites them (with timestamp_column, to the same cells and versions)"
        )


# ---------------------------------------------------------------------------------------------------- options


def _endpoint(value: str) -> tuple[str, int]:
    host, colon, port = value.rpartition(":") if ":" in value else (value, "", "")
    if not host or (colon and not port.isdigit()):
        raise OptionError(
            "thrift", f"expected 'host' or 'host:port' of the HBase Thrift gateway, got {shown('thrift', value)}"
        )
    return host, int(port or DEFAULT_PORT)


def _prefix(value: str | None) -> tuple[str, int] | None:
    if value is None or value.lower() == "none":
        return None
    kind, _, number = value.lower().partition(":")
    limits = {"salt": (2, 10000), "hash": (1, 32)}
    if kind not in limits or not number.isdigit() or not limits[kind][0] <= int(number) <= limits[kind][1]:
        raise OptionError(
            "row_key_prefix",
            f"expected none, salt:<2..10000 buckets> or hash:<1..32 hex digits>, got {shown('row_key_prefix', value)}",
        )
    return kind, int(number)


def settings_from_options(options: Options, schema: T.StructType) -> HBaseWriteTask:
    """Validate the options against the DataFrame's schema (no server contact)."""
    check_sink_options(options, HBASE_SINK_OPTIONS, WHAT, source_options=(*YT_SOURCE_OPTIONS, *SUBSCRIPTION_OPTIONS))
    host, port = _endpoint(
        options.require_str(THRIFT.name, "Set the HBase Thrift gateway: .option('thrift', 'h:9090')")
    )
    api_text = options.value(THRIFT_API)
    if api_text not in ("1", "2"):
        raise OptionError(
            "thrift_api",
            f"expected 1 (hbase thrift start) or 2 (hbase thrift2 start), got {shown('thrift_api', api_text)}",
        )
    table = options.value(TABLE) or options.get_str("path")
    if not table:
        raise OptionError("table", "required: .option('table', 'events') or .save('events')")
    names = [f.name for f in schema.fields]
    types = {f.name: f.dataType for f in schema.fields}
    key_text = options.require_str(ROW_KEY.name, "Name the row-key column(s): .option('row_key', 'user_id,event_id')")
    key_columns = tuple(c.strip() for c in key_text.split(",") if c.strip())
    missing = [c for c in key_columns if c not in types]
    if not key_columns or missing:
        raise OptionError("row_key", f"column(s) {missing or key_text!r} not in the DataFrame (columns: {names})")
    separator = options.value(ROW_KEY_SEPARATOR).encode("utf-8")
    key_encoding = options.value(ROW_KEY_ENCODING)
    if len(key_columns) > 1 and separator.startswith(ESCAPE) and key_encoding == ESCAPED_KEYS:
        raise OptionError(
            "row_key_separator",
            f"{separator.decode()!r} starts with '\\', the escape character of composite row-key parts (a part's "
            "'\\' is written '\\\\'): such a separator would be ambiguous; choose one that starts otherwise, e.g. '|'",
        )
    family = options.value(FAMILY)
    mapping: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in (options.value(COLUMN_MAPPING) or "").split(","))):
        column, eq, target = item.partition("=")
        column, target = column.strip(), target.strip()
        if not eq or column not in types or not target:
            raise OptionError(
                "column_mapping", f"{item!r} is not '<column>=<family>:<qualifier>' for a DataFrame column ({names})"
            )
        mapping[column] = target if ":" in target else f"{family}:{target}"
    write_keys = options.value(WRITE_KEY_COLUMNS)
    timestamp_column = options.value(TIMESTAMP_COLUMN)
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
    batch_size, timeout = options.value(BATCH_SIZE), options.value(TIMEOUT)
    transport, protocol = options.value(TRANSPORT), options.value(PROTOCOL)
    target = dead_letter_target(options)  # validated here; checked on its server by check_table
    return HBaseWriteTask(
        host=host,
        port=port,
        table=table,
        schema=schema,
        key_columns=key_columns,
        separator=separator,
        prefix=_prefix(options.value(ROW_KEY_PREFIX)),
        cells=tuple(cells),
        timestamp_column=timestamp_column,
        batch_size=batch_size,
        create_table=options.value(CREATE_TABLE),
        timeout_ms=int(timeout * 1000),
        transport=transport,
        protocol=protocol,
        families=families,
        api=int(api_text),
        idl=options.value(THRIFT2_IDL),
        dead_letters=None if target is None else target.bind(f"hbase:{table}", SINK_STAGE),
        key_encoding=key_encoding,
    )


# ----------------------------------------------------------------------------------------------------- tasks


@dataclass
class HBaseWriteCommit(WriterCommitMessage):
    """What one task wrote: rows put, cells put, rows skipped because every cell was null, rows dead-lettered."""

    rows: int = 0
    cells: int = 0
    empty_rows: int = 0
    dead_letters: int = 0


def _salted(settings: HBaseWriteTask) -> Callable[[bytes], bytes] | None:
    """The salt/hash prefix added in front of a natural key, or None without ``row_key_prefix``."""
    if settings.prefix is None:
        return None
    sep, (kind, n) = settings.separator, settings.prefix
    if kind == "salt":
        width = len(str(n - 1))
        return lambda natural: f"{zlib.crc32(natural) % n:0{width}d}".encode() + sep + natural
    return lambda natural: hashlib.md5(natural, usedforsecurity=False).hexdigest()[:n].encode() + sep + natural


def _row_keys(settings: HBaseWriteTask, batch: pa.RecordBatch, index: dict[str, int], first_row: int) -> list[bytes]:
    """Every row's key: the key columns' text parts, escaped and joined by the separator when there are several
    (:func:`~spyt_queue.sinks.hbase.codec.join_row_key`), prefixed as configured. Computed per column where the
    codec can (strings, binary, integers, timestamps), value by value otherwise; a null part is an error."""
    columns = [batch.column(index[c]) for c in settings.key_columns]
    for name, column in zip(settings.key_columns, columns, strict=True):
        if column.null_count:
            row = column.is_null().to_pylist().index(True)
            raise BadRecordError(
                f"{settings.describe()}: row-key column {name!r} is null in row {first_row + row} of this task"
            )
    if settings.key_encoding == LEGACY_KEYS:
        parts = [_legacy_parts(c) for c in columns]
    else:
        parts = [key_column(c) or [key_part(v) for v in c.to_pylist()] for c in columns]
    if len(parts) == 1:
        keys = parts[0]
    elif settings.key_encoding == LEGACY_KEYS:
        keys = [settings.separator.join(p) for p in zip(*parts, strict=True)]
    else:
        sep = settings.separator
        parts = [_escaped(column, sep) for column in parts]
        keys = [sep.join(p) for p in zip(*parts, strict=True)]
    salted = _salted(settings)
    return keys if salted is None else [salted(k) for k in keys]


def _legacy_parts(column: pa.Array) -> list[bytes]:
    """A key column's parts as spyt-queue wrote them before ``row_key_encoding=escaped`` (``legacy``): the same
    texts, except that a ``timestamp`` is the ISO 8601 text of the time Spark hands over, in the session time zone
    with its offset (``2024-11-03T01:30:00-04:00`` in America/New_York), not in UTC."""
    if pa.types.is_timestamp(column.type) and column.type.tz is not None:
        return [value.isoformat().encode("ascii") for value in column.to_pylist()]
    return key_column(column) or [key_part(v) for v in column.to_pylist()]


def _escaped(column: list[bytes], separator: bytes) -> list[bytes]:
    """A key column's parts as :func:`~spyt_queue.sinks.hbase.codec.join_row_key` writes them in a composite key
    (one scan of the whole column decides whether any part needs escaping)."""
    whole = b"".join(column)
    if ESCAPE not in whole and separator[:1] not in whole:
        return column
    return [escape_key_part(part, separator) for part in column]


def _timestamps(settings: HBaseWriteTask, batch: pa.RecordBatch, keys: list[bytes]) -> list[int] | None:
    """HBase cell timestamps (ms) from ``timestamp_column``, or None without it; a null is an error naming the row."""
    if settings.timestamp_column is None:
        return None
    array = batch.column(batch.schema.get_field_index(settings.timestamp_column))
    if array.null_count:
        row = array.is_null().to_pylist().index(True)
        raise BadRecordError(
            f"{settings.describe()}: timestamp_column {settings.timestamp_column!r} is null for row key "
            f"{keys[row]!r}: an event time is needed for replays to converge"
        )
    if pa.types.is_timestamp(array.type):
        return (epoch_micros(array) // 1000).tolist()  # microseconds -> HBase milliseconds (floor)
    return array.cast(pa.int64()).to_pylist()


#: HBase's limit on a row key's length (``HConstants.MAX_ROW_LENGTH``).
MAX_ROW_LENGTH = 32767


def known_refusal(sender: Sender, mutations: list[Any]) -> str | None:
    """Why HBase refuses the first of ``mutations`` that breaks one of its own checks (an empty row key, a row key
    longer than 32767 bytes, a negative timestamp), or None. The gateways report these as a bare "Internal error
    processing mutateRows/putMultiple", so the sink names the rule itself."""
    for mutation in mutations:
        key, stamp = sender.row_of(mutation), sender.timestamp_of(mutation)
        if not key:
            return "HBase refuses an empty row key"
        if len(key) > MAX_ROW_LENGTH:
            return f"row key {key[:40]!r}... is {len(key)} bytes, longer than HBase's limit of {MAX_ROW_LENGTH}"
        if stamp is not None and stamp < 0:
            return f"row key {key!r} has the negative timestamp {stamp} ms (timestamp_column), which HBase refuses"
    return None


#: Java exceptions that mean HBase refused the mutation itself (retrying it can not succeed).
_REFUSALS = (
    "IllegalArgumentException",
    "NoSuchColumnFamilyException",
    "FailedSanityCheckException",
    "DoNotRetryIOException",
    "KeyValue size too large",
    "Row length",
)


def is_refusal(error: BaseException) -> bool:
    """Whether a failed call means the gateway refused its mutations (bad row key, timestamp, family, cell size:
    each row is then tried alone and the refused ones are dead-lettered), as opposed to a transport failure, a
    timeout or a region that is unavailable (the task fails, Spark retries it)."""
    # lazy: happybase/thriftpy2 (the hbase extra) load only where the HBase sink runs
    from thriftpy2.thrift import TApplicationException

    if isinstance(error, TApplicationException):  # a RuntimeException in the gateway's handler (IllegalArgument...)
        return error.type == TApplicationException.INTERNAL_ERROR
    name = type(error).__name__
    if name in ("IllegalArgument", "TIllegalArgument"):
        return True
    if name in ("IOError", "TIOError"):
        return any(marker in error_text(error) for marker in _REFUSALS)
    return False


def _send_failed(
    settings: HBaseWriteTask, sender: Sender, mutations: list[Any], done: int, error: Exception
) -> SpytQueueError:
    """The error failing the task after a call failed (the connection is dropped: the next use reconnects)."""
    drop_connection(settings)
    why = known_refusal(sender, mutations) if is_refusal(error) else None
    return SpytQueueError(
        f"{settings.describe()}: writing {len(mutations)} row(s) from row key {sender.first_row(mutations)!r} "
        f"failed after {done} row(s) of this task were written ({type(error).__name__}: "
        f"{error_text(error)}{f'; {why}' if why else ''}); the task fails and Spark retries it or stops the query"
    )


def write_task(settings: HBaseWriteTask, batches: Iterator[pa.RecordBatch]) -> HBaseWriteCommit:
    """Write one task's rows in calls of at most ``batch_size`` rows; any failed call fails the task (with
    ``deadLetter.*``: see :func:`write_task_diverting`).

    Per Arrow batch the row keys, cell values and timestamps are computed column by column (:mod:`codec`); the
    only per-row Python work left is building the Thrift structs."""
    if settings.dead_letters is not None:
        return write_task_diverting(settings, batches, settings.dead_letters)
    types = {f.name: f.dataType for f in settings.schema.fields}
    sender = Sender(settings)
    commit = HBaseWriteCommit()
    done = 0

    def send(mutations: list[Any]) -> None:
        nonlocal done
        try:
            reconnecting(settings, lambda: sender.send(mutations))
        except Exception as error:
            raise _send_failed(settings, sender, mutations, done, error) from error
        done += len(mutations)

    pending: list[Any] = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        index = {name: i for i, name in enumerate(batch.schema.names)}
        keys = _row_keys(settings, batch, index, commit.rows + commit.empty_rows)
        stamps = _timestamps(settings, batch, keys)
        values = [encode_column(batch.column(index[column]), types[column]) for column, _ in settings.cells]
        mutations = sender.build(keys, values, stamps)
        commit.empty_rows += batch.num_rows - len(mutations)
        commit.rows += len(mutations)
        commit.cells += sum(len(v) - v.count(None) for v in values) if values else 0
        pending.extend(mutations)
        while len(pending) >= settings.batch_size:
            send(pending[: settings.batch_size])
            del pending[: settings.batch_size]
    if pending:
        send(pending)
    return commit


@dataclass
class _Pending:
    """A mutation waiting to be sent, with what its dead letter would need."""

    mutation: Any
    where: tuple[str, int]
    batch: pa.RecordBatch
    index: int


def _null_reasons(settings: HBaseWriteTask, batch: pa.RecordBatch) -> dict[int, str]:
    """Rows of ``batch`` that can not become a put: a null row-key part or event time, with the reason."""
    reasons: dict[int, str] = {}
    checks = [(c, f"row-key column {c!r} is null") for c in settings.key_columns]
    if settings.timestamp_column is not None:
        checks.append(
            (settings.timestamp_column, f"timestamp_column {settings.timestamp_column!r} is null (an event time is "
             "needed for replays to converge)")
        )  # fmt: skip
    for column, reason in checks:
        array = batch.column(batch.schema.get_field_index(column))
        if array.null_count:
            for row, null in enumerate(array.is_null().to_pylist()):
                if null:
                    reasons.setdefault(row, reason)
    return reasons


def write_task_diverting(
    settings: HBaseWriteTask, batches: Iterator[pa.RecordBatch], dead: BoundDeadLetters
) -> HBaseWriteCommit:
    """:func:`write_task` with a dead-letter target: rows with a null row-key part or event time, rows whose values
    can not be encoded, and puts HBase refuses (a failed call whose error is a refusal, :func:`is_refusal`, is sent
    again row by row; the rows refused alone) are written to ``dead`` with their coordinates, the error and the
    row as it arrived, durably before the task returns. Any other failure (transport, timeout, region unavailable,
    the dead-letter target) fails the task."""
    types = {f.name: f.dataType for f in settings.schema.fields}
    sender = Sender(settings)
    commit = HBaseWriteCommit()
    letters = DeadLetterCollector(dead)
    position = 0
    what = settings.describe()

    def send(chunk: list[_Pending]) -> None:
        mutations = [p.mutation for p in chunk]
        try:
            reconnecting(settings, lambda: sender.send(mutations))
        except Exception as error:
            if not is_refusal(error):
                raise _send_failed(settings, sender, mutations, commit.rows, error) from error
            for one in chunk:  # a refused put-list may be partly applied: puts are idempotent, send each again
                try:
                    reconnecting(settings, lambda m=one.mutation: sender.send([m]))
                except Exception as alone:
                    if not is_refusal(alone):
                        raise _send_failed(settings, sender, [one.mutation], commit.rows, alone) from alone
                    why = known_refusal(sender, [one.mutation]) or f"{type(alone).__name__}: {error_text(alone)}"
                    key = sender.row_of(one.mutation)
                    message = f"{what} refused the put of row key {key[:100]!r}: {why}"
                    letters.add_batch_row(one.where, message, one.batch, one.index)
                    continue
                commit.rows += 1
                commit.cells += sender.cells_of(one.mutation)
            return
        commit.rows += len(chunk)
        commit.cells += sum(sender.cells_of(p.mutation) for p in chunk)

    def encoded(batch: pa.RecordBatch) -> tuple[list[bytes], list[int] | None, list[list[bytes | None]]]:
        index = {name: i for i, name in enumerate(batch.schema.names)}
        keys = _row_keys(settings, batch, index, 0)
        stamps = _timestamps(settings, batch, keys)
        values = [encode_column(batch.column(index[column]), types[column]) for column, _ in settings.cells]
        return keys, stamps, values

    pending: list[_Pending] = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        where = batch_coordinates(batch, position)
        position += batch.num_rows
        bad = _null_reasons(settings, batch)
        for row, reason in sorted(bad.items()):
            letters.add_batch_row(where[row], f"{what}: {reason}", batch, row)
        rows = [r for r in range(batch.num_rows) if r not in bad]
        if bad:
            batch = batch.take(pa.array(rows, pa.int64()))
            where = [where[r] for r in rows]
        try:
            parts = [(batch, where, encoded(batch))]
        except Exception:  # some value does not encode: find it row by row
            parts = []
            for row in range(batch.num_rows):
                one = batch.slice(row, 1)
                try:
                    parts.append((one, where[row : row + 1], encoded(one)))
                except Exception as error:
                    letters.add_batch_row(where[row], f"{what}: {error}", one, 0)
        for part, part_where, (keys, stamps, values) in parts:
            mutations = sender.build(keys, values, stamps)
            kept = [r for r in range(part.num_rows) if any(v[r] is not None for v in values)]
            commit.empty_rows += part.num_rows - len(kept)
            pending.extend(_Pending(m, part_where[r], part, r) for m, r in zip(mutations, kept, strict=True))
        while len(pending) >= settings.batch_size:
            send(pending[: settings.batch_size])
            del pending[: settings.batch_size]
    if pending:
        send(pending)
    commit.dead_letters = letters.flush()  # durable before the task reports success
    return commit


def _summary(messages: Sequence[WriterCommitMessage | None]) -> str:
    done = finished(messages, HBaseWriteCommit)
    return f"{sum(m.rows for m in done)} row(s), {sum(m.cells for m in done)} cell(s) from {len(done)} task(s)"


def _prepared(options: Options, schema: T.StructType) -> HBaseWriteTask:
    settings = settings_from_options(options, schema)
    check_table(settings)
    return settings


def hbase_stream_writer(options: Options, schema: T.StructType, overwrite: bool) -> SinkStreamWriter:
    """The streaming sink: options checked, table (and dead-letter target) checked or created, on the driver;
    complete mode is refused (HBase has no truncate here)."""
    return stream_writer(HBASE_SINK, overwrite, lambda: _prepared(options, schema))


def hbase_batch_writer(options: Options, schema: T.StructType, overwrite: bool) -> SinkBatchWriter:
    """The batch sink (``mode('append')`` only)."""
    return batch_writer(HBASE_SINK, overwrite, lambda: _prepared(options, schema))
