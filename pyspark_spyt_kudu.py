"""Auto-discovery hook of the Kudu sink: Spark imports every top-level ``pyspark_*`` module and registers its
``DefaultSource``, so ``writeStream.format("spyt_kudu")`` works in any session once spyt-queue is installed (see
pyspark_ytqueue.py for where this file must sit and why it never raises). Importing it starts no JVM and imports no
JPype: the Kudu client loads on first write. Without the ``kudu`` extra (JPype) the source registered is a stand-in
whose use says ``pip install 'spyt-queue[kudu]'``."""

try:
    from spyt_queue.spark.discovery import load_source
except Exception:  # spyt-queue itself is broken: register nothing rather than stop the discovery of other sources
    pass
else:
    DefaultSource = load_source(
        "spyt_queue.sinks.kudu.source", "KuduDataSource", name="spyt_kudu", extra="kudu", requires=("jpype",)
    )
    __all__ = ["DefaultSource"]
