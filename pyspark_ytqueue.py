"""Auto-discovery hook: Spark imports every top-level ``pyspark_*`` module and registers its ``DefaultSource``,
so ``format("ytqueue")`` works in any session once spyt-queue is installed, without calling ``register``.

Spark runs that discovery once per JVM, in the interpreter named by the JVM's ``PYSPARK_DRIVER_PYTHON``, else its
``PYSPARK_PYTHON``, else ``python3`` on its ``PATH`` (the ``spark.pyspark.*python`` settings are not consulted), and
lists modules with ``pkgutil.iter_modules()``: this file must sit in a ``sys.path`` directory of that interpreter
(a wheel install, or the editable install's ``.pth`` entry; see pyproject.toml and tests/packaging/)."""

from spyt_queue.spark.source import YtQueueDataSource as DefaultSource

__all__ = ["DefaultSource"]
