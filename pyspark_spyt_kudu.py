"""Auto-discovery hook of the Kudu sink: Spark imports every top-level ``pyspark_*`` module and registers its
``DefaultSource``, so ``writeStream.format("spyt_kudu")`` works in any session once spyt-queue is installed (see
pyspark_ytqueue.py for where this file must sit). Importing it starts no JVM: the Kudu client loads on first write."""

from spyt_queue.sinks.kudu.source import KuduDataSource as DefaultSource

__all__ = ["DefaultSource"]
