"""Writing Arrow record batches into YT dynamic tables: schema check, value conversion, batching.

Ordered tables get appends (a ``$tablet_index`` column picks the tablet), sorted tables get upserts. Every
``insert_rows`` call of at most ``dyn_batch_size`` rows is its own atomic tablet transaction. With a
``producer_path``, rows go through a queue producer session per source tablet with the source row index as
sequence number, so a replayed batch is skipped by YT itself (exactly-once into ordered tables). Appends and upserts
of plain columns (signed integers, floats, booleans, strings, binaries) are sent as binary YSON built column by
column (:mod:`spyt_queue.yt.yson_rows`); other types, dead letters and producer pushes go through Python values.

YT skips every row at or below a session's last sequence number, so a push that jumps ahead of the session
would make the rows in between unwritable for good. Before pushing anything, each task therefore checks every
source tablet it holds: its rows are contiguous, and they either continue the session (first new row = last + 1)
or replay rows the session already wrote. Rows below the first row a session ever wrote (its ``origin``, kept
in the session's ``user_meta``) were never written through it; they go through a session of their own,
``<session>-before-<origin>``, so a fresh session opened by a tablet's later rows never loses the earlier ones.

Nulls in required columns are refused before YT sees them: every Arrow batch is checked (``null_count`` per
column, free) before any of its rows is converted or sent. Appends and upserts send a chunk only once it is full
or the task's input is exhausted, so a task whose rows fit in one chunk writes nothing; in a larger task the chunks
sent before the Arrow batch holding the null stay written, and the error says how many rows that is. Producer
sessions push only after every batch of the task was read, so a task with a null pushes nothing.
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
import yt.yson as yson
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NullType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)
from yt.wrapper import YsonFormat, YtClient

from spyt_queue.deadletter import DeadLetterCollector
from spyt_queue.errors import BadRecordError, ProducerSequenceError, SchemaMismatchError
from spyt_queue.records import (
    SERVICE_ROW_COLUMN,
    SERVICE_TABLET_COLUMN,
    batch_coordinates,
    describe_record,
    first_null,
    source_of,
    task_label,
)
from spyt_queue.yt.backend import skip_empty_proxy_discovery
from spyt_queue.yt.client import YtConnection
from spyt_queue.yt.errors import has_code, is_transient_yt_error
from spyt_queue.yt.nested_values import has_temporal, to_yt_value
from spyt_queue.yt.schema import YtColumn, YtSchema
from spyt_queue.yt.yson_rows import encodable, encode_rows, fragment

log = logging.getLogger("spyt_queue.write")

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)
_WIDTH = {ByteType: 8, ShortType: 16, IntegerType: 32, LongType: 64}
ZOMBIE_EPOCH = 3102  # a newer create_queue_producer_session of the same session fenced this one off
DEFAULT_SESSION_PREFIX = "spyt-queue"
_MAX_SESSION_DEPTH = 64
_MAX_FENCED_RETRIES = 8  # reopens of a session after being fenced off by a concurrent task
_SPLIT_HINT = (
    "exactly-once writes through producer sessions need each source tablet's rows of a micro-batch in one task, "
    "so do not combine this sink with the source options maxRecordsPerPartition/minPartitions or a "
    "repartition/shuffle before it; if the gap is expected (a filter, rows trimmed with failOnDataLoss=false, a "
    "consumer moved ahead), set producer_allow_gaps=true"
)
_BINARY_YSON = YsonFormat(format="binary")
_YT_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


def _compatible(spark: DataType, column: YtColumn) -> bool:
    if isinstance(spark, NullType):
        return not column.required  # an always-null column fits any optional column; required ones: see check_schema
    t = column.base_type
    if isinstance(t, dict) and t.get("type_name") == "tagged":
        t = t["item"]
    if isinstance(t, dict):
        if t.get("type_name") == "decimal":
            return isinstance(spark, (DecimalType, BinaryType))
        return True  # composite: YSON bytes or a nested Spark value, checked when written
    if t in _YT_INT_BITS:
        bits = _YT_INT_BITS[t]
        # Unsigned columns read back as the next wider signed type (uint32 -> bigint): accept that, range-checked.
        limit = min(64, 2 * bits) if t.startswith("u") else bits
        return isinstance(spark, _INTEGRAL) and _WIDTH[type(spark)] <= limit
    if t in ("double", "float"):
        return isinstance(spark, (FloatType, DoubleType) if t == "double" else (FloatType,)) or (
            t == "double" and isinstance(spark, _INTEGRAL)
        )
    if t in ("bool", "boolean"):
        return isinstance(spark, BooleanType)
    if t in ("string",):
        return isinstance(spark, (StringType, BinaryType))
    if t in ("utf8", "json"):
        return isinstance(spark, StringType)
    if t in ("yson", "any"):
        return True
    if t in ("timestamp", "timestamp64", "datetime", "datetime64"):
        return isinstance(spark, (TimestampType, TimestampNTZType)) or isinstance(spark, LongType)
    if t in ("date", "date32"):
        return isinstance(spark, DateType) or isinstance(spark, IntegerType)
    if t in ("interval", "interval64"):
        return isinstance(spark, _INTEGRAL)
    if t == "uuid":
        return isinstance(spark, (BinaryType, StringType))
    return False


def check_schema(df_schema: StructType, table: YtSchema, path: str, drop: Iterable[str] = ()) -> None:
    """Fail before writing anything if the DataFrame does not fit the table; the message lists every problem."""
    problems: list[str] = []
    dropped = set(drop)
    names = set()
    for f in df_schema.fields:
        if f.name in dropped:
            continue
        names.add(f.name)
        if f.name == "$tablet_index":
            if table.sorted:
                problems.append("column '$tablet_index' only applies to ordered tables")
            elif not isinstance(f.dataType, _INTEGRAL):
                problems.append("column '$tablet_index' must be an integer")
            continue
        column = table.column(f.name)
        if column is None:
            if table.strict:
                problems.append(f"column {f.name!r} ({f.dataType.simpleString()}) is not in the table schema")
            continue
        if isinstance(f.dataType, NullType) and column.required:
            problems.append(
                f"column {f.name!r} is always null (void) in the DataFrame but required ({column.type_text}) in the "
                "table"
            )
        elif not _compatible(f.dataType, column):
            problems.append(
                f"column {f.name!r} is {f.dataType.simpleString()} in the DataFrame but {column.type_text} in the table"
            )
    for column in table.columns:
        if column.name.startswith("$"):
            continue
        if column.name not in names and (column.required or column.sort_order):
            what = "required column" if column.required else "key column"  # an optional key column may hold nulls
            problems.append(f"{what} {column.name!r} ({column.type_text}) is missing from the DataFrame")
    if problems:
        raise SchemaMismatchError(
            f"The DataFrame does not fit {path}: " + "; ".join(problems) + ". Nothing was written."
        )


def encode_yt_decimal(value: Decimal, precision: int, scale: int) -> bytes:
    """YT's binary decimal: big-endian two's complement of the unscaled value with the sign bit inverted."""
    size = 4 if precision <= 9 else 8 if precision <= 18 else 16 if precision <= 38 else 32
    unscaled = int(value.scaleb(scale).to_integral_value())
    return (unscaled + (1 << (8 * size - 1))).to_bytes(size, "big")


@dataclass
class _Push:
    """Rows of one source tablet to push through one producer session (planned before anything is pushed)."""

    tablet: int
    session: str
    epoch: int
    rows: list[tuple[int, dict[str, Any]]]
    user_meta: dict[str, Any] | None


class _Fenced(Exception):
    """A push refused because a newer open of its producer session fenced off this epoch; carries the rows not
    pushed yet."""

    def __init__(self, rows: list[tuple[int, dict[str, Any]]]) -> None:
        super().__init__(f"fenced off before row {rows[0][0]}")
        self.rows = rows


def _origin(user_meta: Any) -> int | None:
    """The first sequence number a session ever wrote, as recorded by this writer in its ``user_meta``."""
    if not isinstance(user_meta, dict):
        return None
    value = user_meta.get("origin", user_meta.get(b"origin"))
    return None if value is None else int(value)


@dataclass
class WriteStats:
    """Rows written by one task, per target."""

    rows: int = 0
    skipped: int = 0
    requests: int = 0
    tablets: dict[int, tuple[int, int]] = field(default_factory=dict)  # source tablet -> (first, last) row
    dead_letters: int = 0  # rows diverted to the dead-letter target (deadLetter.*)


class YtTableWriter:
    """Writes record batches into one YT dynamic table (picklable; the client is created per process)."""

    #: Where rows the table refuses go (``deadLetter.*``, a :class:`~spyt_queue.deadletter.BoundDeadLetters`);
    #: ``None``: a bad row fails the task.
    dead_letters: Any = None

    def __init__(
        self,
        connection: YtConnection,
        path: str,
        table: YtSchema,
        dyn_batch_size: int = 50_000,
        producer_path: str | None = None,
        producer_session_prefix: str | None = DEFAULT_SESSION_PREFIX,
        keep_service_columns: bool | None = None,
        allow_gaps: bool = False,
    ) -> None:
        """``producer_session_prefix`` None means: chosen per task by the caller of :meth:`write`;
        ``allow_gaps`` lets producer pushes skip source rows (filters, trimmed rows), at the price that rows of a
        source tablet split across tasks can then be lost."""
        self.connection = connection
        self.path = path
        self.table = table
        self.dyn_batch_size = dyn_batch_size
        self.producer_path = producer_path
        self.producer_session_prefix = producer_session_prefix
        self.allow_gaps = allow_gaps
        in_table = table.column(SERVICE_TABLET_COLUMN) is not None
        self.keep_service_columns = in_table if keep_service_columns is None else keep_service_columns

    @property
    def client(self) -> YtClient:
        """The process-wide cached client (without a ``/hosts`` round trip before every ``insert_rows`` when the
        proxy lists no heavy proxies, as the source's executors do)."""
        client = self.connection.client()
        skip_empty_proxy_discovery(client)
        return client

    @property
    def push_client(self) -> YtClient:
        """The client of ``push_queue_producer`` calls: uncompressed bodies, so a retry resends every row (see
        :meth:`YtConnection.push_client`)."""
        client = self.connection.push_client()
        skip_empty_proxy_discovery(client)
        return client

    def dropped_columns(self) -> list[str]:
        """DataFrame columns not written to the table (service columns used only for producer sequencing)."""
        return [] if self.keep_service_columns else [SERVICE_TABLET_COLUMN, SERVICE_ROW_COLUMN]

    # -- null checks ---------------------------------------------------------------------------------------
    def _not_null_columns(self, batch: pa.RecordBatch) -> list[str]:
        """Columns of ``batch`` that must not hold nulls: the table's required columns (keys included), and the
        source's service columns when they sequence producer pushes."""
        names = [n for n in batch.schema.names if n not in self.dropped_columns()]
        required = [n for n in names if (c := self.table.column(n)) is not None and c.required]
        if self.producer_path:
            required += [n for n in (SERVICE_TABLET_COLUMN, SERVICE_ROW_COLUMN) if n in batch.schema.names]
        return required

    def check_nulls(self, batch: pa.RecordBatch, first_row: int, written: str) -> None:
        """Raise :class:`BadRecordError` if ``batch`` holds a null where the table requires a value.

        ``first_row`` is the task position of the batch's first row; ``written`` says what the task has already
        written (the message's last sentence). Only ``null_count`` is read unless there is a null."""
        nulls = {name: first_null(batch.column(name)) for name in self._not_null_columns(batch)}
        bad = [(name, pos) for name, pos in nulls.items() if pos is not None]
        if not bad:
            return
        name, position = min(bad, key=lambda item: (item[1], batch.schema.names.index(item[0])))
        column = self.table.column(name)
        what = f"required column {name!r} ({column.type_text})" if column is not None else f"service column {name!r}"
        others = sorted({n for n, _ in bad} - {name})
        also = f"; nulls in required column(s) {', '.join(map(repr, others))} too" if others else ""
        raise BadRecordError(
            f"Null in {what} of {self.path}: row {first_row + position} of {task_label()}"
            f"{source_of(batch, position)}, record {describe_record(batch, position)}{also}. {written}"
        )

    def _written_so_far(self, stats: WriteStats) -> str:
        if stats.rows == 0:
            return "Nothing of this task was written."
        verb = "upserted" if self.table.sorted else "appended"
        requests = f"{stats.requests} insert_rows request{'' if stats.requests == 1 else 's'}"
        return (
            f"This task had already {verb} its first {stats.rows} rows ({requests} of at most "
            f"dyn_batch_size={self.dyn_batch_size} rows); nothing after them was written."
        )

    # -- conversion ----------------------------------------------------------------------------------------
    def _prepare(self, batch: pa.RecordBatch, first_row: int = 0) -> list[dict[str, Any]]:
        columns: dict[str, list[Any]] = {}
        for name, array in zip(batch.schema.names, batch.columns, strict=True):
            column = self.table.column(name)
            columns[name] = self._convert(array, column, first_row)
        names = list(columns)
        return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]

    def _convert(self, array: pa.Array, column: YtColumn | None, first_row: int = 0) -> list[Any]:
        t = column.base_type if column is not None else None
        if pa.types.is_timestamp(array.type):
            micros = array.cast(pa.int64())
            if t in ("datetime", "datetime64"):
                return [None if v is None else v // 1_000_000 for v in micros.to_pylist()]
            return micros.to_pylist()
        if pa.types.is_date32(array.type):
            return array.cast(pa.int32()).to_pylist()
        values = array.to_pylist()
        if t in ("uint8", "uint16", "uint32", "uint64"):
            top = 1 << _YT_INT_BITS[t]
            for position, v in enumerate(values):
                if v is not None and not 0 <= v < top:
                    raise BadRecordError(
                        f"row {first_row + position} of {task_label()}: column {column.name!r} holds {v}, "
                        f"outside the range of YT type {t} [0, {top})"
                    )
            return [None if v is None else yson.YsonUint64(v) for v in values]
        if t in ("yson", "any") and pa.types.is_binary(array.type):
            return [None if v is None else yson.loads(v) for v in values]
        if isinstance(t, dict) and t.get("type_name") == "decimal" and pa.types.is_binary(array.type):
            return values  # already YT's binary decimal (read without parsing_type_v3)
        if isinstance(t, dict) and t.get("type_name") == "decimal" and pa.types.is_decimal(array.type):
            p, s = int(t["precision"]), int(t["scale"])
            return [None if v is None else encode_yt_decimal(v, p, s) for v in values]
        if isinstance(t, dict) and pa.types.is_binary(array.type):
            return [None if v is None else yson.loads(v) for v in values]
        if isinstance(t, dict) and has_temporal(t):
            return [to_yt_value(v, t) for v in values]
        return values

    # -- writing -------------------------------------------------------------------------------------------
    def write(self, batches: Iterator[pa.RecordBatch], session_prefix: str | None = None) -> WriteStats:
        """Write every batch; with a producer, through per-source-tablet producer sessions named
        ``<prefix>-<tablet>`` (``session_prefix`` when given, else the writer's, else ``spyt-queue``)."""
        stats = WriteStats()
        if self.producer_path:
            prefix = session_prefix or self.producer_session_prefix or DEFAULT_SESSION_PREFIX
            self._write_through_producer(batches, stats, prefix)
            return stats
        if self.dead_letters is None:
            batches, fast = self._fast_path(batches)
            if fast:
                self._write_encoded(batches, stats)
                return stats
        pending: list[dict[str, Any]] = []
        position = 0
        letters = None if self.dead_letters is None else DeadLetterCollector(self.dead_letters)
        coordinates: list[tuple[str, int]] = []  # of the pending rows, with dead letters
        for batch in batches:
            if letters is not None:
                pending.extend(self._prepare_diverting(batch, position, letters, coordinates))
            else:
                self.check_nulls(batch, position, self._written_so_far(stats))
                pending.extend(self._prepare(self._drop(batch), position))
            position += batch.num_rows
            while len(pending) >= self.dyn_batch_size:
                self._insert(pending[: self.dyn_batch_size], stats, letters, coordinates[: self.dyn_batch_size])
                pending, coordinates = pending[self.dyn_batch_size :], coordinates[self.dyn_batch_size :]
        if pending:
            self._insert(pending, stats, letters, coordinates)
        if letters is not None:  # durable before the task returns: the batch commits only after them
            stats.dead_letters += letters.flush()
        return stats

    def _fast_path(self, batches: Iterator[pa.RecordBatch]) -> tuple[Iterator[pa.RecordBatch], bool]:
        """Whether the task's rows can be encoded to YSON column by column (:mod:`spyt_queue.yt.yson_rows`): every
        written column is of a plain Arrow type (signed integers, floats, booleans, strings, binaries) and goes
        to a column that takes such values as they are (not unsigned, ``yson``/``any``, decimal or composite).
        Peeks at the first batch; returns the batches (that one included) and the answer."""
        first = next(batches, None)
        if first is None:
            return iter(()), False
        rest = itertools.chain([first], batches)
        for name, data_type in zip(first.schema.names, first.schema.types, strict=True):
            if name in self.dropped_columns():
                continue
            if not encodable(data_type):
                return rest, False
            column = self.table.column(name)
            t = column.base_type if column is not None else None
            if isinstance(t, dict) or (t in _YT_INT_BITS and t.startswith("u")) or t in ("yson", "any"):
                return rest, False
        return rest, True

    def _write_encoded(self, batches: Iterator[pa.RecordBatch], stats: WriteStats) -> None:
        """:meth:`write` for plain columns: each Arrow batch becomes binary YSON rows without Python values, sent
        in ``insert_rows`` requests of ``dyn_batch_size`` rows as raw YSON list fragments."""
        pending: list[pa.Array] = []
        count = 0
        position = 0
        for batch in batches:
            self.check_nulls(batch, position, self._written_so_far(stats))
            position += batch.num_rows
            if batch.num_rows == 0:
                continue
            pending.append(encode_rows(self._drop(batch)))
            count += batch.num_rows
            while count >= self.dyn_batch_size:
                merged = pa.concat_arrays(pending) if len(pending) > 1 else pending[0]
                self._insert_encoded(merged.slice(0, self.dyn_batch_size), stats)
                pending, count = [merged.slice(self.dyn_batch_size)], count - self.dyn_batch_size
        if count:
            self._insert_encoded(pa.concat_arrays(pending) if len(pending) > 1 else pending[0], stats)

    def _insert_encoded(self, rows: pa.Array, stats: WriteStats) -> None:
        try:
            self.client.insert_rows(
                self.path, fragment(rows), update=True if self.table.sorted else None, raw=True, format=_BINARY_YSON
            )
        except Exception as error:
            if is_transient_yt_error(error):
                raise
            first = next(iter(yson.loads(fragment(rows.slice(0, 1)), yson_type="list_fragment")), None)
            raise BadRecordError(
                f"insert_rows of {len(rows)} rows into {self.path} failed (first row {first!r}): {error}"
            ) from error
        stats.rows += len(rows)
        stats.requests += 1

    def _drop(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        drop = [n for n in self.dropped_columns() if n in batch.schema.names]
        return batch.drop_columns(drop) if drop else batch

    def _insert(
        self,
        rows: list[dict[str, Any]],
        stats: WriteStats,
        letters: DeadLetterCollector | None = None,
        coordinates: list[tuple[str, int]] | None = None,
    ) -> None:
        try:
            self.client.insert_rows(self.path, rows, update=True if self.table.sorted else None)
        except Exception as error:
            if is_transient_yt_error(error):
                raise
            if letters is not None and coordinates is not None:
                self._insert_one_by_one(rows, stats, letters, coordinates)  # the refused request wrote nothing
                return
            raise BadRecordError(
                f"insert_rows of {len(rows)} rows into {self.path} failed (first row {rows[0]!r}): {error}"
            ) from error
        stats.rows += len(rows)
        stats.requests += 1

    # -- dead letters (deadLetter.*): bad rows are diverted instead of failing the task ---------------------
    def _prepare_diverting(
        self,
        batch: pa.RecordBatch,
        first_row: int,
        letters: DeadLetterCollector,
        coordinates: list[tuple[str, int]],
    ) -> list[dict[str, Any]]:
        """:meth:`_prepare` for a batch whose rows that hold a null in a required column or a value out of range
        are added to ``letters`` instead of failing the task; the kept rows' coordinates go to ``coordinates``."""
        where = batch_coordinates(batch, first_row)
        try:
            self.check_nulls(batch, first_row, "")
            rows = self._prepare(self._drop(batch), first_row)
            coordinates.extend(where)
            return rows
        except BadRecordError:
            pass
        rows = []
        for position in range(batch.num_rows):
            one = batch.slice(position, 1)
            try:
                self.check_nulls(one, first_row + position, "The row was dead-lettered.")
                rows.extend(self._prepare(self._drop(one), first_row + position))
                coordinates.append(where[position])
            except BadRecordError as error:
                letters.add_batch_row(where[position], error, one, 0)
        return rows

    def _insert_one_by_one(
        self,
        rows: list[dict[str, Any]],
        stats: WriteStats,
        letters: DeadLetterCollector,
        coordinates: list[tuple[str, int]],
    ) -> None:
        """After a refused ``insert_rows`` (which wrote nothing): insert row by row, dead-lettering the rows the
        table refuses on their own."""
        for row, where in zip(rows, coordinates, strict=True):
            try:
                self.client.insert_rows(self.path, [row], update=True if self.table.sorted else None)
            except Exception as error:
                if is_transient_yt_error(error):
                    raise
                letters.add(where, f"insert_rows into {self.path} refused the row: {error}", row)
                continue
            stats.rows += 1
            stats.requests += 1

    def _write_through_producer(self, batches: Iterator[pa.RecordBatch], stats: WriteStats, prefix: str) -> None:
        by_tablet: dict[int, list[tuple[int, dict[str, Any]]]] = {}
        position = 0
        for batch in batches:
            names = batch.schema.names
            if SERVICE_TABLET_COLUMN not in names or SERVICE_ROW_COLUMN not in names:
                raise SchemaMismatchError(
                    "exactly-once writes through a producer need the source's service columns: read with "
                    "include_service_columns=true and keep __spyt_streaming_src_tablet_index/_row_index"
                )
            # Nothing is pushed before every batch of the task was read: a null anywhere means nothing written.
            self.check_nulls(batch, position, "Nothing of this task was pushed.")
            tablets = batch.column(SERVICE_TABLET_COLUMN).to_pylist()
            indexes = batch.column(SERVICE_ROW_COLUMN).to_pylist()
            rows = self._prepare(self._drop(batch), position)
            position += batch.num_rows
            for tablet, index, row in zip(tablets, indexes, rows, strict=True):
                by_tablet.setdefault(int(tablet), []).append((int(index), row))
        # Check every tablet against its session before pushing anything: a refused task writes nothing.
        plan: list[_Push] = []
        for tablet, items in sorted(by_tablet.items()):
            items.sort(key=lambda item: item[0])
            self._check_task_rows(tablet, items)
            plan.extend(self._plan(tablet, items, f"{prefix}-{tablet}", 0))
        for push in plan:
            self._run_push(push, stats)
        for tablet, items in by_tablet.items():
            stats.tablets[tablet] = (items[0][0], items[-1][0])

    def _check_task_rows(self, tablet: int, items: list[tuple[int, dict[str, Any]]]) -> None:
        """A tablet's rows in one task: no source row twice, and contiguous unless gaps are allowed."""
        for (previous, _), (index, _) in itertools.pairwise(items):
            if index == previous:
                raise ProducerSequenceError(
                    f"Exactly-once write into {self.path} refused: row {index} of source tablet {tablet} appears "
                    "twice in this task; producer sessions need a one-to-one pipeline (no explode, join or union "
                    "multiplying rows). Nothing was written by this task."
                )
            if index != previous + 1 and not self.allow_gaps:
                raise ProducerSequenceError(
                    f"Exactly-once write into {self.path} refused for source tablet {tablet}: expected row "
                    f"{previous + 1} after row {previous} in this task, found row {index}; the rows in between are "
                    f"in another task or missing, and YT would skip them for good once this task pushed: "
                    f"{_SPLIT_HINT}. Nothing was written by this task."
                )

    def _plan(self, tablet: int, items: list[tuple[int, dict[str, Any]]], session: str, depth: int) -> list[_Push]:
        """Open ``session`` and decide what to push through it; raise before any push if rows would be lost."""
        if depth > _MAX_SESSION_DEPTH:
            raise ProducerSequenceError(
                f"Exactly-once write into {self.path} refused for source tablet {tablet}: more than "
                f"{_MAX_SESSION_DEPTH} nested producer sessions below {session!r}: {_SPLIT_HINT}"
            )
        info = self.client.create_queue_producer_session(self.producer_path, self.path, session)
        epoch, last = int(info["epoch"]), int(info.get("sequence_number", -1))
        if last < 0:
            # A fresh session has no sequence yet: the query may start anywhere (its consumer's position), so the
            # first push is trusted; its first row is recorded so rows below it are never taken for replays.
            return [_Push(tablet, session, epoch, items, {"origin": items[0][0]})]
        origin = _origin(info.get("user_meta"))
        below = [item for item in items if origin is not None and item[0] < origin]
        rest = items[len(below) :]
        plan: list[_Push] = []
        if below:
            assert origin is not None
            plan.extend(self._plan(tablet, below, f"{session}-before-{origin}", depth + 1))
        if rest:
            new = [index for index, _ in rest if index > last]
            if new and new[0] != last + 1 and not self.allow_gaps:
                raise ProducerSequenceError(
                    f"Exactly-once write into {self.path} refused for source tablet {tablet}: expected row "
                    f"{last + 1} (producer session {session!r} last wrote row {last}) but found row {new[0]} as "
                    f"this task's first new row; the rows in between are in another task that has not written them "
                    f"yet, and YT would skip them for good once this task pushed: {_SPLIT_HINT}. Nothing was "
                    f"written by this task."
                )
            plan.append(_Push(tablet, session, epoch, rest, None))
        return plan

    def _run_push(self, push: _Push, stats: WriteStats, fenced_before: int = 0) -> None:
        """Push planned rows; when another task's open of the same session fenced this one off (tasks of a split
        tablet, or of a replay, run at once), reopen the session and plan the rows not yet pushed again: rows it
        already holds are skipped, rows below its origin go to the session below, a gap is refused as before."""
        try:
            self._push(push, stats)
        except _Fenced as fenced:
            if fenced_before >= _MAX_FENCED_RETRIES:
                raise ProducerSequenceError(
                    f"Exactly-once write into {self.path} stopped for source tablet {push.tablet}: other tasks kept "
                    f"opening producer session {push.session!r} while this one was pushing ({_MAX_FENCED_RETRIES} "
                    f"reopens; rows it pushed before row {fenced.rows[0][0]} stay written, a replay continues after "
                    f"them): {_SPLIT_HINT}"
                ) from fenced.__cause__
            log.info("producer session %r was reopened by another task; planning again", push.session)
            time.sleep(random.uniform(0.02, 0.1) * (fenced_before + 1))
            for again in self._plan(push.tablet, fenced.rows, push.session, 0):
                self._run_push(again, stats, fenced_before + 1)

    def _push(self, push: _Push, stats: WriteStats) -> None:
        for first in range(0, len(push.rows), self.dyn_batch_size):
            chunk = push.rows[first : first + self.dyn_batch_size]
            rows = [{**row, "$sequence_number": index} for index, row in chunk]
            meta = push.user_meta if first == 0 else None
            try:
                result = self.push_client.push_queue_producer(
                    self.producer_path, self.path, push.session, push.epoch, rows, user_meta=meta
                )
            except Exception as error:
                if has_code(error, ZOMBIE_EPOCH):
                    raise _Fenced(push.rows[first:]) from error
                raise
            skipped = int(result.get("skipped_row_count", 0)) if isinstance(result, dict) else 0
            stats.skipped += skipped
            stats.rows += len(rows) - skipped
            stats.requests += 1
