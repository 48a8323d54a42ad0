"""HBase sink (``format("spyt_hbase")``): Spark rows to HBase cells through the Thrift1 gateway.

Installed as ``spyt_queue.sinks.hbase``; Spark discovers it through the top-level ``pyspark_spyt_hbase`` module.
Options and guarantees: docs/hbase.md; the type mapping: :mod:`spyt_queue.sinks.hbase.codec`.
"""

from spyt_queue.sinks.hbase.source import HBaseDataSource

__all__ = ["HBaseDataSource"]
