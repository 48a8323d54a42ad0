"""``format("spyt_hbase")``: the HBase sink's Spark data source (write only)."""

from __future__ import annotations

from spyt_queue.sinks.hbase.sink import HBASE_SINK, hbase_batch_writer, hbase_stream_writer
from spyt_queue.spark.sink_skeleton import SinkDataSource

__all__ = ["HBaseDataSource"]


class HBaseDataSource(SinkDataSource):
    """``df.writeStream.format("spyt_hbase")`` / ``df.write.format("spyt_hbase")``: rows to HBase cells through the
    Thrift gateway, append and update modes (overwrite is refused: HBase has no truncate here). The name avoids the
    HBase Spark connectors' ``hbase`` / ``org.apache.hadoop.hbase.spark``."""

    sink = HBASE_SINK
    open_stream = staticmethod(hbase_stream_writer)
    open_batch = staticmethod(hbase_batch_writer)
