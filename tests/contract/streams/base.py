"""The end-to-end stream scenarios every backend shares, written once.

A backend takes part by implementing :class:`StreamLog` (a fresh partitioned log, a query over it into a sink that
can be read back and restarted from its checkpoint, and the committed positions of the query's offset store) and
subclassing :class:`StreamScenarios` with a ``log`` fixture that returns one. Pytest then runs every scenario below
for that backend, on the session's one SparkSession and servers.

The scenarios are the offset contract seen from a user's query: a batch covers ``[start, end)`` of every partition,
the store moves only after the sink committed the batch, a new query resumes from the store, and caps, trimmed rows,
added partitions and a second query on the same store behave the same on every backend.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from abc import ABC, abstractmethod
from typing import Any

import pytest

from spyt_queue.spark.compat import HAS_READ_LIMITS
from tests.queries import run_to_end

#: The source's ``read_mode`` values every scenario runs with (a backend's ``log`` fixture is parametrised by them).
READ_MODES = ("executors", "driver")


class StreamLog(ABC):
    """One fresh log with two partitions, a query reading it into a sink, and the query's offset store.

    Every query a scenario starts reads with the same store and, unless told otherwise, resumes from it
    (``startingOffsets`` at the backend's default where that is the store, else its own name for the store), and
    with the log's :attr:`read_mode`.
    """

    read_mode: str = "executors"

    @abstractmethod
    def produce(self, count: int, partition: int | None = None) -> list[int]:
        """Append ``count`` records with fresh increasing ids (into ``partition``, or round-robin); return the ids."""

    @abstractmethod
    def trim(self, partition: int, before: int) -> None:
        """Remove the records of ``partition`` before offset ``before`` (YT trim, Kafka retention)."""

    @abstractmethod
    def add_partitions(self, total: int) -> None:
        """Grow the log to ``total`` partitions."""

    @abstractmethod
    def key(self, partition: int) -> str:
        """The partition's key in the source's offsets (as a query's progress shows them)."""

    @abstractmethod
    def describe(self, partition: int) -> str:
        """How the source names the partition in its error messages."""

    @abstractmethod
    def stream(self, spark: Any, **options: Any) -> Any:
        """A streaming DataFrame over the log with the store and the given extra options."""

    @abstractmethod
    def start(self, spark: Any, trigger: dict[str, Any], **options: Any) -> Any:
        """Start :meth:`stream` into the sink with this log's checkpoint and ``trigger(**trigger)``."""

    @abstractmethod
    def run(self, spark: Any, available_now: bool = True, **options: Any) -> Any:
        """Run the query to the end (AvailableNow, or Once), raising what it failed with; return the query."""

    @abstractmethod
    def sink_ids(self) -> list[int]:
        """Every id the sink received, sorted, duplicates included (over all checkpoints this log used)."""

    @abstractmethod
    def committed(self) -> dict[int, int]:
        """The store's committed position per partition number (partitions without one left out)."""

    @abstractmethod
    def ends(self) -> dict[int, int]:
        """The next offset per partition number."""

    @abstractmethod
    def delete_checkpoint(self) -> None:
        """Delete the query's checkpoint: the next query is a new one, resuming from the store."""

    @abstractmethod
    def sibling(self, checkpoint: str) -> StreamLog:
        """The same log and store, read by another query with its own ``checkpoint`` (and sink where needed)."""


def batches(query: Any) -> list[dict[str, Any]]:
    """The progress of every batch of ``query`` that read rows."""
    return [p for p in query.recentProgress if p["numInputRows"] > 0]


def offsets(progress: dict[str, Any], which: str) -> dict[str, int]:
    """``startOffset``/``endOffset`` per partition key of a batch (the first batch's start is empty)."""
    data = json.loads(progress.json) if hasattr(progress, "json") else progress  # PySpark 4.0: str() of a dict
    raw = data["sources"][0][which]
    if isinstance(raw, str):
        raw = json.loads(raw) if raw else {}
    return (raw or {}).get("partitions", {})


def scan_bytes_sent_to_python(query: Any) -> int:
    """Bytes the last batch's scan sent to Python tasks (input partitions), from Spark's ``pythonDataSent`` metric.

    Spark keeps one such metric per Python data source for every query of the session, so the value also counts
    earlier queries' scans; a query that ran no Python read task leaves it as it was (or at 0).
    """
    found = []

    def walk(node: Any) -> None:
        if node.nodeName() == "MicroBatchScan" and node.metrics().contains("pythonDataSent"):
            found.append(node.metrics().apply("pythonDataSent").value())
        children = node.children().iterator()
        while children.hasNext():
            walk(children.next())

    walk(query._jsq.streamingQuery().lastExecution().executedPlan())
    assert found, "no MicroBatchScan with a pythonDataSent metric in the last batch's plan"
    return sum(found)


def run_to_memory(df: Any, name: str, checkpoint: str, timeout: float = 180) -> Any:
    """Run ``df`` (AvailableNow) into the memory table ``name`` (a sink with no Python task); return the query."""
    writer = df.writeStream.format("memory").queryName(name).option("checkpointLocation", checkpoint)
    return run_to_end(lambda trigger: writer.trigger(**trigger).start(), timeout=timeout)


class StreamScenarios:
    """The shared scenarios. A subclass named ``Test...`` provides the ``log`` fixture (a fresh :class:`StreamLog`)."""

    @pytest.fixture
    def log(self) -> StreamLog:
        raise NotImplementedError("a backend's subclass provides the log fixture")

    def test_once_reads_everything_then_available_now_caps_every_batch(self, spark, log: StreamLog) -> None:
        """Trigger.Once reads all in one batch despite a cap (one capped batch when read on the driver, where Spark
        passes no read limit, and on PySpark 4.0/4.1, which pass none at all); AvailableNow restarted from the
        checkpoint resumes exactly where it stopped, keeps every batch within ``max_rows_per_partition`` and commits
        its final batch."""
        first = log.produce(40)
        query = log.run(spark, available_now=False, max_rows_per_partition=5)
        once = 40 if log.read_mode == "executors" and HAS_READ_LIMITS else 10  # 4.0/4.1 pass no limit either
        assert [p["numInputRows"] for p in batches(query)] == [once]
        second = log.produce(40)
        query = log.run(spark, max_rows_per_partition=8)
        read = batches(query)
        assert len(read) == math.ceil((80 - once) / 2 / 8)  # rows left per partition, at most 8 per batch
        for progress in read:
            start, end = offsets(progress, "startOffset"), offsets(progress, "endOffset")
            assert all(stop - start.get(key, 0) <= 8 for key, stop in end.items()), progress
        assert sum(p["numInputRows"] for p in read) == 80 - once
        assert log.sink_ids() == first + second
        assert log.committed() == log.ends() == {0: 40, 1: 40}

    def test_available_now_with_caps_reads_the_backlog_in_capped_batches_or_one_per_run(
        self, spark, log: StreamLog
    ) -> None:
        """``Trigger.AvailableNow`` itself (not :func:`~tests.queries.run_to_end`'s stand-in), as the README's PySpark
        table says: on 4.2+ one run reads the whole backlog in batches within ``max_rows_per_partition`` and commits
        it. On 4.0/4.1 Spark falls back to one batch per run: each run reads one capped batch and commits the batch
        of the run before (the store stays one batch behind), until a run that finds nothing new commits the last;
        nothing lost, nothing read twice."""
        ids = log.produce(40)

        def run() -> list[int]:
            query = log.start(spark, {"availableNow": True}, max_rows_per_partition=5)
            query.awaitTermination(180)  # raises what the run failed with
            assert not query.isActive, "the AvailableNow run did not end"
            return [p["numInputRows"] for p in batches(query)]

        if HAS_READ_LIMITS:
            assert run() == [10, 10, 10, 10]
        else:
            for n in range(1, 5):
                assert run() == [10], f"run {n}"
                sink = log.sink_ids()
                assert len(sink) == len(set(sink)) == 10 * n and set(sink) <= set(ids), f"run {n}: {sink}"
                behind = {k: v for k, v in log.committed().items() if v}
                assert behind == ({0: 5 * (n - 1), 1: 5 * (n - 1)} if n > 1 else {}), f"run {n}"
            assert run() == [], "a run with nothing new reads nothing"
        assert log.sink_ids() == ids
        assert log.committed() == log.ends() == {0: 20, 1: 20}

    def test_restart_without_checkpoint_resumes_from_the_store(self, spark, log: StreamLog) -> None:
        """With the checkpoint deleted, the store is the truth: nothing lost, nothing read twice."""
        first = log.produce(30)
        log.run(spark)
        log.delete_checkpoint()
        second = log.produce(20)
        log.run(spark, startingOffsets="store")  # every backend's name for its store (YT consumer, Kafka group)
        assert log.sink_ids() == first + second
        assert log.committed() == log.ends()

    def test_max_offsets_per_trigger_splits_by_backlog_and_never_starves_a_small_partition(
        self, spark, log: StreamLog
    ) -> None:
        """The cap is split in proportion to each partition's backlog, and a partition with a small backlog beside a
        hot one still moves at every trigger (its share is rounded up, as Spark's Kafka source does)."""
        log.produce(40, partition=0)
        log.produce(2, partition=1)
        query = log.run(spark, maxOffsetsPerTrigger=20)
        read = batches(query)
        assert [p["numInputRows"] for p in read] == [20, 20, 2]
        hot, small = log.key(0), log.key(1)
        # 20 * 2/42 rounds down to 0 rows: without the round-up the small partition would wait for the hot one.
        assert [offsets(p, "endOffset") for p in read[:2]] == [{hot: 19, small: 1}, {hot: 38, small: 2}]
        assert log.committed() == log.ends() == {0: 40, 1: 2}

    def test_trimmed_records_start_a_new_log_fail_or_are_skipped(self, spark, log: StreamLog) -> None:
        """Records trimmed before anything was committed are not lost (the query starts at the first one left);
        trimmed after the store's position they fail the query, naming the partition and range, whether it
        resumes from its checkpoint or from the store; ``failOnDataLoss=false`` skips them."""
        ids = log.produce(20, partition=0)
        log.trim(0, 5)
        log.run(spark)
        assert log.sink_ids() == ids[5:]
        more = log.produce(10, partition=0)
        log.trim(0, 25)
        lost = rf"\[20, 25\) of {log.describe(0)}"
        with pytest.raises(Exception, match=lost):
            log.run(spark)
        log.delete_checkpoint()
        with pytest.raises(Exception, match=lost):
            log.run(spark)
        log.run(spark, failOnDataLoss="false")
        assert log.sink_ids() == ids[5:] + more[5:]
        assert log.committed()[0] == 30

    def test_partitions_added_mid_stream_are_read(self, spark, log: StreamLog) -> None:
        first = log.produce(10)
        log.run(spark)
        log.add_partitions(4)
        second = log.produce(40)
        log.run(spark)
        assert log.sink_ids() == first + second
        assert log.committed() == log.ends() == {0: 15, 1: 15, 2: 10, 3: 10}

    def test_two_queries_on_one_store_conflict(self, spark, log: StreamLog, tmp_path) -> None:
        """A second query moving the same store is a clear error for the first, never a silent overwrite."""
        log.produce(10)
        log.run(spark)
        other = log.sibling(str(tmp_path / "other-checkpoint"))
        log.produce(10)
        other.run(spark, startingOffsets="earliest")  # from its own position, advancing the shared store
        log.produce(10)
        with pytest.raises(Exception, match=r"ConsumerConflictError"):
            log.run(spark)

    def test_idle_query_leaves_the_store_at_the_processed_end(self, spark, log: StreamLog) -> None:
        """Spark never commits the last batch of an idle stream; the source does it itself while the query runs."""
        ids = log.produce(20)
        query = log.start(spark, {"processingTime": "500 milliseconds"})
        try:
            deadline = time.time() + 60
            while time.time() < deadline and log.committed() != log.ends():
                time.sleep(0.5)
            assert query.isActive and query.exception() is None
            assert log.committed() == log.ends() == {0: 10, 1: 10}
            assert log.sink_ids() == ids
        finally:
            query.stop()

    def test_driver_reads_run_no_python_task_on_executors(self, spark, log: StreamLog, tmp_path) -> None:
        """``read_mode=executors`` reads in Python tasks (their scan sends input partitions to Python workers);
        ``read_mode=driver`` sends none: the batch comes from the driver's runner through Spark's block manager."""
        log.produce(20)
        table = f"read_mode_{uuid.uuid4().hex[:8]}"
        first = run_to_memory(log.stream(spark, read_mode="executors"), f"{table}_e", str(tmp_path / "cp-e"))
        sent = scan_bytes_sent_to_python(first)
        assert sent > 0
        assert spark.table(f"{table}_e").count() == 20
        if log.read_mode == "driver":
            log.produce(20)
            second = run_to_memory(log.stream(spark), f"{table}_d", str(tmp_path / "cp-d"))
            assert batches(second) and scan_bytes_sent_to_python(second) in (0, sent)
            assert spark.table(f"{table}_d").count() == 20
            assert log.committed() == log.ends()
