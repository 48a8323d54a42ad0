"""``format("spyt_hbase")``: the HBase sink's Spark data source (write only)."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, DataSourceWriter
from pyspark.sql.types import StructType

from spyt_queue.errors import OptionError, SpytQueueError
from spyt_queue.options import Options
from spyt_queue.sinks.hbase.writer import HBaseBatchWriter, HBaseStreamWriter, check_table, settings_from_options
from spyt_queue.spark.errors import one_line

__all__ = ["HBaseDataSource"]


class HBaseDataSource(DataSource):
    """``df.writeStream.format("spyt_hbase")`` / ``df.write.format("spyt_hbase")``: rows to HBase cells through the
    Thrift1 gateway. The name avoids the HBase Spark connectors' ``hbase`` / ``org.apache.hadoop.hbase.spark``."""

    @classmethod
    def name(cls) -> str:
        """The short name used with ``format()``."""
        return "spyt_hbase"

    def _settings(self, schema: StructType):
        try:
            settings = settings_from_options(Options(dict(self.options)), schema)
            check_table(settings)
        except SpytQueueError as error:
            raise one_line(error) from None
        return settings

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """Writes each micro-batch as puts (``overwrite``/complete mode is refused: HBase has no truncate here)."""
        if overwrite:
            raise one_line(OptionError("outputMode", "the spyt_hbase sink supports append and update modes only"))
        return HBaseStreamWriter(self._settings(schema))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """Writes a DataFrame as puts (mode ``overwrite`` is refused)."""
        if overwrite:
            raise one_line(OptionError("mode", "the spyt_hbase sink appends (puts); mode overwrite is not supported"))
        return HBaseBatchWriter(self._settings(schema))
