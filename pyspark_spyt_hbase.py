"""Auto-discovery hook of the HBase sink: Spark imports every top-level ``pyspark_*`` module and registers its
``DefaultSource``, so ``format("spyt_hbase")`` works in any session once spyt-queue is installed (see
``pyspark_ytqueue.py`` for where Spark looks)."""

from spyt_queue.sinks.hbase.source import HBaseDataSource as DefaultSource

__all__ = ["DefaultSource"]
