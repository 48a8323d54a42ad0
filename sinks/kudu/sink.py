"""The Kudu sink: ``writeStream.format("spyt_kudu")`` (and ``df.write``), one planner per key, applied per task.

Per task (on an executor): read the task's rows (Arrow batches), group them by the planner's key, fetch the stored
rows of those keys (one scan per 1000 keys, IN-list predicates on the key columns; skipped for ``upsert``), plan with
:func:`~spyt_queue.sinks.kudu.planners.plan_batch`, apply every mutation in one session and flush it once (the
DELETEs of ``history`` merges in a second flush, after the rows replacing them); any refused row fails the task
(:class:`~spyt_queue.sinks.kudu.client.KuduWriteError` names the first ones), nothing is dropped. The task's
commit message carries the keys it planned.

**Rows of one key must be planned in one task.** A Python data source writer cannot repartition its input, so the
stream must be partitioned by the key before the sink: ``df.repartition(*key_columns)`` (see :func:`by_key`). The
sink checks it: the driver's commit compares the keys of all tasks of the batch and, if one key was planned by two
tasks, fails the batch naming the key and the tasks (the batch is not committed; after fixing the query, its
replay re-plans those keys together, which the idempotent planners turn into the right state). ``key_check=false``
skips the check (the keys then stay on the executors).

Exactly-once state: planners make a replayed batch write nothing (``upsert`` writes the same rows again), so
at-least-once delivery (the source's committed positions move only after this sink committed) gives exactly-once
table state.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage
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
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from spyt_queue.collector import gc_paused
from spyt_queue.deadletter import BoundDeadLetters, DeadLetterCollector
from spyt_queue.deadletter_targets import sink_dead_letters
from spyt_queue.errors import BadRecordError, OptionError, SchemaMismatchError
from spyt_queue.kafka.options import SUBSCRIPTION_OPTIONS
from spyt_queue.options import WRITE, Option, Options
from spyt_queue.records import row_coordinates
from spyt_queue.sink_options import check_sink_options
from spyt_queue.spark.sink_skeleton import (
    SinkBatchWriter,
    SinkFormat,
    SinkStreamWriter,
    WriteTask,
    batch_writer,
    finished,
    stream_writer,
)
from spyt_queue.yt.declarations import YT_SOURCE_OPTIONS

from .client import ColumnSpec, KuduTableNotFoundError, KuduWriteError, get_client
from .mutations import Key, Mutation, MutationKind, format_key, key_of
from .planners import PLANNERS, HistoryPlanner, LatestPlanner, Planner, group_rows, plan_groups, planner_from_options

__all__ = [
    "FORMAT",
    "KUDU_SINK_OPTIONS",
    "KuduWriteCommit",
    "KuduWriteTask",
    "by_key",
    "check_one_task_per_key",
    "kudu_batch_writer",
    "kudu_stream_writer",
    "spark_to_kudu_type",
    "write_task",
]

FORMAT = "spyt_kudu"
KUDU_SINK = SinkFormat(FORMAT, "plans rows into the table", stream_modes="append")
log = logging.getLogger("spyt_queue.kudu")

_W = (WRITE,)
KUDU_MASTER = Option("kudu.master", "master addresses (host:7051[,host2:7051]), required", modes=_W)
TABLE = Option("table", "the Kudu table (or save(<table>))", modes=_W)
PLANNER = Option(
    "planner",
    "append, upsert, latest (Type I, event-time upsert) or history (Type II)",
    kind="choice",
    default="upsert",
    choices=tuple(PLANNERS),
    modes=_W,
)
PLANNER_COLUMNS = Option("planner.", "the planner's columns (see the planners table)", kind="prefix", modes=_W)
CREATE_TABLE = Option(
    "create_table",
    "create a missing table keyed by the planner's primary key, with the maintained columns",
    kind="bool",
    default=False,
    modes=_W,
)
HASH_COLUMNS = Option("create_table.hash_columns", "hash-partitioning columns of a created table (the key)", modes=_W)
HASH_BUCKETS = Option(
    "create_table.hash_buckets", "hash buckets of a created table", kind="int", default=2, minimum=2, modes=_W
)
RANGE_COLUMNS = Option("create_table.range_columns", "range-partitioning columns of a created table", modes=_W)
RANGE_SPLITS = Option(
    "create_table.range_splits", "split rows of a created table's ranges (JSON list of lists)", kind="json", modes=_W
)
REPLICAS = Option(
    "create_table.replicas", "replicas of a created table (the master's replication)", kind="int", modes=_W
)
KEY_CHECK = Option(
    "key_check", "the batch fails if a key was planned by two tasks", kind="bool", default=True, modes=_W
)
KUDU_JARS = Option("kudu.jars", "client jars for executors", modes=_W)
SCAN_BATCH = Option("scan_batch", "keys per scan", kind="int", default=1000, modes=_W)
#: Every option the sink reads (``planner.*`` checked by the planner); Spark adds path/checkpointLocation/queryName.
KUDU_SINK_OPTIONS = (
    KUDU_MASTER,
    KUDU_JARS,
    TABLE,
    PLANNER,
    PLANNER_COLUMNS,
    CREATE_TABLE,
    HASH_COLUMNS,
    HASH_BUCKETS,
    RANGE_COLUMNS,
    RANGE_SPLITS,
    REPLICAS,
    KEY_CHECK,
    SCAN_BATCH,
)

_SPARK_TO_KUDU: tuple[tuple[type[DataType], str], ...] = (
    (BooleanType, "bool"),
    (ByteType, "int8"),
    (ShortType, "int16"),
    (IntegerType, "int32"),
    (LongType, "int64"),
    (FloatType, "float"),
    (DoubleType, "double"),
    (StringType, "string"),
    (BinaryType, "binary"),
    (TimestampType, "unixtime_micros"),
    (TimestampNTZType, "unixtime_micros"),
    (DateType, "date"),
    (DecimalType, "decimal"),
)


def spark_to_kudu_type(name: str, data_type: DataType) -> str:
    """The Kudu type of a Spark column (for ``create_table``); an unmappable type names the column."""
    for spark_type, kudu_type in _SPARK_TO_KUDU:
        if isinstance(data_type, spark_type):
            return kudu_type
    raise SchemaMismatchError(
        f"column {name!r} has Spark type {data_type.simpleString()}, which has no Kudu column type "
        "(Kudu has no arrays, maps or structs: serialize it, e.g. to_json)"
    )


def by_key(df: Any, key_columns: Sequence[str]) -> Any:
    """``df.repartition(*key_columns)``: what the sink needs before it (rows of one key in one task)."""
    return df.repartition(*key_columns)


@dataclass(frozen=True)
class KuduWriteTask(WriteTask):
    """The Kudu sink's task, picklable: where to write, how to plan, whether to report keys. Its tasks plan and
    apply their keys (:func:`write_task`); the driver refuses a batch whose key was planned by two tasks."""

    masters: str
    table: str
    planner: Planner
    jars: str | None = None
    key_check: bool = True
    scan_batch: int = 1000
    timestamp_columns: tuple[str, ...] = ()
    dead_letters: Any = None  # BoundDeadLetters (deadLetter.*): rows Kudu or the planner refuses go there

    def describe(self) -> str:
        """``Kudu table 't'``."""
        return f"Kudu table {self.table!r}"

    def write(self, batches: Iterator[pa.RecordBatch]) -> KuduWriteCommit:
        """Plan and apply one task's rows (:func:`write_task`)."""
        return write_task(self, batches)

    def check(self, messages: Sequence[WriterCommitMessage | None], batch_id: int | None) -> None:
        """Every task flushed and saw no row error; refuse the batch if a key was planned by two tasks."""
        if self.key_check:
            check_one_task_per_key(messages, self.table, self.planner.key)

    def summary(self, messages: Sequence[WriterCommitMessage | None]) -> str:
        """Tasks, rows and mutations by kind."""
        return _summary(messages)

    def abort(self, messages: Sequence[WriterCommitMessage | None], batch_id: int | None) -> str:
        """Mutations of successful tasks stay; the replay re-plans the whole batch against them (idempotent)."""
        return f"{_summary(messages)}; writing again re-plans every key"


@dataclass
class KuduWriteCommit(WriterCommitMessage):
    """What one task did: rows read, keys planned, mutations applied by kind, and (with ``key_check``) its keys."""

    rows: int
    keys: int
    mutations: dict[str, int] = field(default_factory=dict)
    scans: int = 0
    planned_keys: list[str] = field(default_factory=list)
    dead_letters: int = 0


# ------------------------------------------------------------------------------------------- the task


_UTC = dt.timezone.utc


def _utc(value: Any) -> Any:
    """A timestamp cell as an aware UTC datetime, the form Kudu reads give (so the planners compare like with
    like, instants in UTC): Arrow gives a TimestampType as an aware datetime (its instant is kept) and a
    TimestampNTZType as a naive one (its wall clock is taken as UTC). The executor's time zone never takes part."""
    if isinstance(value, dt.datetime):
        return value.astimezone(_UTC) if value.tzinfo is not None else value.replace(tzinfo=_UTC)
    return value


def _rows(batches: Iterable[pa.RecordBatch], timestamp_columns: Sequence[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for batch in batches:
        part = batch.to_pylist()
        for col in timestamp_columns:
            for row in part:
                if col in row:
                    row[col] = _utc(row[col])
        rows.extend(part)
    return rows


def _batch_time() -> dt.datetime:
    """The ``last_updated`` value of a task: now, as an aware UTC datetime."""
    return dt.datetime.now(_UTC)


def write_task(config: KuduWriteTask, batches: Iterable[pa.RecordBatch], now: Any = None) -> KuduWriteCommit:
    """Plan and apply one task's rows (runs on an executor); raises on any refused row (with ``deadLetter.*``: see
    :func:`_write_diverting`). The cyclic garbage collector is paused for the task (:func:`gc_paused`): its row
    dicts and mutations are freed by reference counting."""
    with gc_paused():
        return _write_task(config, batches, now)


def _write_task(config: KuduWriteTask, batches: Iterable[pa.RecordBatch], now: Any) -> KuduWriteCommit:

    rows = _rows(batches, config.timestamp_columns)
    if config.dead_letters is not None:
        return _write_diverting(config, rows, config.dead_letters, now)
    if not rows:
        return KuduWriteCommit(rows=0, keys=0)
    planner = config.planner
    table = get_client(config.masters, jars=config.jars).table(config.table)
    keys = group_rows(planner, rows, null_key=f"Kudu sink: NULL in a key column of table {config.table!r}")
    existing, scans = _existing(config, table, keys)
    now = now if now is not None else _batch_time()
    mutations = plan_groups(planner, keys, existing, now=now)
    counts = {kind.value: n for kind, n in Counter(map(attrgetter("kind"), mutations)).items()}  # C-level loops
    if mutations:
        try:
            with table.session() as session:
                writes, deletes = _split_deletes(mutations)
                session.apply_all(writes)
                session.flush()  # one flush; raises KuduWriteError listing refused rows
                if deletes:  # merged history versions: removed only once the rows that replace them are in
                    session.apply_all(deletes)
                    session.flush()
        except KuduWriteError as error:
            conflict = _conflict(config, error)
            if conflict is None:
                _repair_after_refusal(config, table, keys, now, error)
            raise conflict or error from None
        except BadRecordError as error:  # a row the client could not build: the rows applied before it went in
            _repair_after_refusal(config, table, keys, now, error)
            raise
    planned = list(map(repr, keys)) if config.key_check else []
    return KuduWriteCommit(rows=len(rows), keys=len(keys), mutations=counts, scans=scans, planned_keys=planned)


def _split_deletes(mutations: list[Mutation]) -> tuple[list[Mutation], list[Mutation]]:
    """``mutations`` without, and with, their DELETEs (``history``: a version merged into the one before it). The
    DELETEs go in a second flush, once every other mutation was applied: a refused INSERT of the version that
    absorbs a stored one never leaves the key without both."""
    deletes = [m for m in mutations if m.kind is MutationKind.DELETE]
    if not deletes:
        return mutations, deletes
    return [m for m in mutations if m.kind is not MutationKind.DELETE], deletes


def _existing(config: KuduWriteTask, table: Any, keys: Mapping[Key, None]) -> tuple[list[dict[str, Any]], int]:
    """The stored rows of ``keys`` (when the planner needs them) and how many scans fetched them."""
    if not config.planner.needs_existing or not keys:
        return [], 0
    found = table.rows_for_keys(config.planner.key, list(keys), batch=config.scan_batch)
    existing: list[dict[str, Any]] = []
    for stored in found.values():
        existing.extend(stored)
    return existing, (len(keys) + config.scan_batch - 1) // config.scan_batch


def _repair(config: KuduWriteTask, table: Any, keys: Iterable[Key], now: Any) -> None:
    """Make ``keys`` consistent after a flush that refused some of their mutations and applied the others (the
    ``history`` planner: the UPDATE closing the current version applied, the INSERT of the new one refused, left
    the key with no current version). Rescans the keys and applies :meth:`Planner.repair`; a refusal of the repair
    raises :class:`KuduWriteError`. Nothing to do for planners that write one row per key."""
    planner = config.planner
    wanted = list(dict.fromkeys(keys))
    if not planner.repairs or not wanted:
        return
    stored = table.rows_for_keys(planner.key, wanted, batch=config.scan_batch)
    mutations = [m for k in wanted for m in planner.repair(k, stored[k], now=now)]
    if mutations:
        table.apply(mutations)


def _repair_after_refusal(config: KuduWriteTask, table: Any, keys: Iterable[Key], now: Any, error: Exception) -> None:
    """:func:`_repair` of every key of a task that stops on ``error``; a failing repair is added to the error's
    notes (the refusal stays the error the user sees, and a replay meets the same refusal and repairs again)."""
    try:
        _repair(config, table, keys, now)
    except Exception as failed:  # reported with the refusal that stops the task
        error.add_note(f"Kudu sink: could not repair the keys of table {config.table!r} after the refusal: {failed}")


def _conflict(config: KuduWriteTask, error: Any) -> Exception | None:
    """The error for a flush whose INSERT met a stored key that the planner had not seen (another task or writer
    planned the key in this batch), naming the fix; None for other refusals."""

    if not any(e.already_present for e in error.errors) or config.planner.name == "append":
        return None
    return KuduWriteError(
        f"{error} -- an INSERT met a row it had not seen: another task (or writer) planned the same key in this "
        f"batch; partition the stream by the key before the sink: "
        f"df.repartition({', '.join(repr(c) for c in config.planner.key)})",
        error.errors,
        error.overflowed,
    )


def _write_diverting(
    config: KuduWriteTask, rows: list[dict[str, Any]], dead: BoundDeadLetters, now: Any
) -> KuduWriteCommit:
    """:func:`write_task` with a dead-letter target. Dead-lettered instead of failing the task: rows with a null
    key column; the rows of a key the planner refuses (``append``: another value under a stored key); a mutation
    the client can not build (a value outside the column's range, a null in a NOT NULL column); and the rows Kudu
    refuses at the session's flush (a value too large, a duplicate key of an ``append`` INSERT, ...), matched to
    their mutations by row key. Not dead-lettered, the task fails: transient errors, an overflowing error
    collector, and a stored key met by another planner's INSERT or UPDATE (the stream is not partitioned by the
    key). A row the planner can never plan (a NULL event time: :meth:`Planner.check_row`) is dead-lettered alone;
    the other rows of its key are planned. DELETEs (``history`` merges) are applied after the other mutations,
    only for keys none of whose mutations was refused. Dead letters are durable before the task returns."""

    planner = config.planner
    letters = DeadLetterCollector(dead)
    groups: dict[Key, list[tuple[tuple[str, int], dict[str, Any]]]] = {}
    for position, row in enumerate(rows):
        where = row_coordinates(row, position, letters.task)
        k = key_of(row, planner.key)
        if any(v is None for v in k):
            error = f"Kudu sink: NULL in a key column of table {config.table!r} ({format_key(planner.key, k)})"
            letters.add(where, error, row)
            continue
        try:
            planner.check_row(k, row)
        except BadRecordError as error:  # this row alone: the key's other rows are planned
            letters.add(where, f"Kudu sink: {error}", row)
            continue
        groups.setdefault(k, []).append((where, row))
    kept = sum(len(g) for g in groups.values())
    counts: Counter[str] = Counter()
    scans = 0
    if groups:
        table = get_client(config.masters, jars=config.jars).table(config.table)
        existing, scans = _existing(config, table, dict.fromkeys(groups))
        stored: dict[Key, list[dict[str, Any]]] = {}
        for row in existing:
            stored.setdefault(key_of(row, planner.key), []).append(row)
        now = now if now is not None else _batch_time()
        planned: list[tuple[Mutation, tuple[str, int]]] = []
        for k, group in groups.items():
            try:
                mutations = planner.plan_key(k, [row for _, row in group], stored.get(k, []), now)
            except BadRecordError as error:  # the planner refuses this key's rows (a conflict with the table)
                for where, row in group:
                    letters.add(where, f"Kudu sink: {error}", row)
                continue
            planned.extend((m, _origin(m, group)) for m in mutations)
        origin = {id(m): where for m, where in planned}
        refused: set[int] = set()
        writes = [(m, where) for m, where in planned if m.kind is not MutationKind.DELETE]
        with table.session(track=True) as session:
            _apply_diverting(config, session, writes, origin, refused, letters)
            spoiled = {key_of(m.row, planner.key) for m, _ in writes if id(m) in refused}
            deletes = [
                (m, where)
                for m, where in planned
                if m.kind is MutationKind.DELETE and key_of(m.row, planner.key) not in spoiled
            ]
            if deletes:  # merged history versions, once the rows that replace them are in
                _apply_diverting(config, session, deletes, origin, refused, letters)
            applied = [m for m, _ in writes + deletes]
        counts.update(m.kind.value for m in applied if id(m) not in refused)
        _repair(config, table, (key_of(m.row, planner.key) for m, _ in planned if id(m) in refused), now)
    diverted = letters.flush()  # durable before the task reports success
    return KuduWriteCommit(
        rows=kept,
        keys=len(groups),
        mutations=dict(counts),
        scans=scans,
        planned_keys=[repr(k) for k in groups] if config.key_check else [],
        dead_letters=diverted,
    )


def _apply_diverting(
    config: KuduWriteTask,
    session: Any,
    planned: Sequence[tuple[Mutation, tuple[str, int]]],
    origin: Mapping[int, tuple[str, int]],
    refused: set[int],
    letters: DeadLetterCollector,
) -> None:
    """Apply ``planned`` in ``session`` and flush it: a mutation the client can not build, or Kudu refuses, becomes
    a dead letter (its id goes into ``refused``); transient errors, an overflowing error collector and a conflict
    with another task's rows raise."""

    for mutation, where in planned:
        try:
            session.apply(mutation)
        except KuduWriteError:
            raise
        except BadRecordError as error:  # the row could not be built: nothing of it was sent
            letters.add(where, f"Kudu sink: table {config.table!r} refused the row: {error}", dict(mutation.row))
            refused.add(id(mutation))
    try:
        session.flush()
    except KuduWriteError as error:
        conflict = _conflict(config, error)
        if conflict is not None or error.overflowed or any(e.transient for e in error.errors):
            raise conflict or error from None
        for row_error, mutation in session.refused(error.errors):
            if mutation is None or (row_error.not_found and config.planner.name != "append"):
                raise
            message = f"Kudu sink: table {config.table!r} refused {row_error}"
            letters.add(origin[id(mutation)], message, dict(mutation.row))
            refused.add(id(mutation))


def _origin(mutation: Mutation, group: Sequence[tuple[tuple[str, int], Mapping[str, Any]]]) -> tuple[str, int]:
    """The coordinates of the arriving row a mutation writes (the first whose values it carries), else of the key's
    last arriving row (e.g. the UPDATE closing a stored version)."""
    for where, row in group:
        if all(mutation.row.get(c, v) == v for c, v in row.items() if c in mutation.row):
            return where
    return group[-1][0]


def check_one_task_per_key(messages: Sequence[WriterCommitMessage | None], table: str, key: Sequence[str]) -> None:
    """Fail when a key was planned by two tasks of one batch, naming the key, the tasks and the fix."""
    owner: dict[str, int] = {}
    for task, message in enumerate(messages):
        if not isinstance(message, KuduWriteCommit):
            continue
        for k in message.planned_keys:
            first = owner.setdefault(k, task)
            if first != task:
                cols = ", ".join(repr(c) for c in key)
                raise BadRecordError(
                    f"Kudu sink: rows of key {key_text(key, k)} of table {table!r} were planned by tasks {first} and "
                    f"{task} of one batch, so each planned against a state the other changed. Partition the stream "
                    f"by the key before the sink: df.repartition({cols}) (or key_check=false if it already is)"
                )


def key_text(columns: Sequence[str], key_repr: str) -> str:
    """``(k=1, s='a')`` from a key tuple's repr (best effort, for messages)."""
    return f"({', '.join(columns)}) = {key_repr}"


def _summary(messages: Sequence[WriterCommitMessage | None]) -> str:
    done = finished(messages, KuduWriteCommit)
    counts: Counter[str] = Counter()
    for m in done:
        counts.update(m.mutations)
    rows = sum(m.rows for m in done)
    failed = sum(1 for m in messages if m is None)
    return f"{len(done)} task(s) wrote {rows} row(s) as {dict(counts) or 'no mutation'}; {failed} task(s) failed"


# ---------------------------------------------------------------------------------------- the driver


def _columns_option(options: Options, option: Option) -> list[str]:
    raw = options.value(option) or ""
    return [c.strip() for c in raw.split(",") if c.strip()]


def _maintained_columns(planner: Planner, schema: StructType) -> dict[str, str]:
    """Kudu types of the columns the planner adds to the arriving ones (for ``create_table``)."""
    out: dict[str, str] = {}
    if planner.last_updated:
        out[planner.last_updated] = "unixtime_micros"
    if isinstance(planner, HistoryPlanner):
        names = {f.name: f for f in schema.fields}
        event = names.get(planner.event_time)
        event_type = spark_to_kudu_type(planner.event_time, event.dataType) if event else "int64"
        if planner.effective_from not in names:
            out[planner.effective_from] = event_type
        if planner.effective_to:
            out[planner.effective_to] = event_type
        if planner.current_flag:
            out[planner.current_flag] = "bool" if isinstance(planner.current_true, bool) else "string"
    return out


def _create_table(client: Any, options: Options, config: KuduWriteTask, schema: StructType) -> None:

    planner = config.planner
    primary = list(planner.primary_key)
    fields = {f.name: f for f in schema.fields}
    specs: list[ColumnSpec] = []
    maintained = _maintained_columns(planner, schema)
    for name in primary:
        if name in fields:
            kudu_type = spark_to_kudu_type(name, fields[name].dataType)
        elif name in maintained:
            kudu_type = maintained[name]
        else:
            raise OptionError("planner.key", f"key column {name!r} is not a column of the stream")
        if kudu_type in ("float", "double", "bool"):
            raise OptionError("planner.key", f"key column {name!r} of Kudu type {kudu_type} cannot be a Kudu key")
        specs.append(_spec(name, kudu_type, fields.get(name), key=True))
    for f in schema.fields:
        if f.name not in primary:
            specs.append(_spec(f.name, spark_to_kudu_type(f.name, f.dataType), f, key=False))
    for name, kudu_type in maintained.items():
        if name not in primary and name not in fields:
            specs.append(ColumnSpec(name, kudu_type))
    hash_columns = _columns_option(options, HASH_COLUMNS) or list(planner.key)
    range_columns = _columns_option(options, RANGE_COLUMNS)
    for opt, cols in ((HASH_COLUMNS, hash_columns), (RANGE_COLUMNS, range_columns)):
        bad = [c for c in cols if c not in primary]
        if bad:
            raise OptionError(opt.name, f"{bad} are not key columns (key: {primary})")
    splits = options.value(RANGE_SPLITS) or []
    if not isinstance(splits, list) or not all(isinstance(s, list) and len(s) == len(range_columns) for s in splits):
        raise OptionError(
            "create_table.range_splits",
            f"expected a JSON list of split rows, each a list of {len(range_columns)} values",
        )
    client.create_table(
        config.table,
        specs,
        hash_columns=hash_columns,
        hash_buckets=options.value(HASH_BUCKETS),
        range_columns=range_columns,
        range_splits=splits,
        replicas=options.value(REPLICAS),
        ignore_existing=True,
    )


def _spec(name: str, kudu_type: str, f: Any, key: bool) -> Any:

    dtype = getattr(f, "dataType", None)
    if isinstance(dtype, DecimalType):
        return ColumnSpec(name, kudu_type, key=key, precision=dtype.precision, scale=dtype.scale)
    return ColumnSpec(name, kudu_type, key=key, nullable=not key)


def config_from_options(options: Options, schema: StructType) -> KuduWriteTask:
    """Validate the options (no Kudu call) and build the task configuration."""
    check_sink_options(
        options, KUDU_SINK_OPTIONS, "the spyt_kudu sink", source_options=(*YT_SOURCE_OPTIONS, *SUBSCRIPTION_OPTIONS)
    )  # planner.* checked by the planner
    masters = options.require_str(KUDU_MASTER.name, "The Kudu master addresses, e.g. 'kudu-master:7051'.")
    table = options.value(TABLE) or options.get_str("path")
    if not table:
        raise OptionError("table", "required: the Kudu table to write (option table, or save(<table>))")
    raw = options.raw()
    planner = planner_from_options({k: v for k, v in raw.items() if k == PLANNER.name or k.startswith("planner.")})
    names = [f.name for f in schema.fields]
    for col in planner.key:
        if col not in names:
            raise OptionError("planner.key", f"key column {col!r} is not a column of the stream (columns: {names})")
    if isinstance(planner, (LatestPlanner, HistoryPlanner)) and planner.event_time not in names:
        raise OptionError("planner.event_time", f"{planner.event_time!r} is not a column of the stream ({names})")
    timestamps = tuple(f.name for f in schema.fields if isinstance(f.dataType, (TimestampType, TimestampNTZType)))
    return KuduWriteTask(
        masters=masters,
        table=table,
        planner=planner,
        jars=options.value(KUDU_JARS),
        key_check=options.value(KEY_CHECK),
        scan_batch=options.value(SCAN_BATCH),
        timestamp_columns=timestamps,
        dead_letters=sink_dead_letters(options, f"kudu:{table}"),
    )


def prepare_table(options: Options, config: KuduWriteTask, schema: StructType) -> KuduWriteTask:
    """Create the table when missing and ``create_table=true``, else fail naming it; check the stream's columns and
    the planner's maintained columns exist in it. Returns ``config`` with the ``history`` far-future sentinel fitted
    to the table (:func:`_fit_far_future`)."""

    client = get_client(config.masters, jars=config.jars)
    if not client.table_exists(config.table):
        if not options.value(CREATE_TABLE):
            raise KuduTableNotFoundError(
                f"Kudu table {config.table!r} does not exist on {config.masters}: create it, or set "
                "create_table=true (with planner.key and optionally create_table.hash_buckets / range_columns)"
            )
        _create_table(client, options, config, schema)
    table = client.table(config.table)
    wanted = [f.name for f in schema.fields] + list(_maintained_columns(config.planner, schema))
    missing = [c for c in wanted if c not in table.by_name]
    if missing:
        raise SchemaMismatchError(
            f"Kudu table {config.table!r} has no column(s) {missing} that the stream or the "
            f"{config.planner.name} planner writes (table columns: {table.column_names})"
        )
    not_key = [c for c in config.planner.primary_key if c not in table.primary_key]
    if not_key or len(table.primary_key) != len(config.planner.primary_key):
        raise SchemaMismatchError(
            f"Kudu table {config.table!r} has primary key {table.primary_key}, but the {config.planner.name} planner "
            f"writes rows keyed by {list(config.planner.primary_key)} (set planner.key to match)"
        )
    return _fit_far_future(config, table, schema)


#: The largest value of each Kudu integer type: the default far-future sentinel of an integer effective-to column.
_INT_MAX = {"INT8": 2**7 - 1, "INT16": 2**15 - 1, "INT32": 2**31 - 1, "INT64": 2**63 - 1}


def _fit_far_future(config: KuduWriteTask, table: Any, schema: StructType) -> KuduWriteTask:
    """``history`` with an integer event time: current versions end at the largest value of the effective-to
    column's type (2^31-1 for INT32; the planner's own default, 2^63-1, does not fit it), and a configured
    ``planner.far_future`` that does not fit the column is an :class:`OptionError` naming both. Timestamp and date
    sentinels (9999-12-31) fit UNIXTIME_MICROS and DATE."""
    planner = config.planner
    if not isinstance(planner, HistoryPlanner) or planner.effective_to is None:
        return config
    column = table.by_name[planner.effective_to]
    high = _INT_MAX.get(column.type)
    event = next((f for f in schema.fields if f.name == planner.event_time), None)
    integral = event is not None and isinstance(event.dataType, (ByteType, ShortType, IntegerType, LongType))
    if high is None or not integral:
        return config
    far = planner.far_future
    if far is None:
        return replace(config, planner=planner.with_far_future(high))
    if isinstance(far, int) and not isinstance(far, bool) and not -high - 1 <= far <= high:
        raise OptionError(
            "planner.far_future",
            f"{far} does not fit the effective-to column {planner.effective_to!r} ({column.type}) of Kudu table "
            f"{config.table!r}: at most {high} (leave planner.far_future unset for the column's largest value)",
        )
    return config


def kudu_stream_writer(options: Mapping[str, str] | Options, schema: StructType, overwrite: bool) -> SinkStreamWriter:
    """The streaming sink: options checked, table prepared (on the driver)."""
    opts = options if isinstance(options, Options) else Options(options)
    return stream_writer(KUDU_SINK, overwrite, lambda: prepare_table(opts, config_from_options(opts, schema), schema))


def kudu_batch_writer(options: Mapping[str, str] | Options, schema: StructType, overwrite: bool) -> SinkBatchWriter:
    """The batch sink (``mode('append')`` only)."""
    opts = options if isinstance(options, Options) else Options(options)
    return batch_writer(KUDU_SINK, overwrite, lambda: prepare_table(opts, config_from_options(opts, schema), schema))
