"""The ``spyt_kudu`` data source (a sink only): ``writeStream.format("spyt_kudu")`` and ``df.write.format(...)``.

Registered automatically by the discovery hook ``pyspark_spyt_kudu.py`` (Spark imports every top-level
``pyspark_*`` module). Named ``spyt_kudu`` so that it never clashes with Apache Kudu's own Spark connector (``kudu``).
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, DataSourceWriter
from pyspark.sql.types import StructType

from spyt_queue.options import Options
from spyt_queue.spark.errors import user_errors

from .sink import FORMAT, kudu_batch_writer, kudu_stream_writer

__all__ = ["KuduDataSource"]


class KuduDataSource(DataSource):
    """Writes streams and DataFrames into an Apache Kudu table through a per-key planner (see the README)."""

    @classmethod
    def name(cls) -> str:
        """``spyt_kudu``."""
        return FORMAT

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """Each micro-batch planned into the table (``outputMode("append")``)."""
        return user_errors(lambda: kudu_stream_writer(Options(self.options), schema, overwrite))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """A DataFrame planned into the table (``mode("append")``)."""
        return user_errors(lambda: kudu_batch_writer(Options(self.options), schema, overwrite))
