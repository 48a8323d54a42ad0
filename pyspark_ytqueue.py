"""Auto-discovery hook: Spark imports every top-level ``pyspark_*`` module and registers its ``DefaultSource``,
so ``format("ytqueue")`` works in any session once spyt-queue is installed, without calling ``register``.

Spark runs that discovery once per JVM, in the interpreter named by the JVM's ``PYSPARK_DRIVER_PYTHON``, else its
``PYSPARK_PYTHON``, else ``python3`` on its ``PATH`` (the ``spark.pyspark.*python`` settings are not consulted), and
lists modules with ``pkgutil.iter_modules()``: this file must sit in a ``sys.path`` directory of that interpreter
(a wheel install, or the editable install's ``.pth`` entry; see pyproject.toml and tests/packaging/).

Spark stops discovering at the first hook that raises, so no hook may raise: a source that cannot be loaded is
registered as a stand-in explaining why (:mod:`spyt_queue.spark.discovery`), and if even that is impossible the hook
defines no ``DefaultSource`` and Spark skips it.
"""

try:
    from spyt_queue.spark.discovery import load_source
except Exception:  # spyt-queue itself is broken: register nothing rather than stop the discovery of other sources
    pass
else:
    DefaultSource = load_source("spyt_queue.datasource", "YtQueueDataSource", name="ytqueue")
    __all__ = ["DefaultSource"]
