"""``writeStream``/``write`` ``.format("ytqueue")``: Arrow writers over :class:`YtTableWriter`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from spyt_queue.errors import OptionError, SpytQueueError
from spyt_queue.options import Options
from spyt_queue.yt.options import connection_from_options
from spyt_queue.yt.schema import YtSchema
from spyt_queue.yt.table_writer import YtTableWriter, check_schema

DEFAULT_DYN_BATCH_SIZE = 50_000


@dataclass
class YtWriteCommit(WriterCommitMessage):
    """What one task wrote."""

    rows: int
    skipped: int
    requests: int


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
    batch_size = options.get_int("dyn_batch_size", None, "dynBatchSize", "spark.yt.write.dynBatchSize")
    writer = YtTableWriter(
        connection,
        path,
        YtSchema.parse(attrs["schema"]),
        dyn_batch_size=batch_size or DEFAULT_DYN_BATCH_SIZE,
        producer_path=options.get_str("producer_path"),
        producer_session_prefix=options.get_str("producer_session_prefix", "spyt-queue") or "spyt-queue",
    )
    if writer.producer_path and writer.table.sorted:
        raise OptionError(
            "producer_path", "producer sessions write ordered tables (queues); sorted targets are idempotent by key"
        )
    check_schema(schema, writer.table, path, drop=writer.dropped_columns())
    return writer


def _commit(writer: YtTableWriter, iterator: Iterator[pa.RecordBatch]) -> YtWriteCommit:
    stats = writer.write(iterator)
    return YtWriteCommit(rows=stats.rows, skipped=stats.skipped, requests=stats.requests)


class YtStreamWriter(DataSourceStreamArrowWriter):
    """Each micro-batch's tasks write their rows; every ``insert_rows`` is durable when it returns."""

    def __init__(self, writer: YtTableWriter) -> None:
        self.writer = writer

    def write(self, iterator: Iterator[pa.RecordBatch]) -> YtWriteCommit:  # type: ignore[override]
        """Write one task's rows (on an executor)."""
        return _commit(self.writer, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """All rows are already written by the tasks; nothing is left to publish."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Rows of successful tasks stay (at-least-once); the replay rewrites or skips them."""


class YtBatchWriter(DataSourceArrowWriter):
    """``df.write.format("ytqueue")``: append (ordered) or upsert (sorted) into a dynamic table."""

    def __init__(self, writer: YtTableWriter) -> None:
        self.writer = writer

    def write(self, iterator: Iterator[pa.RecordBatch]) -> YtWriteCommit:  # type: ignore[override]
        """Write one task's rows (on an executor)."""
        return _commit(self.writer, iterator)


def yt_stream_writer(options: Options, schema: StructType) -> YtStreamWriter:
    """The streaming sink, validated against the target table."""
    return YtStreamWriter(table_writer_from_options(options, schema))


def yt_batch_writer(options: Options, schema: StructType, overwrite: bool) -> YtBatchWriter:
    """The batch sink; ``overwrite`` is refused (dynamic tables are appended to or upserted into)."""
    if overwrite:
        raise OptionError("mode", "ytqueue appends or upserts; use mode('append')")
    return YtBatchWriter(table_writer_from_options(options, schema))
