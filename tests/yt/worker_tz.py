"""Run a Python data source of the shared local SparkSession as if every process lived in another time zone.

The session's Python workers are started once with the driver's environment; a data source registered while
``SparkContext.environment`` holds ``TZ`` gets that variable in the environment of the workers that plan, read
and write for it (Spark keys its pools of Python workers by that environment, so they are separate processes). The
session time zone (which sets the zone of the Arrow timestamps Spark hands to Python) and the JVM's default zone
are switched too, and everything is restored afterwards. Every ``read``/``write`` of the registered copy first
checks that its process really runs in the zone, so a test can not pass because the zone never arrived.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

SESSION_TZ = "spark.sql.session.timeZone"


def _in_zone(obj: Any, tz: str, methods: tuple[str, ...]) -> Any:
    """``obj`` with its ``methods`` first checking, in the process that runs them, that ``TZ`` is ``tz``."""

    def check() -> None:
        import os
        import time

        time.tzset()
        if os.environ.get("TZ") != tz:
            raise AssertionError(f"this Python worker runs with TZ={os.environ.get('TZ')!r}, not {tz!r}")

    def wrap(name: str) -> Callable[..., Any]:
        original = getattr(type(obj), name)

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            check()
            return original(self, *args, **kwargs)

        return method

    obj.__class__ = type(type(obj).__name__, (type(obj),), {m: wrap(m) for m in methods if hasattr(obj, m)})
    return obj


@contextmanager
def python_workers_in(spark: Any, tz: str) -> Iterator[Callable[[type], str]]:
    """Inside: ``register(DataSourceClass)`` registers a copy of the data source under a fresh name (returned, for
    ``format()``) whose Python workers run with ``TZ=tz``; the session time zone and the JVM default are ``tz``."""
    sc = spark.sparkContext
    jvm_zone = sc._jvm.java.util.TimeZone
    saved_env = sc.environment.get("TZ")
    saved_session = spark.conf.get(SESSION_TZ, None)
    saved_default = jvm_zone.getDefault()

    def register(source: type) -> str:
        name = f"{source.name()}_tz_{uuid.uuid4().hex[:8]}"
        readers = ("read",)
        writers = ("write",)

        def wrapped(base: str, methods: tuple[str, ...]) -> Callable[..., Any]:
            def method(self: Any, *args: Any, **kwargs: Any) -> Any:
                return _in_zone(getattr(source, base)(self, *args, **kwargs), tz, methods)

            return method

        copy = type(
            f"{source.__name__}InZone",
            (source,),
            {
                "name": classmethod(lambda cls: name),
                "reader": wrapped("reader", readers),
                "streamReader": wrapped("streamReader", readers),
                "writer": wrapped("writer", writers),
                "streamWriter": wrapped("streamWriter", writers),
            },
        )
        spark.dataSource.register(copy)
        return name

    sc.environment["TZ"] = tz
    spark.conf.set(SESSION_TZ, tz)
    jvm_zone.setDefault(jvm_zone.getTimeZone(tz))
    try:
        yield register
    finally:
        jvm_zone.setDefault(saved_default)
        if saved_session is None:
            spark.conf.unset(SESSION_TZ)
        else:
            spark.conf.set(SESSION_TZ, saved_session)
        if saved_env is None:
            sc.environment.pop("TZ", None)
        else:
            sc.environment["TZ"] = saved_env
