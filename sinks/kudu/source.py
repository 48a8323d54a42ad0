"""The ``spyt_kudu`` data source (a sink only): ``writeStream.format("spyt_kudu")`` and ``df.write.format(...)``.

Registered automatically by the discovery hook ``pyspark_spyt_kudu.py`` (Spark imports every top-level
``pyspark_*`` module). Named ``spyt_kudu`` so that it never clashes with Apache Kudu's own Spark connector (``kudu``).
"""

from __future__ import annotations

from spyt_queue.spark.sink_skeleton import SinkDataSource

from .sink import KUDU_SINK, kudu_batch_writer, kudu_stream_writer

__all__ = ["KuduDataSource"]


class KuduDataSource(SinkDataSource):
    """Writes streams and DataFrames into an Apache Kudu table through a per-key planner (docs/kudu.md):
    each micro-batch planned into the table (``outputMode("append")``), a DataFrame too (``mode("append")``)."""

    sink = KUDU_SINK
    open_stream = staticmethod(kudu_stream_writer)
    open_batch = staticmethod(kudu_batch_writer)
