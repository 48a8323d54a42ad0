"""``writeStream``/``write`` ``.format("ytqueue")`` to a YTsaurus dynamic table: the YT sink's :class:`YtWriteTask`
(over :class:`YtTableWriter`) plugged into the sink skeleton (:mod:`spyt_queue.spark.sink_skeleton`)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import StructType

from spyt_queue.deadletter import BoundDeadLetters
from spyt_queue.deadletter_targets import sink_dead_letters
from spyt_queue.errors import CommitError, OptionError, SpytQueueError
from spyt_queue.options import WRITE, Option, Options
from spyt_queue.records import SERVICE_ROW_COLUMN, SERVICE_TABLET_COLUMN
from spyt_queue.sink_options import check_sink_options
from spyt_queue.spark.sink_skeleton import (
    SinkBatchWriter,
    SinkFormat,
    SinkStreamWriter,
    WriteTask,
    batch_writer,
    finished,
    stream_writer,
    tasks_finished,
)
from spyt_queue.yt.batch_journal import request_journal, task_batch
from spyt_queue.yt.declarations import YT_CONFIG_PREFIX, YT_CONNECTION_OPTIONS, YT_SOURCE_OPTIONS
from spyt_queue.yt.errors import RESOLVE_ERROR, has_code, yt_message
from spyt_queue.yt.options import reachable_connection
from spyt_queue.yt.schema import YtSchema
from spyt_queue.yt.table_writer import DEFAULT_SESSION_PREFIX, YtTableWriter, check_schema
from spyt_queue.yt.transactional import (
    TRANSACTIONAL,
    TRANSACTIONAL_OPTIONS,
    BatchTransaction,
    TransactionalSettings,
    attach,
    commit_batch,
    ping,
    refuse_retried_attempt,
    transactional_connection,
    transactional_settings,
)
from spyt_queue.yt.transactional import abort as abort_transaction

log = logging.getLogger("spyt_queue.write")

DEFAULT_DYN_BATCH_SIZE = 50_000
DYN_BATCH_SIZE = Option(
    "dyn_batch_size",
    "rows per insert_rows request",
    kind="int",
    default=DEFAULT_DYN_BATCH_SIZE,
    aliases=("dynBatchSize", "spark.ytsaurus.write.dynBatchSize", "spark.yt.write.dynBatchSize"),
    modes=(WRITE,),
)
PRODUCER_PATH = Option(
    "producer_path", "a queue producer table: exactly-once appends through producer sessions", modes=(WRITE,)
)
PRODUCER_SESSION_PREFIX = Option(
    "producer_session_prefix", "session name prefix; default: derived from the query", modes=(WRITE,)
)
PRODUCER_ALLOW_GAPS = Option(
    "producer_allow_gaps",
    "accept gaps in source row indexes in producer mode",
    kind="bool",
    default=False,
    modes=(WRITE,),
)
#: Every option the YTsaurus table sink reads (plus ``yt.*``); Spark adds path/checkpointLocation/queryName.
YT_SINK_OPTIONS = (
    *YT_CONNECTION_OPTIONS,
    DYN_BATCH_SIZE,
    PRODUCER_PATH,
    PRODUCER_SESSION_PREFIX,
    PRODUCER_ALLOW_GAPS,
    *TRANSACTIONAL_OPTIONS,
)
YT_SINK_WHAT = "the YTsaurus table sink"
YT_SINK = SinkFormat("ytqueue", "appends or upserts")
QUERY_ID_PROPERTY = "sql.streaming.queryId"  # local property Spark sets on every task of a streaming query


@dataclass
class YtWriteCommit(WriterCommitMessage):
    """What one task wrote; with producer sessions, the source rows per source tablet it pushed."""

    rows: int
    skipped: int
    requests: int
    tablets: dict[int, tuple[int, int]] = field(default_factory=dict)
    dead_letters: int = 0
    transaction_id: str | None = None  # transactional=true: the batch's tablet transaction the rows went into
    query_id: str | None = None  # transactional=true: the streaming query's id (keys the batch's journaled range)


def check_one_task_per_source_tablet(messages: list[WriterCommitMessage | None]) -> list[int]:
    """Source tablets whose rows were written by several tasks of one batch (returned and logged).

    Every task checks its rows against the producer session before pushing (see :class:`YtTableWriter`), so a
    batch whose tasks all succeeded lost nothing even then; failing here would only make every replay fail again.
    The warning names the options that split tablets, which make such batches fail whenever the later rows of a
    tablet happen to be pushed first."""
    owners: dict[int, int] = {}
    split: list[int] = []
    for task, message in enumerate(messages):
        if not isinstance(message, YtWriteCommit):
            continue
        for tablet in message.tablets:
            if tablet in owners and tablet not in split:
                split.append(tablet)
                log.warning(
                    "rows of source tablet %s were written by tasks %s and %s through producer sessions: nothing was "
                    "lost, but such batches fail whenever the later task pushes first; do not combine this sink with "
                    "maxRecordsPerPartition/minPartitions or a repartition",
                    tablet,
                    owners[tablet],
                    task,
                )
            owners.setdefault(tablet, task)
    return split


def default_session_prefix(options: Options) -> str | None:
    """The producer session prefix: ``producer_session_prefix`` if given, else one derived from the query's
    ``checkpointLocation`` (or ``queryName``), which Spark passes to the sink's options and which stays the same
    across restarts; ``None`` when neither is there (tasks then use the streaming query id, or ``spyt-queue`` in
    batch writes)."""
    explicit = options.value(PRODUCER_SESSION_PREFIX)
    if explicit:
        return explicit
    for option in ("checkpointLocation", "queryName"):
        value = options.get_str(option)
        if value:
            key = value.rstrip("/") if option == "checkpointLocation" else value
            return "spyt-" + hashlib.sha256(f"{option}:{key}".encode()).hexdigest()[:16]
    return None


def task_session_prefix(writer: YtTableWriter) -> str:
    """The prefix a task uses: the writer's, else the streaming query id (stable across restarts with the same
    checkpoint), else ``spyt-queue``."""
    if writer.producer_session_prefix:
        return writer.producer_session_prefix
    context = TaskContext.get()
    query_id = context.getLocalProperty(QUERY_ID_PROPERTY) if context is not None else None
    return f"spyt-{query_id}" if query_id else DEFAULT_SESSION_PREFIX


#: ``ytqueue create-table --schema`` types for Spark's simple types (the type mapping of docs/writing-yt.md).
_CREATE_TABLE_TYPES = {
    "string": "string",
    "binary": "string",
    "bigint": "int64",
    "int": "int32",
    "smallint": "int16",
    "tinyint": "int8",
    "double": "double",
    "float": "float",
    "boolean": "boolean",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp",
    "date": "date",
}


def create_table_schema(schema: StructType) -> str:
    """The ``--schema`` of ``ytqueue create-table`` for a table ``schema`` (a DataFrame's) fits: ``name:type`` per
    column, ``:required`` for a non-nullable one; a type without a simple YT counterpart is shown as ``TYPE``."""
    columns = []
    for f in schema.fields:
        yt_type = _CREATE_TABLE_TYPES.get(f.dataType.simpleString(), "TYPE")
        columns.append(f"{f.name}:{yt_type}" + ("" if f.nullable else ":required"))
    return ",".join(columns)


def table_writer_from_options(options: Options, schema: StructType) -> YtTableWriter:
    """Validate the sink options and the DataFrame schema against the target table, before any write."""
    check_sink_options(options, YT_SINK_OPTIONS, YT_SINK_WHAT, YT_CONFIG_PREFIX, YT_SOURCE_OPTIONS)
    path = options.get_str("path")
    if not path:
        raise OptionError("path", "give the output table with .option('path', '//path/to/table') or .save(path)")
    batch_size, allow_gaps = options.value(DYN_BATCH_SIZE), options.value(PRODUCER_ALLOW_GAPS)
    connection = reachable_connection(options)  # within connect_timeout, naming the proxy
    client = connection.client()
    try:
        attrs = client.get(path, attributes=["type", "dynamic", "schema", "tablet_state"]).attributes
    except Exception as error:  # one line: yt.wrapper's text of a YT error runs to some 50 lines of request details
        if has_code(error, RESOLVE_ERROR):
            raise SpytQueueError(
                f"Output table {path} does not exist on {connection.proxy}: create it, e.g. "
                f"`ytqueue create-table {path} --schema {create_table_schema(schema)}` (an ordered table; add "
                "--sorted-by KEY,... for a sorted one)"
            ) from None
        reason = yt_message(error)
        raise SpytQueueError(f"Output table {path} can not be read on {connection.proxy}: {reason}") from None
    if attrs.get("type") != "table" or not attrs.get("dynamic"):
        raise SpytQueueError(f"{path} is not a dynamic table: ytqueue writes ordered or sorted dynamic tables")
    if attrs.get("tablet_state") != "mounted":
        raise SpytQueueError(f"{path} is not mounted (tablet_state={attrs.get('tablet_state')}); mount it first")
    writer = YtTableWriter(
        connection,
        path,
        YtSchema.parse(attrs["schema"]),
        dyn_batch_size=batch_size,
        producer_path=options.value(PRODUCER_PATH),
        # One session per source tablet and query: two queries writing one target never share a session.
        producer_session_prefix=default_session_prefix(options),
        allow_gaps=allow_gaps,
    )
    if writer.producer_path:
        if writer.table.sorted:
            raise OptionError(
                "producer_path", "producer sessions write ordered tables (queues); sorted targets are idempotent by key"
            )
        missing = [c for c in (SERVICE_TABLET_COLUMN, SERVICE_ROW_COLUMN) if c not in schema.fieldNames()]
        if missing:
            raise OptionError(
                "producer_path",
                f"exactly-once writes need the source's service columns {missing}: read with "
                "include_service_columns=true and keep both columns in the DataFrame",
            )
    check_schema(schema, writer.table, path, drop=writer.dropped_columns())
    writer.dead_letters = sink_dead_letters(
        options, f"yt:{path}", refused_by="producer_path" if writer.producer_path else ""
    )
    return writer


def _commit(writer: YtTableWriter, iterator: Iterator[pa.RecordBatch]) -> YtWriteCommit:
    stats = writer.write(iterator, task_session_prefix(writer) if writer.producer_path else None)
    return YtWriteCommit(
        rows=stats.rows,
        skipped=stats.skipped,
        requests=stats.requests,
        tablets=stats.tablets,
        dead_letters=stats.dead_letters,
    )


def describe_abort(writer: YtTableWriter, messages: list[WriterCommitMessage | None]) -> str:
    """What the tasks of a failed write that did finish left in the table, and what a replay does with it.

    The failed task's own rows are described by its error: none with producer sessions, none of the Arrow batch
    holding a bad row (and none at all when its rows fit in one ``dyn_batch_size`` chunk) otherwise."""
    done = [m for m in messages if isinstance(m, YtWriteCommit)]
    rows = sum(m.rows for m in done)
    if writer.producer_path:
        effect = "writing them again skips them (producer sessions)"
    elif writer.table.sorted:
        effect = "writing them again upserts the same keys"
    else:
        effect = "writing them again appends them twice"
    others = len(messages) - len(done)
    summary = f"{len(done)} of {len(messages)} tasks finished, writing {rows} rows into {writer.path}"
    if others:
        summary += f"; the {others} failed or cancelled task(s) may have written their first rows (see the error)"
    return f"{summary}. All of it stays: {effect}"


class YtWriteTask(WriteTask):
    """The YTsaurus table sink's task: :class:`YtTableWriter` on the executors, and with ``transactional=true``
    (:mod:`spyt_queue.yt.transactional`, streams only) the batch's tablet transaction: tasks insert under it, the
    driver's :meth:`commit` advances the source consumer in it and commits: all or nothing."""

    def __init__(self, writer: YtTableWriter, transactional: TransactionalSettings | None = None) -> None:
        self.writer = writer
        self.transactional = transactional
        # Started when Spark pickles the writer for the executors (once per micro-batch, on the driver).
        self.transaction = BatchTransaction(writer.connection, transactional.timeout_ms) if transactional else None

    @property
    def dead_letters(self) -> BoundDeadLetters | None:  # type: ignore[override]
        """Where rows the table refuses go (the table writer's)."""
        return self.writer.dead_letters

    def describe(self) -> str:
        """``YTsaurus table //path``."""
        return f"YTsaurus table {self.writer.path}"

    def write(self, batches: Iterator[pa.RecordBatch]) -> YtWriteCommit:
        """Write one task's rows; every ``insert_rows`` is durable when it returns (transactional: inserted under
        the batch's transaction, visible at its commit)."""
        if self.transaction is None:
            return _commit(self.writer, batches)
        tx = self.transaction.id
        if tx is None:
            raise CommitError("transactional=true: this task got no micro-batch transaction from the driver")
        refuse_retried_attempt()
        ping(self.writer.connection, tx)  # a transaction gone already fails the task before it writes anything
        self.writer.connection = attach(self.writer.connection, tx)
        message = _commit(self.writer, batches)
        message.transaction_id = tx
        batch = task_batch()
        message.query_id = batch[0] if batch else None
        return message

    def check(self, messages: Sequence[WriterCommitMessage | None], batch_id: int | None) -> None:
        """Rows are written by the tasks (producer pushes were checked by each task before pushing); source tablets
        split across tasks are reported."""
        check_one_task_per_source_tablet(list(messages))

    def commit(self, messages: Sequence[WriterCommitMessage | None], batch_id: int | None) -> None:
        """Transactional: advance the consumer in the batch's transaction and commit it (a replay of a batch that
        had committed aborts its transaction instead)."""
        if self.transactional is None or batch_id is None:
            return
        ids = sorted({m.transaction_id for m in messages if isinstance(m, YtWriteCommit) and m.transaction_id})
        if len(ids) > 1:
            for tx in ids:
                abort_transaction(self.writer.connection, tx)
            raise CommitError(
                f"micro-batch {batch_id}: its tasks wrote into {len(ids)} transactions {ids}; all aborted"
            )
        queries = sorted({m.query_id for m in messages if isinstance(m, YtWriteCommit) and m.query_id})
        commit_batch(
            self.writer.connection,
            self.transactional,
            batch_id,
            ids[0] if ids else None,
            queries[0] if queries else None,
        )

    def summary(self, messages: Sequence[WriterCommitMessage | None]) -> str:
        """Tasks finished and rows written."""
        rows = sum(m.rows for m in finished(messages, YtWriteCommit))
        return f"{tasks_finished(messages, YtWriteCommit)}, writing {rows} rows"

    def abort(self, messages: Sequence[WriterCommitMessage | None], batch_id: int | None) -> str:
        """Rows of successful tasks stay (dynamic tables have no job-wide transaction here); the replay appends
        them again, upserts them again or skips them (producer sessions). Transactional: the batch's transaction is
        aborted, nothing of the batch stays."""
        if self.transactional is None:
            return describe_abort(self.writer, list(messages))
        ids = {m.transaction_id for m in messages if isinstance(m, YtWriteCommit) and m.transaction_id}
        for tx in sorted(ids):
            abort_transaction(self.writer.connection, tx)
        return "its transaction was aborted, nothing of it was written"


def yt_stream_writer(options: Options, schema: StructType, overwrite: bool = False) -> SinkStreamWriter:
    """The streaming sink, validated against the target table; only append/update output modes."""
    return stream_writer(YT_SINK, overwrite, lambda: _stream_task(options, schema))


def _stream_task(options: Options, schema: StructType) -> YtWriteTask:
    check_sink_options(options, YT_SINK_OPTIONS, YT_SINK_WHAT, YT_CONFIG_PREFIX, YT_SOURCE_OPTIONS)
    settings = transactional_settings(options)
    if settings is not None and PRODUCER_PATH.name in options:
        raise OptionError(
            "transactional", "can not be combined with producer_path: choose one exactly-once mode of the sink"
        )
    writer = table_writer_from_options(options, schema)
    if settings is not None:
        writer.connection = transactional_connection(writer.connection)
        request_journal(writer.connection.client(), settings.consumer_path)  # the source journals batch ranges
    return YtWriteTask(writer, settings)


def yt_batch_writer(options: Options, schema: StructType, overwrite: bool) -> SinkBatchWriter:
    """The batch sink; ``overwrite`` is refused (dynamic tables are appended to or upserted into)."""
    return batch_writer(YT_SINK, overwrite, lambda: _batch_task(options, schema))


def _batch_task(options: Options, schema: StructType) -> YtWriteTask:
    if options.value(TRANSACTIONAL):
        raise OptionError("transactional", "only streaming writes (writeStream) commit with a source consumer")
    transactional_settings(options)  # refuses consumer_path / transaction_timeout without transactional=true
    return YtWriteTask(table_writer_from_options(options, schema))
