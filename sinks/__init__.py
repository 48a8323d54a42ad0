"""Sinks beyond YTsaurus and Kafka that reuse the spyt-queue offset contract (Kudu, HBase).

This top-level ``sinks/`` folder is installed as the package ``spyt_queue.sinks`` (``spyt_queue/sinks`` is a symlink
to it), so no generic top-level ``sinks`` module is installed. Each sink is a sub-package (``sinks/kudu``,
``sinks/hbase``) with a Spark discovery hook ``pyspark_spyt_<name>.py`` at the repository root.
"""
