"""Outage scenarios every backend shares: the log becomes unreachable while a query runs.

A backend takes part with an :class:`OutageLog` (a fresh two-partition log whose query reaches the server only
through a :class:`~integration.fault_proxy.FaultProxy` on 127.0.0.1, a sink that is exactly-once on its own, and the
committed positions of the query's offset store) and a subclass of :class:`OutageScenarios` listing its
:class:`Case` s in ``OUTAGE_CASES`` (``tests/contract/streams/conftest.py`` parametrises each scenario with them).

The fault is real: the proxy resets the open connections of the query's clients and refuses new ones, starting when a
client sends the first request of the phase under test, so the outage begins exactly in that phase:

* **planning**: ``latestOffset`` fetching the partitions' ends (YT ``get_tablet_infos``, a Kafka admin client's
  ``ListOffsets`` for every partition of the topic);
* **reading**: an executor task's, or with ``read_mode=driver`` the driver's, pull (YT ``pull_consumer``, Kafka
  ``Fetch``);
* **commit**: the offset store's advance after the sink committed (YT ``execute_batch`` of ``advance_consumer`` in a
  tablet transaction, Kafka ``OffsetCommit``).

Each lasts either **shorter** than the retries of the clients (``yt.wrapper``'s, librdkafka's, the committer's,
``fetchOffset.numRetries``), which must then hide it, or **longer** (the test shortens the clients' own retries with
the options a user has for that: ``yt.proxy.retries.*``, ``yt.dynamic_table_retries.*``,
``kafkaConsumer.pollTimeoutMs``). What every scenario proves, for ``Trigger.AvailableNow`` and for a continuous
``processingTime`` trigger:

* every row reaches the sink exactly once, the store ends at the log's end; or the query fails with a named
  spyt-queue error (``UnreachableError``, ``CommitError``, ``SpytQueueError``) and a restart from its checkpoint
  delivers the rest exactly once;
* never does an AvailableNow run report success (``query.exception() is None``) without having read up to its
  target and committed it (issue 28, bugs 2 and 3).
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from integration.fault_proxy import FaultProxy
from spyt_queue.spark.compat import HAS_READ_LIMITS
from tests.contract.streams.base import batches
from tests.queries import run_to_end

#: Rows per scenario (half of them before a continuous query starts), spread over the two partitions, read in
#: batches of at most ``CAP`` rows per partition: an AvailableNow run takes three batches, so an outage armed after
#: the first one meets the run in the middle of its backlog.
ROWS = 24
CAP = 4
TIMEOUT = 180
#: A continuous query's trigger.
CONTINUOUS = {"processingTime": "500 milliseconds"}
#: How a query's failure names its cause: the exception classes of ``spyt_queue.errors`` an outage may end in.
NAMED = re.compile(r"\b(UnreachableError|CommitError|SpytQueueError)\b")


@dataclass(frozen=True)
class Case:
    """One combination: the scenario (a test method of :class:`OutageScenarios`), the outage's length (``short``
    or ``long``, against the clients' retries), the source's ``read_mode`` and, for YT, the exactly-once sink."""

    test: str
    length: str
    read_mode: str = "executors"
    sink: str = ""

    @property
    def id(self) -> str:
        return "-".join(part for part in (self.length, self.read_mode, self.sink) if part)


@dataclass(frozen=True)
class Fault:
    """How a backend cuts its log off for one phase: the requests that start the outage, its seconds, and its
    scope (``server``: everything; ``requests``: only requests like the first one, see
    :meth:`FaultProxy.outage`)."""

    requests: frozenset[str]
    seconds: float
    scope: str = "server"


class OutageLog(ABC):
    """A fresh two-partition log read by one query through :attr:`proxy`, into an exactly-once sink."""

    proxy: FaultProxy
    read_mode: str = "executors"
    #: What the source's errors call it (in the message of a failed bounds fetch).
    source_name: str = ""

    @abstractmethod
    def produce(self, count: int) -> list[int]:
        """Append ``count`` records with fresh increasing ids, round-robin over the partitions; return the ids."""

    @abstractmethod
    def start(self, spark: Any, trigger: dict[str, Any], **options: Any) -> Any:
        """Start the query (source through :attr:`proxy`, this log's checkpoint and sink) with
        ``trigger(**trigger)`` and the extra source options."""

    @abstractmethod
    def sink_ids(self) -> list[int]:
        """Every id in the sink, sorted, duplicates included."""

    @abstractmethod
    def committed(self) -> dict[int, int]:
        """The store's committed position per partition number."""

    @abstractmethod
    def ends(self) -> dict[int, int]:
        """The next offset per partition number (read around the proxy)."""

    @abstractmethod
    def fault(self, phase: str, length: str) -> Fault:
        """The outage of ``phase`` (``planning``, ``reading``, ``commit``) that is ``short`` or ``long``."""

    @abstractmethod
    def retry_options(self, length: str) -> dict[str, Any]:
        """Source options for an outage of ``length``: ``long`` shortens the clients' own retries so that the
        outage outlasts them at an affordable cost."""


def wait_until(condition: Callable[[], bool], timeout: float, what: str, query: Any = None) -> None:
    """Wait until ``condition()`` holds (checked every 0.2 s), or fail saying ``what`` did not happen; also fails
    as soon as ``query`` (if given) has stopped with an exception."""
    deadline = time.monotonic() + timeout
    while not condition():
        if query is not None and not query.isActive and query.exception() is not None:
            raise AssertionError(f"{what}: the query failed instead: {query.exception()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(0.2)


def ended(query: Any, timeout: float) -> bool:
    """Wait up to ``timeout`` s for ``query`` to end; whether it did (PySpark raises a failed query's exception from
    ``awaitTermination``: it is read from ``query.exception()`` instead)."""
    try:
        return bool(query.awaitTermination(timeout))
    except Exception:
        return not query.isActive


def error_text(query: Any) -> str:
    """The query's failure as text ('' when it has none)."""
    error = query.exception()
    return "" if error is None else str(error)


class OutageScenarios:
    """The shared outage scenarios. A subclass provides ``OUTAGE_CASES`` and a ``log`` fixture taking ``case``."""

    OUTAGE_CASES: tuple[Case, ...] = ()

    # -- AvailableNow -----------------------------------------------------------------------------------------
    @pytest.fixture(autouse=True)
    def _available_now_runs_a_backlog(self, request: pytest.FixtureRequest) -> None:
        """The AvailableNow scenarios cut a run off in the middle of its backlog: PySpark 4.0/4.1 run AvailableNow
        for a Python source as one batch (``tests/contract/streams/base.py`` pins that), so there is no middle."""
        if request.function.__name__.endswith("_available_now") and not HAS_READ_LIMITS:
            pytest.skip(
                "PySpark < 4.2 runs Trigger.AvailableNow for Python sources as one batch: no backlog to cut off; "
                "the continuous scenarios cover outages on this line"
            )

    def test_planning_outage_available_now(self, spark, log: OutageLog, case: Case) -> None:
        """Bounds unreachable in the middle of an AvailableNow backlog. Short: retried, the run reads everything.
        Long (bug 2): the run must fail with ``UnreachableError`` naming the source and ``fetchOffset.numRetries`` /
        ``fetchOffset.retryIntervalMs`` (it used to end successfully mid-backlog), and a restart delivers the rest
        once."""
        query = self._available_now_through(spark, log, "planning", case.length)
        if case.length == "long":
            self._assert_fetch_failure(log, query)
        self._settle_available_now(spark, log, query, case.length)

    def test_reading_outage_available_now(self, spark, log: OutageLog, case: Case) -> None:
        """The pulls of a batch (executor tasks, or the driver with ``read_mode=driver``) meet the outage. Short:
        the clients' retries hide it. Long: the run fails naming the cause, nothing of the failed batch is committed
        twice, and a restart from the checkpoint delivers every row once."""
        query = self._available_now_through(spark, log, "reading", case.length)
        self._settle_available_now(spark, log, query, case.length)

    def test_commit_outage_available_now(self, spark, log: OutageLog, case: Case) -> None:
        """The store's advance after the sink meets the outage. Short: the committer's retries commit it. Long
        (bug 3): the run must not end successfully with the store behind the sink; it fails with a named error
        (``CommitError``) and a restart commits and delivers the rest once."""
        query = self._available_now_through(spark, log, "commit", case.length)
        self._settle_available_now(spark, log, query, case.length)

    # -- continuous -------------------------------------------------------------------------------------------
    def test_planning_outage_continuous(self, spark, log: OutageLog, case: Case) -> None:
        """A running query's bounds fetch meets the outage. Short: the query goes on and delivers the rows
        produced around it once. Long: the query fails with ``UnreachableError`` after ``fetchOffset.numRetries``
        (as Spark's Kafka source does) instead of waiting forever, and a restart delivers the rest once."""
        query = self._continuous_through(spark, log, "planning", case.length)
        if case.length == "long":
            self._assert_fetch_failure(log, query)
        self._settle_continuous(spark, log, query, case.length)

    def test_reading_outage_continuous(self, spark, log: OutageLog, case: Case) -> None:
        """A running query's batch meets the outage while it reads. Short: hidden by retries. Long: a named
        failure, then a restart delivers every row once."""
        query = self._continuous_through(spark, log, "reading", case.length)
        self._settle_continuous(spark, log, query, case.length)

    def test_commit_outage_continuous(self, spark, log: OutageLog, case: Case) -> None:
        """A running query's delayed commit meets the outage. Short: retried at once. Long: either the query goes
        on and commits at a later trigger, or it fails with a named error; in both cases every row ends in the sink
        once and the store at the end."""
        query = self._continuous_through(spark, log, "commit", case.length)
        self._settle_continuous(spark, log, query, case.length)

    # -- steps ------------------------------------------------------------------------------------------------
    def _arm(self, log: OutageLog, phase: str, length: str) -> None:
        fault = log.fault(phase, length)
        log.proxy.arm(fault.requests, fault.seconds, scope=fault.scope)

    def _available_now_through(self, spark: Any, log: OutageLog, phase: str, length: str) -> Any:
        """Produce the backlog, start an AvailableNow run, arm the outage once its first batch is in, and wait for
        the run to end (it must, within :data:`TIMEOUT`)."""
        self.produced = log.produce(ROWS)
        self.options = {"max_rows_per_partition": CAP, **log.retry_options(length)}
        query = log.start(spark, {"availableNow": True}, **self.options)
        try:
            wait_until(lambda: bool(batches(query)) or not query.isActive, TIMEOUT, "a first batch")
            assert query.isActive, f"the run ended before its outage: {query.exception()}"
            self._arm(log, phase, length)
            if not ended(query, TIMEOUT):
                raise AssertionError(f"the AvailableNow run did not end within {TIMEOUT} s of its {phase} outage")
        finally:
            if query.isActive:
                query.stop()
        assert log.proxy.outages, f"the {phase} outage never started: the run read its backlog without {phase}"
        return query

    def _settle_available_now(self, spark: Any, log: OutageLog, query: Any, length: str) -> None:
        """The contract's end: a run without an exception read and committed its whole target; one with an
        exception names it, and a restart from the checkpoint delivers the rest, every row exactly once."""
        error = error_text(query)
        if not error:
            assert log.sink_ids() == self.produced, (
                "the AvailableNow run reported success without reading up to its target "
                f"({len(log.sink_ids())} of {len(self.produced)} rows in the sink)"
            )
            assert log.committed() == log.ends(), "the AvailableNow run reported success with the store behind the sink"
            if length == "short":
                return
        else:
            assert length == "long", f"an outage shorter than the retries failed the run: {error}"
            assert NAMED.search(error), f"the run failed without a named spyt-queue error: {error}"
            assert log.proxy.wait_healed(TIMEOUT)
            restart = log.start(spark, {"availableNow": True}, **self.options)
            assert ended(restart, TIMEOUT), "the restart did not end"
            assert restart.exception() is None, f"the restart from the checkpoint failed: {restart.exception()}"
        assert log.sink_ids() == self.produced, "not every row reached the sink exactly once"
        assert log.committed() == log.ends()

    def _continuous_through(self, spark: Any, log: OutageLog, phase: str, length: str) -> Any:
        """Start a continuous query on half the rows, wait until it is idle with everything committed, arm the
        outage, produce the other half (the batch that reads and commits them meets it) and wait for the outage."""
        first = log.produce(ROWS // 2)
        self.options = {"max_rows_per_partition": CAP, **log.retry_options(length)}
        query = log.start(spark, CONTINUOUS, **self.options)
        try:
            wait_until(
                lambda: log.sink_ids() == first and log.committed() == log.ends(),
                TIMEOUT,
                "the first rows delivered and committed",
                query,
            )
            self._arm(log, phase, length)
            self.produced = first + log.produce(ROWS // 2)
            assert log.proxy.wait_outage(TIMEOUT), f"the {phase} outage never started"
        except BaseException:
            query.stop()
            raise
        return query

    def _settle_continuous(self, spark: Any, log: OutageLog, query: Any, length: str) -> None:
        """Short: the query is still running and delivers and commits everything. Long: it either failed with a
        named error (then a restart from the checkpoint delivers the rest) or delivers and commits everything
        after the outage; every row once."""
        try:
            if length == "short":
                wait_until(
                    lambda: log.sink_ids() == self.produced and log.committed() == log.ends(),
                    TIMEOUT,
                    "every row delivered once and committed after a short outage",
                    query,
                )
                assert query.isActive and query.exception() is None
                return
            assert log.proxy.wait_healed(TIMEOUT)
            wait_until(
                lambda: not query.isActive or (log.sink_ids() == self.produced and log.committed() == log.ends()),
                TIMEOUT,
                "after a long outage, the query neither failed nor delivered and committed every row",
            )
        finally:
            if query.isActive:
                query.stop()
        error = error_text(query)
        if error:
            assert NAMED.search(error), f"the query failed without a named spyt-queue error: {error}"
            # AvailableNow from the checkpoint (on PySpark 4.0/4.1, where that is one batch: its stand-in)
            run_to_end(lambda trigger: log.start(spark, trigger, **self.options), timeout=TIMEOUT)
        assert log.sink_ids() == self.produced, "not every row reached the sink exactly once"
        assert log.committed() == log.ends()

    def _assert_fetch_failure(self, log: OutageLog, query: Any) -> None:
        """A bounds fetch that outlasted its retries: the query failed with ``UnreachableError`` naming the source
        and the two options that set the retries."""
        if query.isActive:  # continuous: it must fail by itself once the retries are spent, during the outage
            wait_until(lambda: not query.isActive, 90, "the query failing after its bounds fetch retries")
        error = error_text(query)
        assert error, "the bounds stayed unreachable beyond fetchOffset.numRetries, yet the query reported success"
        assert "UnreachableError" in error, f"expected UnreachableError, got: {error}"
        for name in ("fetchOffset.numRetries", "fetchOffset.retryIntervalMs", log.source_name):
            assert name in error, f"the error does not name {name!r}: {error}"
