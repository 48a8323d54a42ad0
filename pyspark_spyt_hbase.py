"""Auto-discovery hook of the HBase sink: Spark imports every top-level ``pyspark_*`` module and registers its
``DefaultSource``, so ``format("spyt_hbase")`` works in any session once spyt-queue is installed (see
``pyspark_ytqueue.py`` for where Spark looks and why this never raises). Without the ``hbase`` extra (happybase,
thriftpy2) the source registered is a stand-in whose use says ``pip install 'spyt-queue[hbase]'``."""

try:
    from spyt_queue.spark.discovery import load_source
except Exception:  # spyt-queue itself is broken: register nothing rather than stop the discovery of other sources
    pass
else:
    DefaultSource = load_source(
        "spyt_queue.sinks.hbase.source",
        "HBaseDataSource",
        name="spyt_hbase",
        extra="hbase",
        requires=("happybase", "thriftpy2"),
    )
    __all__ = ["DefaultSource"]
