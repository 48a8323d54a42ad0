"""``writeStream``/``write`` ``.format("ytqueue")``: Arrow writers over :class:`YtTableWriter`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from spyt_queue.errors import OptionError, SchemaMismatchError, SpytQueueError
from spyt_queue.options import Options
from spyt_queue.yt.options import connection_from_options
from spyt_queue.yt.schema import SERVICE_ROW_COLUMN, SERVICE_TABLET_COLUMN, YtSchema
from spyt_queue.yt.table_writer import YtTableWriter, check_schema

DEFAULT_DYN_BATCH_SIZE = 50_000


@dataclass
class YtWriteCommit(WriterCommitMessage):
    """What one task wrote; with producer sessions, the source rows per source tablet it pushed."""

    rows: int
    skipped: int
    requests: int
    tablets: dict[int, tuple[int, int]] = field(default_factory=dict)


def check_one_task_per_source_tablet(messages: list[WriterCommitMessage | None]) -> None:
    """Producer sessions are per source tablet: two tasks pushing one tablet's rows would make the later one's
    rows look already written (skipped). That happens only if the pipeline repartitioned the stream, so the
    batch fails loudly instead of committing."""
    owners: dict[int, int] = {}
    for task, message in enumerate(messages):
        if not isinstance(message, YtWriteCommit):
            continue
        for tablet in message.tablets:
            if tablet in owners:
                raise SchemaMismatchError(
                    f"rows of source tablet {tablet} were written by tasks {owners[tablet]} and {task}: exactly-once "
                    "writes through producer sessions need a one-to-one pipeline (no repartition or shuffle between "
                    "the ytqueue source and this sink)"
                )
            owners[tablet] = task


def table_writer_from_options(options: Options, schema: StructType) -> YtTableWriter:
    """Validate the sink options and the DataFrame schema against the target table, before any write."""
    path = options.get_str("path")
    if not path:
        raise OptionError("path", "give the output table with .option('path', '//path/to/table') or .save(path)")
    connection = connection_from_options(options)
    client = connection.client()
    try:
        attrs = client.get(path, attributes=["type", "dynamic", "schema", "tablet_state"]).attributes
    except Exception as error:
        raise SpytQueueError(f"Output table {path} can not be read on {connection.proxy}: {error}") from error
    if attrs.get("type") != "table" or not attrs.get("dynamic"):
        raise SpytQueueError(f"{path} is not a dynamic table: ytqueue writes ordered or sorted dynamic tables")
    if attrs.get("tablet_state") != "mounted":
        raise SpytQueueError(f"{path} is not mounted (tablet_state={attrs.get('tablet_state')}); mount it first")
    batch_size = options.get_int(
        "dyn_batch_size", None, "dynBatchSize", "spark.ytsaurus.write.dynBatchSize", "spark.yt.write.dynBatchSize"
    )
    writer = YtTableWriter(
        connection,
        path,
        YtSchema.parse(attrs["schema"]),
        dyn_batch_size=batch_size or DEFAULT_DYN_BATCH_SIZE,
        producer_path=options.get_str("producer_path"),
        # One session per source tablet: queries writing one target from different sources need distinct prefixes.
        producer_session_prefix=options.get_str("producer_session_prefix", "spyt-queue") or "spyt-queue",
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
    return writer


def _commit(writer: YtTableWriter, iterator: Iterator[pa.RecordBatch]) -> YtWriteCommit:
    stats = writer.write(iterator)
    return YtWriteCommit(rows=stats.rows, skipped=stats.skipped, requests=stats.requests, tablets=stats.tablets)


class YtStreamWriter(DataSourceStreamArrowWriter):
    """Each micro-batch's tasks write their rows; every ``insert_rows`` is durable when it returns."""

    def __init__(self, writer: YtTableWriter) -> None:
        self.writer = writer

    def write(self, iterator: Iterator[pa.RecordBatch]) -> YtWriteCommit:  # type: ignore[override]
        """Write one task's rows (on an executor)."""
        return _commit(self.writer, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """All rows are already written by the tasks; producer writes are checked for split source tablets."""
        check_one_task_per_source_tablet(messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Rows of successful tasks stay (at-least-once); the replay rewrites or skips them."""


class YtBatchWriter(DataSourceArrowWriter):
    """``df.write.format("ytqueue")``: append (ordered) or upsert (sorted) into a dynamic table."""

    def __init__(self, writer: YtTableWriter) -> None:
        self.writer = writer

    def write(self, iterator: Iterator[pa.RecordBatch]) -> YtWriteCommit:  # type: ignore[override]
        """Write one task's rows (on an executor)."""
        return _commit(self.writer, iterator)


def yt_stream_writer(options: Options, schema: StructType, overwrite: bool = False) -> YtStreamWriter:
    """The streaming sink, validated against the target table; only append/update output modes."""
    if overwrite:
        raise OptionError("outputMode", "ytqueue appends or upserts each micro-batch; use outputMode append or update")
    return YtStreamWriter(table_writer_from_options(options, schema))


def yt_batch_writer(options: Options, schema: StructType, overwrite: bool) -> YtBatchWriter:
    """The batch sink; ``overwrite`` is refused (dynamic tables are appended to or upserted into)."""
    if overwrite:
        raise OptionError("mode", "ytqueue appends or upserts; use mode('append')")
    return YtBatchWriter(table_writer_from_options(options, schema))
