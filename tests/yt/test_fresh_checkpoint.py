"""A drained pipeline started again with a new checkpoint (a redeploy, or the checkpoint deleted: the docs present
both as the way to resume from the offset store), for every exactly-once YT sink and every offset store.

* **Caught up, no new rows:** the new query's batch 0 is empty (its end is its start, where the store already is).
  It must not fail: AvailableNow ends cleanly, a continuous trigger keeps running and waits for rows (and then
  writes each new row once). It must write nothing again and leave the store where it was.
* **Lagging:** rows arrived after the drain; the new query resumes from the store and writes each of them once,
  leaving the rows of the first run untouched.

The matrix: the YT consumer (``consumer_path``) under the three exactly-once sinks of ``docs/writing-yt.md`` (sorted
target keyed by the source's service columns, ``producer_path`` producer sessions, ``transactional=true``), and the
other stores (``zookeeper://``, ``hbase://``, ``kudu://`` on a YT queue, the consumer group of a Kafka topic) under the
idempotent sorted target. Every row written carries the label of the run that wrote it, so a rewrite shows even in a
sorted target (it changes the label); Spark's ``numInputRows`` counts what each new query read.
"""

from __future__ import annotations

import shutil
import time
import uuid
from abc import ABC, abstractmethod
from typing import Any

import pytest

from spyt_queue.stores.registry import open_store
from spyt_queue.yt.admin import column, create_consumer, create_producer, create_queue, create_sorted_table
from tests.kafka.helpers import Topic
from tests.yt.helpers import EVENT_SCHEMA, produce_ids

pytestmark = pytest.mark.spark

#: Rows of the first run, and rows arriving later (a lagging store, or rows a waiting continuous query picks up).
FIRST, LATER = 12, 6
TIMEOUT = 120


class Flow(ABC):
    """A two-partition log, an offset store and an exactly-once YT target; queries over them, labelled by run."""

    def __init__(self, yt: Any, proxy: str, root: str) -> None:
        self.yt, self.proxy, self.root = yt, proxy, root
        self.target = f"{root}/target"
        self.produced: list[int] = []

    @abstractmethod
    def produce(self, count: int) -> list[int]:
        """Append ``count`` rows with fresh ids, round-robin over both partitions."""

    @abstractmethod
    def start(self, spark: Any, checkpoint: str, run: str, trigger: dict[str, Any]) -> Any:
        """Start the pipeline with ``checkpoint``, writing ``run`` into every row; return the query."""

    @abstractmethod
    def committed(self) -> dict[int, int]:
        """The store's committed position per partition number."""

    @abstractmethod
    def ends(self) -> dict[int, int]:
        """The next offset per partition number of the log."""

    def written(self) -> list[tuple[int, str]]:
        """``(id, run)`` of every row of the target, duplicates included."""
        return sorted((int(r["id"]), r["run"]) for r in self.yt.select_rows(f"id, run from [{self.target}]"))


class YtFlow(Flow):
    """A YT queue read through its consumer (``store='consumer'``) or a URI store, into the target of ``sink``:
    ``sorted`` (keyed by the service columns), ``producer`` (ordered, through producer sessions) or
    ``transactional`` (ordered, rows and consumer advance in one transaction)."""

    def __init__(self, yt: Any, proxy: str, root: str, sink: str, store: str = "consumer") -> None:
        super().__init__(yt, proxy, root)
        self.sink, self.store = sink, store
        self.queue, self.consumer = f"{root}/queue", f"{root}/consumer"
        self.group = f"fresh-{uuid.uuid4().hex[:8]}"
        create_queue(yt, self.queue, EVENT_SCHEMA, tablet_count=2)
        self.source = f"yt:{self.queue}#{yt.get(self.queue + '/@id')}"
        if store == "consumer":
            create_consumer(yt, self.consumer, self.queue)
        payload = [column("id", "int64"), column("payload", "string"), column("run", "string")]
        if sink == "sorted":
            keys = [
                column("__spyt_streaming_src_tablet_index", "int64", sort_order="ascending"),
                column("__spyt_streaming_src_row_index", "int64", sort_order="ascending"),
            ]
            create_sorted_table(yt, self.target, keys + payload)
        else:
            create_queue(yt, self.target, payload)
        if sink == "producer":
            self.producer = f"{root}/producer"
            create_producer(yt, self.producer)

    def produce(self, count: int) -> list[int]:
        ids = produce_ids(self.yt, self.queue, len(self.produced), count)
        self.produced += ids
        return ids

    def start(self, spark: Any, checkpoint: str, run: str, trigger: dict[str, Any]) -> Any:
        reader = spark.readStream.format("ytqueue").option("proxy", self.proxy)
        if self.store == "consumer":
            reader = reader.option("consumer_path", self.consumer)
        else:
            reader = reader.option("offsets.store", self.store).option("offsets.group", self.group)
        df = reader.option("include_service_columns", str(self.sink != "transactional").lower()).load(self.queue)
        columns = ["id", "payload", f"'{run}' as run"]
        if self.sink != "transactional":  # the sorted target's key; the producer sessions' sequence numbers
            columns += ["__spyt_streaming_src_tablet_index", "__spyt_streaming_src_row_index"]
        writer = (
            df.selectExpr(*columns)
            .writeStream.format("ytqueue")
            .option("proxy", self.proxy)
            .option("path", self.target)
            .option("checkpointLocation", checkpoint)
        )
        if self.sink == "producer":
            writer = writer.option("producer_path", self.producer)
        elif self.sink == "transactional":
            writer = writer.option("transactional", "true").option("consumer_path", self.consumer)
        return writer.trigger(**trigger).start()

    def committed(self) -> dict[int, int]:
        if self.store == "consumer":
            rows = self.yt.select_rows(f'* from [{self.consumer}] where queue_path = "{self.queue}"')
            return {int(r["partition_index"]): int(r["offset"]) for r in rows}
        store = open_store(self.store, self.source, self.group)
        try:
            return {int(k): v for k, v in store.committed().items() if v is not None}
        finally:
            store.close()

    def ends(self) -> dict[int, int]:
        infos = self.yt.get_tablet_infos(self.queue, [0, 1])["tablets"]
        return {i: int(t["total_row_count"]) for i, t in enumerate(infos)}


class KafkaFlow(Flow):
    """A Kafka topic resuming from its consumer group (``startingOffsets=group``) into a sorted YT target keyed by
    the record's partition and offset."""

    def __init__(self, yt: Any, proxy: str, root: str, bootstrap: str) -> None:
        super().__init__(yt, proxy, root)
        self.topic = Topic(bootstrap, checkpoint="")
        create_sorted_table(
            yt,
            self.target,
            [
                column("partition", "int64", sort_order="ascending"),
                column("offset", "int64", sort_order="ascending"),
                column("id", "int64"),
                column("run", "string"),
            ],
        )

    def produce(self, count: int) -> list[int]:
        ids = self.topic.produce(count)
        self.produced += ids
        return ids

    def start(self, spark: Any, checkpoint: str, run: str, trigger: dict[str, Any]) -> Any:
        df = self.topic.stream(spark, startingOffsets="group").selectExpr(
            "cast(partition as long) as partition",
            "offset",
            "cast(cast(value as string) as long) as id",
            f"'{run}' as run",
        )
        return (
            df.writeStream.format("ytqueue")
            .option("proxy", self.proxy)
            .option("path", self.target)
            .option("checkpointLocation", checkpoint)
            .trigger(**trigger)
            .start()
        )

    def committed(self) -> dict[int, int]:
        return self.topic.group_offsets()

    def ends(self) -> dict[int, int]:
        return self.topic.ends()


#: Every exactly-once YT sink on the YT consumer, and every other store under the idempotent sorted target.
CASES = ["sorted", "producer", "transactional", "zookeeper", "hbase", "kudu", "kafka-group"]
#: The running (processing-time) case, for the suite's time: the transactional sink (where the false conflict was), a
#: URI store and the Kafka group; the others share their code paths with these.
CONTINUOUS_CASES = ["transactional", "zookeeper", "kafka-group"]


@pytest.fixture(params=CASES)
def flow(request, yt, yt_proxy, yt_root) -> Flow:
    case = request.param
    if case in ("sorted", "producer", "transactional"):
        return YtFlow(yt, yt_proxy, yt_root, case)
    if case == "kafka-group":
        return KafkaFlow(yt, yt_proxy, yt_root, request.getfixturevalue("kafka_bootstrap"))
    table = f"offsets_{uuid.uuid4().hex[:8]}"
    uri = {
        "zookeeper": lambda: request.getfixturevalue("zookeeper").uri(f"/spyt-fresh-{uuid.uuid4().hex[:8]}"),
        "hbase": lambda: request.getfixturevalue("hbase").uri(table),
        "kudu": lambda: request.getfixturevalue("kudu").uri(table),
    }[case]()
    return YtFlow(yt, yt_proxy, yt_root, "sorted", store=uri)


def finish(query: Any, timeout: float = TIMEOUT) -> Any:
    """Wait for an AvailableNow query to end; it must end by itself and without an error."""
    query.awaitTermination(timeout)
    if query.isActive:
        query.stop()
        raise AssertionError(f"the AvailableNow query did not end within {timeout} s")
    if query.exception() is not None:
        raise query.exception()
    return query


def rows_read(query: Any) -> int:
    """Rows the query's batches read (Spark's ``numInputRows``)."""
    return sum(int(p["numInputRows"]) for p in query.recentProgress)


def wait_until(condition, query: Any, what: str, timeout: float = 60) -> None:
    """Poll ``condition`` while ``query`` runs; fail with the query's error if it stops, or after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert query.isActive, f"the query stopped while waiting for {what}: {query.exception()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def drain(spark: Any, flow: Flow, checkpoint: str) -> list[int]:
    """The first run: FIRST rows read to the end (AvailableNow), the store at the end of the log."""
    ids = flow.produce(FIRST)
    finish(flow.start(spark, checkpoint, "first", {"availableNow": True}))
    assert flow.written() == [(i, "first") for i in ids]
    assert flow.committed() == flow.ends() == {0: FIRST // 2, 1: FIRST // 2}
    return ids


def test_available_now_on_a_caught_up_store_ends_and_writes_nothing(spark, flow: Flow, tmp_path) -> None:
    """A new checkpoint on a caught-up store with no new rows: the AvailableNow run ends cleanly, reads nothing,
    writes nothing and leaves the store where it was."""
    first = drain(spark, flow, str(tmp_path / "chk"))
    query = finish(flow.start(spark, str(tmp_path / "redeployed"), "fresh", {"availableNow": True}))
    assert rows_read(query) == 0
    assert flow.written() == [(i, "first") for i in first], "nothing written again"
    assert flow.committed() == {0: FIRST // 2, 1: FIRST // 2}


@pytest.mark.parametrize("flow", CONTINUOUS_CASES, indirect=True)
def test_continuous_query_on_a_caught_up_store_waits_for_rows(spark, flow: Flow, tmp_path) -> None:
    """A new checkpoint on a caught-up store with a processing-time trigger: the query keeps running through its
    empty batch 0 and idle triggers, writes nothing, then writes each row arriving later once."""
    first = drain(spark, flow, str(tmp_path / "chk"))
    query = flow.start(spark, str(tmp_path / "redeployed"), "fresh", {"processingTime": "200 milliseconds"})
    try:
        wait_until(lambda: query.lastProgress is not None, query, "the first batch")
        time.sleep(1.5)  # several idle triggers
        assert query.isActive, f"the query stopped: {query.exception()}"
        assert rows_read(query) == 0
        assert flow.written() == [(i, "first") for i in first], "nothing written again"
        later = flow.produce(LATER)
        expected = sorted([(i, "first") for i in first] + [(i, "fresh") for i in later])
        # the rows in the target, and their batch finished (its progress recorded)
        wait_until(lambda: len(flow.written()) >= len(expected) and rows_read(query) >= LATER, query, "the rows")
        assert query.isActive, f"the query stopped: {query.exception()}"
    finally:
        query.stop()
    assert flow.written() == expected, "each later row once, the first run's rows untouched"
    assert rows_read(query) == LATER


def test_available_now_on_a_lagging_store_resumes_and_writes_each_row_once(spark, flow: Flow, tmp_path) -> None:
    """Rows arrived after the drain and the checkpoint was deleted: the new query resumes from the store, writes
    each remaining row once (the first run's rows untouched) and commits the store to the end."""
    checkpoint = str(tmp_path / "chk")
    first = drain(spark, flow, checkpoint)
    later = flow.produce(LATER)
    shutil.rmtree(checkpoint)
    query = finish(flow.start(spark, checkpoint, "fresh", {"availableNow": True}))
    assert rows_read(query) == LATER
    written = flow.written()
    assert written == sorted([(i, "first") for i in first] + [(i, "fresh") for i in later])
    total = (FIRST + LATER) // 2
    assert flow.committed() == flow.ends() == {0: total, 1: total}
