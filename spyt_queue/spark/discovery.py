"""What the ``pyspark_*`` discovery hooks give Spark: the real data source, or a stand-in saying why it cannot run.

Spark discovers Python data sources once per JVM by importing every top-level ``pyspark_*`` module in one Python
worker (``pyspark/sql/worker/lookup_data_sources.py``) without catching anything: a single hook that raises at
import makes Spark register none of them, ``ytqueue`` included. Each hook therefore loads its source through
:func:`load_source`, which never raises. When the source's module cannot be imported, or an optional dependency of
its extra is not installed, it returns a stand-in of the same name whose use fails with
:class:`~spyt_queue.errors.SourceUnavailableError` naming what is missing and the ``pip install`` that fixes it.

This module imports only the standard library, PySpark and :mod:`spyt_queue.errors`, so it loads when the sources'
own modules do not.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from pyspark.sql.datasource import DataSource

from spyt_queue.errors import SourceUnavailableError

__all__ = ["load_source", "missing_modules", "unavailable_source"]


def missing_modules(modules: Sequence[str]) -> list[str]:
    """The names in ``modules`` that this interpreter cannot find (checked without importing them)."""
    missing = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken parent package, or a module without a spec in sys.modules
            found = False
        if not found:
            missing.append(module)
    return missing


def _install_hint(extra: str | None, reinstall: bool) -> str:
    """The ``pip install`` that provides ``extra`` (or the plain package), from an index, a checkout or a wheel."""
    suffix = f"[{extra}]" if extra else ""
    pip = "pip install --force-reinstall" if reinstall else "pip install"
    return (
        f"{pip} 'spyt-queue{suffix}' with that interpreter (from a checkout: {pip} '.{suffix}'; from a built wheel: "
        f"{pip} '<file>.whl{suffix}'), on the driver and the executors alike"
    )


def unavailable_source(name: str, reason: str) -> type[DataSource]:
    """A data source called ``name`` whose every use raises :class:`SourceUnavailableError` with ``reason``.

    Spark creates a data source instance before asking it for a schema, reader or writer, so the constructor is
    where the error is raised. It reaches the user as one line (see :func:`spyt_queue.spark.errors.one_line`).
    """

    class UnavailableDataSource(DataSource):
        """Stands in for a data source that cannot be loaded in this interpreter (see :func:`load_source`)."""

        @classmethod
        def name(cls) -> str:
            """The short name of the source this class stands in for."""
            return name

        def __init__(self, options: Any) -> None:
            self._fail()

        @staticmethod
        def _fail() -> NoReturn:
            os.environ["SPARK_HIDE_TRACEBACK"] = "1"  # the Python worker reports "Type: message", no traceback
            raise SourceUnavailableError(reason)

    UnavailableDataSource.__qualname__ = UnavailableDataSource.__name__ = f"Unavailable_{name}"
    return UnavailableDataSource


def load_source(
    module: str, attribute: str, *, name: str, extra: str | None = None, requires: Sequence[str] = ()
) -> type[DataSource]:
    """The data source class ``module.attribute`` (format ``name``), or a stand-in if it cannot run here.

    ``extra`` is the pip extra of spyt-queue that installs the source's optional dependencies, whose top-level
    modules are ``requires``. Never raises, so that one hook cannot stop Spark from discovering the others.
    """
    python = sys.executable or "python"
    missing = missing_modules(requires)
    if missing:
        return unavailable_source(
            name,
            f'format("{name}") cannot be used: the "{extra}" extra of spyt-queue is not installed in the Python '
            f"environment of {python} (no module {', '.join(repr(m) for m in missing)}). Install it: "
            f"{_install_hint(extra, reinstall=False)}.",
        )
    try:
        source = getattr(importlib.import_module(module), attribute)
        if not (isinstance(source, type) and issubclass(source, DataSource)):
            raise TypeError(f"{module}.{attribute} is not a DataSource class")
    except Exception as exc:  # anything: a hook must not stop Spark's discovery of the other sources
        return unavailable_source(
            name,
            f'format("{name}") cannot be used: importing {module} failed in {python}: '
            f"{type(exc).__name__}: {exc}. Reinstall spyt-queue: {_install_hint(extra, reinstall=True)}.",
        )
    return source
