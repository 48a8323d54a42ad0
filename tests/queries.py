"""Running a test's streaming query to its end on every PySpark line.

PySpark 4.2+ runs ``Trigger.AvailableNow`` for Python sources in capped batches. PySpark 4.0/4.1 run it as a single
batch (:mod:`spyt_queue.spark.compat`), so there "read what is there now, in capped batches, commit, stop" is a
``processingTime`` query stopped at its first trigger that finds nothing new: that trigger's ``latestOffset`` has
committed the last batch, as AvailableNow's final check does on 4.2+.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from spyt_queue.spark.compat import HAS_READ_LIMITS

#: The status message of a trigger that found no new data (``MicroBatchExecution``).
IDLE = "Waiting for data to arrive"


def run_to_end(start: Callable[[dict[str, Any]], Any], available_now: bool = True, timeout: float = 120) -> Any:
    """Start a query with ``start(trigger)`` and wait for its end; raise what it failed with; return the query.

    ``available_now=False`` runs ``Trigger.Once`` (one batch on every line)."""
    if available_now and not HAS_READ_LIMITS:
        query = start({"processingTime": "0 seconds"})
        deadline = time.time() + timeout
        while query.isActive and time.time() < deadline:
            status = query.status
            if status["message"] == IDLE and not status["isDataAvailable"] and not status["isTriggerActive"]:
                query.stop()
                break
            time.sleep(0.1)
    else:
        query = start({"availableNow": True} if available_now else {"once": True})
        query.awaitTermination(timeout)
    if query.isActive:
        query.stop()
        raise AssertionError(f"query did not finish within {timeout}s")
    if query.exception() is not None:
        raise query.exception()
    return query
