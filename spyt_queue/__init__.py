"""spyt-queue: stream YTsaurus queues and Kafka topics through Spark Structured Streaming from Python."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "register", "session_defaults"]

# Session configuration keys honoured as option defaults (SPYT's names; spark.ytsaurus.* wins over spark.yt.*).
SESSION_DEFAULTS = {"dyn_batch_size": ("spark.ytsaurus.write.dynBatchSize", "spark.yt.write.dynBatchSize")}


def session_defaults(spark: Any) -> dict[str, str]:
    """Option defaults taken from the session configuration (``spark.ytsaurus.*`` before ``spark.yt.*``)."""
    defaults: dict[str, str] = {}
    for option, keys in SESSION_DEFAULTS.items():
        for key in keys:
            value = spark.conf.get(key, None)
            if value is not None:
                defaults[option] = str(value)
                break
    return defaults


def register(spark: Any) -> None:
    """Register the ``ytqueue`` data source with ``spark``.

    Installing the package is enough for ``format("ytqueue")`` (Spark discovers the top-level
    ``pyspark_ytqueue`` module); calling this also carries SPYT's session settings such as
    ``spark.yt.write.dynBatchSize`` into the source's option defaults, which Python data sources cannot read
    from the session themselves, and makes it safe to start several ``ytqueue`` queries at once in one driver
    (see :func:`spyt_queue.datasource.seed_stream_runner_env`).

    ``spark`` may be a Spark Connect session: the class is then registered for that session through the client
    (pickled, sent to the server); the server's JVM is out of the client's reach, so the pre-fill for concurrent
    query starts is skipped there.
    """
    # lazy: `import spyt_queue.local` (the embedded server) and the CLI load this package without Spark or the plugin
    from spyt_queue.datasource import YtQueueDataSource, seed_stream_runner_env

    seed_stream_runner_env(spark, YtQueueDataSource.name())  # the auto-discovered source, if any (every session)
    defaults = session_defaults(spark)
    if not defaults:
        spark.dataSource.register(YtQueueDataSource)
    else:
        configured = type("YtQueueDataSource", (YtQueueDataSource,), {"session_defaults": defaults})
        configured.__module__ = "__main__"  # pickled by value, so executors need no extra class
        spark.dataSource.register(configured)
    seed_stream_runner_env(spark, YtQueueDataSource.name())  # queries of this source may then start at once
