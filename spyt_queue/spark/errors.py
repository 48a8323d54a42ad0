"""How spyt-queue's errors reach the user through Spark: one line, without a Python traceback.

Used by every data source of the plugin (``ytqueue``, ``spyt_kudu``, ``spyt_hbase``) and its sinks' driver-side
calls; depends on nothing of the plugin but :mod:`spyt_queue.errors`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from spyt_queue.errors import SpytQueueError

T = TypeVar("T")


def one_line(error: SpytQueueError) -> SpytQueueError:
    """Prepare ``error`` to reach the user as one line: its own message, without a Python traceback.

    Spark runs these driver-side calls in a short-lived Python worker that reports an exception as its formatted
    traceback; PySpark's worker prints only ``Type: message`` when ``SPARK_HIDE_TRACEBACK`` is set (what
    ``spark.sql.execution.pyspark.udf.hideTraceback.enabled`` does for UDFs). The worker exits right after
    reporting the error, so setting it affects nothing else. Errors of spyt-queue carry everything in their message.
    """
    os.environ["SPARK_HIDE_TRACEBACK"] = "1"
    return error.with_traceback(None)


def user_errors(call: Callable[[], T]) -> T:
    """Run a driver-side entry point, reporting spyt-queue's own errors in one line (see :func:`one_line`)."""
    try:
        return call()
    except SpytQueueError as error:
        raise one_line(error) from None


F = TypeVar("F", bound=Callable[..., Any])


def one_line_errors(method: F) -> F:
    """Decorate a reader method Spark calls in a running query (``initialOffset``, ``latestOffset``, ``partitions``,
    ``commit``...): spyt-queue's own errors reach the user as one line with no chained traceback (see
    :func:`one_line`). Other exceptions keep their traceback: they are bugs to report, not mistakes to fix."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except SpytQueueError as error:
            raise one_line(error) from None

    return wrapper  # type: ignore[return-value]


def one_line_rows(rows: Iterator[T]) -> Iterator[T]:
    """``rows`` (what a task's ``read`` yields), spyt-queue's errors raised while iterating as one line."""
    try:
        yield from rows
    except SpytQueueError as error:
        raise one_line(error) from None
