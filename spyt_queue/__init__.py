"""spyt-queue: stream YTsaurus queues and Kafka topics through Spark Structured Streaming from Python."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "register"]


def register(spark) -> None:
    """Register the ``ytqueue`` data source with ``spark`` (a notebook needs no call once installed)."""
    from spyt_queue.spark.source import YtQueueDataSource

    spark.dataSource.register(YtQueueDataSource)
