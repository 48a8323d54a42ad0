"""Several ``ytqueue`` queries started at the same moment in one driver, then restarted from their checkpoints.

Spark 4 (checked up to 4.3) writes four environment entries into a map shared by every query of one Python data
source, without a lock, on each query's own thread as it starts (``PythonStreamingSourceRunner.init``). Two
queries starting at once could corrupt it, and from then on every task of every query of the source failed while
Spark deserialized it (``java.io.OptionalDataException`` under ``java.util.HashMap.readObject``).
``spyt_queue.register`` pre-fills those entries, so a start only replaces values in place.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException

from spyt_queue import register
from spyt_queue.datasource import STREAM_RUNNER_ENV
from tests.yt.helpers import Pipeline, make_pipeline

pytestmark = pytest.mark.spark

ROUNDS = 3  # the first start, then two restarts
ROWS_PER_ROUND = 8  # over 2 tablets, capped at 2 rows per tablet: two batches per run
TIMEOUT = 180
START_ATTEMPTS = 3


def shared_env(spark: Any) -> Any:
    """The environment map (a ``java.util.Map``) that every query of ``format("ytqueue")`` in this JVM shares."""
    source = spark._jsparkSession.sessionState().dataSourceManager().lookupDataSource("ytqueue")
    return source.dataSourceCls().envVars()


def test_query_start_leaves_the_shared_environment_unchanged(spark, yt, yt_proxy, yt_root, checkpoint) -> None:
    register(spark)  # a fresh registration has a fresh map, as in a new driver
    env = shared_env(spark)
    before = set(env.keySet())
    pipe = make_pipeline(yt, yt_proxy, yt_root, checkpoint)
    pipe.produce(4)
    pipe.run(spark)
    assert set(env.keySet()) == before  # the start inserted nothing: concurrent starts can not corrupt the map
    assert set(STREAM_RUNNER_ENV) <= before
    assert pipe.output_ids() == [0, 1, 2, 3]


@dataclass
class Stream:
    """One query of the test: a pipeline and the sink it writes to."""

    pipe: Pipeline
    sink: str
    produced: list[int] = field(default_factory=list)
    seen: list[int] = field(default_factory=list)

    def writer(self, spark: Any, round_: int, attempt: int = 0) -> Any:
        """The query's writer, built before the common start (``load()`` runs here, not concurrently)."""
        df = self.pipe.reader(spark, max_rows_per_partition=2).select("id")
        writer = df.writeStream.trigger(availableNow=True)
        if self.sink == "ytqueue":
            out = df.selectExpr("id", "cast(id as string) as payload")
            writer = out.writeStream.trigger(availableNow=True).format("ytqueue").option("proxy", self.pipe.proxy)
            return writer.option("path", self.pipe.output).option("checkpointLocation", self.pipe.checkpoint)
        if self.sink == "noop":
            return writer.format("noop").option("checkpointLocation", self.pipe.checkpoint)
        # Spark's memory sink can not recover from a checkpoint: each round starts a new one and resumes from the
        # committed consumer (the restart with the checkpoint deleted)
        return writer.format("memory").queryName(f"concurrent_{round_}").option(
            "checkpointLocation", f"{self.pipe.checkpoint}-{round_}-{attempt}"
        )

    def check(self, spark: Any, query: Any, round_: int) -> None:
        """Every produced row reached the sink exactly once so far, and the consumer sits at the end."""
        if self.sink == "ytqueue":
            self.seen = self.pipe.output_ids()
        elif self.sink == "noop":  # the sink keeps nothing: count what the query read
            self.seen += [0] * sum(p["numInputRows"] for p in query.recentProgress)
        else:
            self.seen += [r.id for r in spark.table(f"concurrent_{round_}").collect()]
        expected = sorted(self.produced) if self.sink != "noop" else [0] * len(self.produced)
        assert sorted(self.seen) == expected, f"{self.sink} sink after round {round_}"
        assert self.pipe.consumer_offsets() == self.pipe.ends(), f"{self.sink} consumer after round {round_}"


def start_together(spark: Any, streams: list[Stream], round_: int) -> list[Any]:
    """Start every stream's query from its own thread at the same moment; returns the queries."""
    writers = [s.writer(spark, round_) for s in streams]
    barrier = threading.Barrier(len(writers))

    def start(writer: Any) -> Any:
        # Spark looks a Python data source sink up in the calling thread's active session, which a new thread
        # lacks (DATA_SOURCE_NOT_FOUND); PySpark pins each Python thread to one JVM thread
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        barrier.wait(timeout=TIMEOUT)
        return writer.start()

    with ThreadPoolExecutor(len(writers)) as pool:
        return list(pool.map(start, writers))


def worker_start_timed_out(error: Exception) -> bool:
    """Whether a query failed only because a Python process Spark started for it did not connect back within
    Spark's fixed 10 seconds (``PythonWorkerFactory``), before the query read anything: on a heavily loaded machine
    several Python processes starting at once can take that long. Nothing of ours has run then."""
    text = str(error)
    return "Python worker failed to connect back" in text and "Current State: INITIALIZING" in text


def finish(spark: Any, stream: Stream, query: Any, round_: int) -> Any:
    """Wait for ``query``; a start that timed out in Spark (see :func:`worker_start_timed_out`) is started again
    from its checkpoint, a bounded number of times. Returns the query that finished."""
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            query.awaitTermination(TIMEOUT)
        except StreamingQueryException:
            pass  # examined below
        if query.isActive:
            query.stop()
            raise AssertionError(f"the {stream.sink} query did not finish within {TIMEOUT}s")
        error = query.exception()
        if error is None:
            return query
        if attempt == START_ATTEMPTS or not worker_start_timed_out(error):
            raise AssertionError(f"the {stream.sink} query failed in round {round_}: {error}")
        query = stream.writer(spark, round_, attempt).start()
    raise AssertionError("unreachable")


def test_queries_started_at_once_and_restarted_lose_nothing(spark, yt, yt_proxy, yt_root, tmp_path) -> None:
    register(spark)  # a fresh registration: its first starts are the ones that raced
    streams = [
        Stream(make_pipeline(yt, yt_proxy, f"{yt_root}/{sink}", str(tmp_path / sink)), sink)
        for sink in ("ytqueue", "noop", "memory")
    ]
    for round_ in range(ROUNDS):
        for stream in streams:
            stream.produced += stream.pipe.produce(ROWS_PER_ROUND)
        queries = start_together(spark, streams, round_)
        try:
            queries = [finish(spark, stream, query, round_) for stream, query in zip(streams, queries, strict=True)]
        finally:
            for query in queries:
                query.stop()
        for stream, query in zip(streams, queries, strict=True):
            stream.check(spark, query, round_)
