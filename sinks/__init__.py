"""Sinks beyond YTsaurus and Kafka that reuse the spyt-queue offset contract (Kudu, HBase).

This top-level ``sinks/`` folder is the package ``spyt_queue.sinks``: wheels and sdists install it under that name
(``setup.py``), and in a checkout ``spyt_queue/sinks/__init__.py`` points the package at this folder, so no generic
top-level ``sinks`` module is installed. Each sink is a sub-package (``sinks/kudu``, ``sinks/hbase``) with a Spark
discovery hook ``pyspark_spyt_<name>.py`` at the repository root.
"""
