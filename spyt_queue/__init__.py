"""spyt-queue: stream YTsaurus queues and Kafka topics through Spark Structured Streaming from Python."""

from __future__ import annotations

import warnings
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
    from spyt_queue.spark.compat import register_data_source

    seed_stream_runner_env(spark, YtQueueDataSource.name())  # the auto-discovered source, if any (every session)
    defaults = session_defaults(spark)
    if not defaults:
        register_data_source(spark, YtQueueDataSource)  # on PySpark 4.0 the discovered one stays: the same class
    else:
        configured = type("YtQueueDataSource", (YtQueueDataSource,), {"session_defaults": defaults})
        configured.__module__ = "__main__"  # pickled by value, so executors need no extra class
        if not register_data_source(spark, configured):
            warnings.warn(
                "This PySpark (4.0) keeps the installed format('ytqueue'), so SPYT's session settings do not become "
                f"its option defaults: set the options {', '.join(sorted(defaults))} on each writer instead",
                stacklevel=2,
            )
    seed_stream_runner_env(spark, YtQueueDataSource.name())  # queries of this source may then start at once
