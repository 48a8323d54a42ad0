"""Auto-discovery hook: Spark imports every top-level ``pyspark_*`` module and registers its ``DefaultSource``,
so ``format("ytqueue")`` works in any session once spyt-queue is installed, without calling ``register``."""

from spyt_queue.spark.source import YtQueueDataSource as DefaultSource

__all__ = ["DefaultSource"]
