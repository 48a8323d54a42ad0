"""Where the Kafka adapter must behave as Spark's own Kafka source does (scenarios from Spark's
``KafkaRelationSuite``/``KafkaMicroBatchSourceSuite``), and the same option rules on the YT path, on a real local
Spark against a real Kafka broker and the embedded YT server."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.kafka.helpers import Topic
from tests.yt.helpers import make_pipeline

pytestmark = pytest.mark.spark

FUTURE_MS = 4_102_444_800_000  # 2100-01-01: no record has a timestamp at or after it


@pytest.fixture
def topic(kafka_bootstrap, checkpoint) -> Topic:
    return Topic(kafka_bootstrap, checkpoint)


def batch(spark: Any, topic: Topic, **options: Any) -> Any:
    """``spark.read`` over the topic with Spark-Kafka options."""
    reader = spark.read.format("ytqueue").option("kafka.bootstrap.servers", topic.bootstrap)
    reader = reader.option("subscribe", topic.name)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def values(df: Any) -> list[int]:
    return sorted(int(r.value) for r in df.selectExpr("cast(value as string) as value").collect())


def failure_of(query: Any, timeout: float = 120) -> str:
    """The text of the exception that stopped ``query`` (which must stop by itself)."""
    try:
        query.awaitTermination(timeout)
    except Exception as error:  # awaitTermination raises the query's failure
        return str(error)
    if query.isActive:
        query.stop()
        raise AssertionError("the query was expected to fail but kept running")
    assert query.exception() is not None, "the query was expected to fail"
    return str(query.exception())


def start_noop(df: Any, checkpoint: str) -> Any:
    return df.writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(availableNow=True).start()


# -- 1. a batch read that resolves to no records ---------------------------------------------------------------


def test_batch_read_of_an_empty_topic_is_an_empty_dataframe(spark, topic) -> None:
    df = batch(spark, topic)
    assert df.count() == 0
    assert df.collect() == []


def test_batch_read_of_only_aborted_records_under_read_committed_is_empty(spark, topic) -> None:
    producer = Producer({"bootstrap.servers": topic.bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic.name, value=str(i).encode(), partition=0)
    producer.flush(30)
    producer.abort_transaction(30)
    df = batch(spark, topic, **{"kafka.isolation.level": "read_committed"})
    assert df.collect() == []
    assert values(batch(spark, topic)) == [0, 1, 2]  # read_uncommitted (the default) shows them, as Spark does


# -- 2. a reused DataFrame resolves earliest/latest at each execution -------------------------------------------


def test_reused_batch_dataframe_sees_records_produced_since_its_last_execution(spark, topic) -> None:
    df = batch(spark, topic, startingOffsets="earliest", endingOffsets="latest")
    first = topic.produce(4)
    assert df.count() == 4
    second = topic.produce(4)
    assert df.count() == 8
    third = topic.produce(4)
    assert values(df) == first + second + third
    assert df.union(df).count() == 24


def test_reused_batch_dataframe_with_task_splitting_keeps_its_first_ends(spark, topic) -> None:
    """Deliberate difference: with maxRecordsPerPartition/minPartitions the ranges are cut when the DataFrame is first
    planned (PySpark plans a Python source's batch partitions once per DataFrame), so they stay fixed."""
    df = batch(spark, topic, maxRecordsPerPartition=1)
    topic.produce(4)
    assert df.count() == 4
    topic.produce(4)
    assert df.count() == 4
    assert batch(spark, topic, maxRecordsPerPartition=1).count() == 8


# -- 3. batch options Spark rejects -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"startingOffsets": '{"T": {"0": -1, "1": 0}}'}, r"Invalid option 'startingOffsets': offset -1 \(latest\)"),
        ({"endingOffsets": '{"T": {"0": -2, "1": 2}}'}, r"Invalid option 'endingOffsets': offset -2 \(earliest\)"),
        ({"endingOffsets": "earliest"}, r"Invalid option 'endingOffsets': 'earliest' is not allowed"),
        (
            {"startingOffsets": '{"T": {"0": 0}}', "endingOffsets": '{"T": {"1": 2}}'},
            r"Invalid option 'endingOffsets': must name the same partitions as startingOffsets",
        ),
    ],
    ids=["start-latest-json", "end-earliest-json", "end-earliest", "different-partitions"],
)
def test_batch_options_spark_rejects_are_rejected(spark, topic, options, error) -> None:
    topic.produce(4)
    options = {key: value.replace('"T"', json.dumps(topic.name)) for key, value in options.items()}
    with pytest.raises(Exception, match=error):
        batch(spark, topic, **options).count()


# -- 4. reading by timestamp ---------------------------------------------------------------------------------------


def test_ending_by_timestamp_without_a_later_record_ends_at_the_latest_offset(spark, topic) -> None:
    ids = topic.produce(6)
    by_partition = json.dumps({topic.name: {"0": FUTURE_MS, "1": FUTURE_MS}})
    assert values(batch(spark, topic, endingOffsetsByTimestamp=by_partition)) == ids
    assert values(batch(spark, topic, endingTimestamp=FUTURE_MS)) == ids


@pytest.mark.parametrize("option", ["startingTimestamp", "startingOffsetsByTimestamp"])
def test_starting_by_timestamp_without_a_later_record_names_the_option_given(spark, topic, option) -> None:
    topic.produce(4)
    value = FUTURE_MS if option == "startingTimestamp" else json.dumps({topic.name: {"0": FUTURE_MS, "1": 0}})
    with pytest.raises(Exception, match=rf"Invalid option '{option}': no record of partition 0 of topic"):
        batch(spark, topic, **{option: value}).count()


# -- 5. streaming option errors: at load(), or at start() without a masking UnboundLocalError ---------------------


def test_kafka_stream_option_invalid_in_every_mode_fails_at_load(spark, topic) -> None:
    with pytest.raises(Exception, match=r"Invalid option 'minOffsetsPerTrigger': 10 is larger than"):
        topic.stream(spark, minOffsetsPerTrigger=10, maxOffsetsPerTrigger=5)


def test_kafka_stream_with_an_ending_offset_fails_at_start_naming_it(spark, topic) -> None:
    df = topic.stream(spark, endingOffsets="latest")  # valid for spark.read: load() can not know it is a stream
    message = failure_of(start_noop(df, topic.checkpoint))
    assert "Invalid option 'endingOffsets': only batch queries" in message
    assert "UnboundLocalError" not in message


def test_yt_stream_option_errors_fail_at_load_or_cleanly_at_start(spark, yt, yt_proxy, yt_root, checkpoint) -> None:
    pipe = make_pipeline(yt, yt_proxy, yt_root, checkpoint)
    with pytest.raises(Exception, match=r"Invalid option 'minOffsetsPerTrigger': 10 is larger than"):
        pipe.reader(spark, minOffsetsPerTrigger=10, maxOffsetsPerTrigger=5)
    message = failure_of(start_noop(pipe.reader(spark, endingOffsets="latest"), checkpoint))
    assert "Invalid option 'endingOffsets': only batch queries" in message
    assert "UnboundLocalError" not in message


# -- 6. positions naming partitions or topics that do not exist ------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("startingOffsets", '{"T": {"0": 0, "1": 0, "7": 0}}', "partition 7 of topic T"),
        ("startingOffsets", '{"T": {"0": 0}, "nope": {"0": 0}}', "partition 0 of topic nope"),
        ("endingOffsets", '{"T": {"0": 1, "1": 1, "9": 1}}', "partition 9 of topic T"),
        ("startingOffsetsByTimestamp", '{"T": {"0": 0, "5": 0}}', "partition 5 of topic T"),
    ],
)
def test_kafka_batch_positions_naming_missing_partitions_are_errors(spark, topic, option, value, named) -> None:
    topic.produce(4)
    value, named = value.replace('"T"', json.dumps(topic.name)), named.replace(" T", f" {topic.name}")
    with pytest.raises(Exception, match=rf"Invalid option '{option}': names partitions that do not exist: {named}"):
        batch(spark, topic, **{option: value}).count()


def test_kafka_stream_starting_offsets_naming_a_missing_partition_fail(spark, topic) -> None:
    topic.produce(4)
    df = topic.stream(spark, startingOffsets=json.dumps({topic.name: {"0": 0, "1": 0, "3": 0}}))
    message = failure_of(start_noop(df, topic.checkpoint))
    expected = f"names partitions that do not exist: partition 3 of topic {topic.name}"
    assert f"Invalid option 'startingOffsets': {expected}" in message


def test_yt_positions_naming_missing_tablets_are_errors(spark, yt, yt_proxy, yt_root, checkpoint) -> None:
    pipe = make_pipeline(yt, yt_proxy, yt_root, checkpoint)
    pipe.produce(4)
    reader = spark.read.format("ytqueue").option("proxy", yt_proxy)
    missing = r"Invalid option 'startingOffsets': names partitions that do not exist: tablet 5"
    with pytest.raises(Exception, match=missing):
        reader.option("startingOffsets", '{"0": 0, "5": 0}').load(pipe.queue).count()
    message = failure_of(start_noop(pipe.reader(spark, startingOffsets='{"0": 0, "3": 0}'), checkpoint))
    assert "Invalid option 'startingOffsets': names partitions that do not exist: tablet 3" in message


def test_partitions_left_out_of_starting_offsets_start_at_the_earliest(spark, topic) -> None:
    """Deliberate difference: Spark requires startingOffsets JSON to name every partition; partitions left out
    start at the earliest offset here (and end at the latest for endingOffsets)."""
    ids = topic.produce(6)
    df = batch(spark, topic, startingOffsets=json.dumps({topic.name: {"0": 1}}))
    assert values(df) == [i for i in ids if i != ids[0]]


# -- 7. subscribePattern when a matched topic is deleted (KafkaMicroBatchSourceSuite) --------------------------------


def store_options(request: pytest.FixtureRequest, store: str) -> dict[str, str]:
    """``offsets.store`` for ``store`` (a fresh place on the session's real server); none for the Kafka group."""
    name = f"offsets_{uuid.uuid4().hex[:8]}"
    if store == "zookeeper":
        return {"offsets.store": request.getfixturevalue("zookeeper").uri(f"/{name}")}
    if store in ("hbase", "kudu"):
        return {"offsets.store": request.getfixturevalue(store).uri(name)}
    return {}


def committed_positions(bootstrap: str, pattern: str, group: str, options: dict[str, str]) -> dict[str, int | None]:
    """What the query's offset store holds (the consumer group unless ``offsets.store`` is set)."""
    from spyt_queue.kafka.backend import KafkaBackend
    from spyt_queue.kafka.subscription import Subscription
    from spyt_queue.stores.registry import open_store

    backend = KafkaBackend({"bootstrap.servers": bootstrap}, Subscription("subscribePattern", pattern=pattern), group)
    store = open_store(options["offsets.store"], backend.source_id, group) if options else backend.default_store()
    try:
        return store.committed()
    finally:
        store.close()


class DeletingSink:
    """A ``foreachBatch`` sink keeping the values it received (each plus one, as Spark's test maps them) that runs
    ``action`` once, inside the batch completing ``expected``: the action then lands after those rows were read and
    before that batch's end is committed (the next trigger commits it), deterministically. A memory sink with the
    action run after ``processAllAvailable`` leaves that order to chance."""

    def __init__(self, expected: list[int], action: Any) -> None:
        self.values: list[int] = []
        self.expected = expected
        self.action = action
        self.done = False

    def __call__(self, df: Any, batch_id: int) -> None:
        self.values.extend(int(r.value) + 1 for r in df.selectExpr("cast(value as string) as value").collect())
        if not self.done and set(self.expected) <= set(self.values):
            self.done = True
            self.action()


def wait_for(query: Any, condition: Any, timeout: float = 90) -> None:
    """Run ``processAllAvailable`` until ``condition()`` holds (a topic created after the start is recorded at one
    trigger and read at the next)."""
    deadline = time.monotonic() + timeout
    while True:
        query.processAllAvailable()
        if condition() or time.monotonic() > deadline:
            return
        time.sleep(0.2)


@pytest.mark.parametrize("store", ["group", "zookeeper", "hbase", "kudu"])
def test_subscribing_topic_by_pattern_with_topic_deletions(spark, kafka_bootstrap, checkpoint, request, store) -> None:
    """Spark's "subscribing topic by pattern with topic deletions": with failOnDataLoss=false the deleted topic is
    dropped with a warning and the query reads the topic created after it. The topic is deleted before the end of the
    batch that read it is committed: the commit must leave out the deleted topic's partitions (the Kafka group
    refuses them), whichever store keeps the positions."""
    prefix = f"pat{uuid.uuid4().hex[:6]}"
    group = f"g-{uuid.uuid4().hex[:10]}"
    first = Topic(kafka_bootstrap, checkpoint, partitions=5, name=f"{prefix}-seems")
    first.send(["-1"])
    created: list[Topic] = []

    def delete_and_create() -> None:
        first.delete()
        created.append(Topic(kafka_bootstrap, checkpoint, partitions=5, name=f"{prefix}-bad"))

    sink = DeletingSink([2, 3, 4], delete_and_create)
    options = store_options(request, store)
    reader = (
        spark.readStream.format("ytqueue")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("kafka.group.id", group)
        .option("subscribePattern", f"{prefix}-.*")
        .option("failOnDataLoss", "false")
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    query = reader.load().writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint).start()
    try:
        query.processAllAvailable()  # makeSureGetOffsetCalled: the query starts at the latest offsets, after "-1"
        first.send(["1", "2", "3"])
        wait_for(query, lambda: sink.done)
        assert sorted(sink.values) == [2, 3, 4]
        second = created[0]
        second.send(["4", "5", "6"])
        wait_for(query, lambda: len(sink.values) >= 6)
        assert sorted(sink.values) == [2, 3, 4, 5, 6, 7]
        deadline = time.monotonic() + 60  # the last batch's end is committed by a later trigger
        while True:
            positions = committed_positions(kafka_bootstrap, f"{prefix}-.*", group, options)
            second_positions = {k: v for k, v in positions.items() if k.startswith(f"{second.name}:")}
            if sum(v or 0 for v in second_positions.values()) == 3 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert query.exception() is None
    finally:
        query.stop()
    assert second_positions == {f"{second.name}:{p}": 1 if p < 3 else 0 for p in range(5)}


def test_subscribing_topic_by_pattern_with_topic_deletions_fails_on_data_loss(
    spark, kafka_bootstrap, checkpoint
) -> None:
    """The same with failOnDataLoss=true (the default): the query stops with a data-loss error naming the deleted
    topic's partitions (Spark: "... are gone. Some data may have been missed"), not with a failed commit."""
    prefix = f"pat{uuid.uuid4().hex[:6]}"
    first = Topic(kafka_bootstrap, checkpoint, partitions=5, name=f"{prefix}-seems")
    first.send(["-1"])

    def delete_and_create() -> None:
        first.delete()
        Topic(kafka_bootstrap, checkpoint, partitions=5, name=f"{prefix}-bad")

    sink = DeletingSink([2, 3, 4], delete_and_create)
    df = (
        spark.readStream.format("ytqueue")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("kafka.group.id", first.group)
        .option("subscribePattern", f"{prefix}-.*")
        .load()
    )
    query = df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint).start()
    try:
        query.processAllAvailable()
        first.send(["1", "2", "3"])
        message = failure_of(query, timeout=90)
    finally:
        query.stop()
    assert sorted(sink.values) == [2, 3, 4]
    assert "DataLossError" in message, message
    assert f"partition 0 of topic {first.name} no longer exists" in message, message
    assert "Set failOnDataLoss=false" in message, message
    assert "CommitError" not in message, message


def test_bounds_leave_out_a_topic_deleted_after_the_metadata_listed_it(kafka_bootstrap, checkpoint) -> None:
    """A trigger racing a topic deletion: the metadata still lists the topic, ``list_offsets`` then answers "unknown
    topic or partition". The fetch is retried with fresh metadata and leaves the topic out (Spark's offset reader
    retries its whole fetch too), instead of failing the query."""
    from spyt_queue.kafka.backend import KafkaBackend
    from spyt_queue.kafka.subscription import Subscription

    prefix = f"pat{uuid.uuid4().hex[:6]}"
    kept = Topic(kafka_bootstrap, checkpoint, name=f"{prefix}-kept")
    gone = Topic(kafka_bootstrap, checkpoint, name=f"{prefix}-gone")
    backend = KafkaBackend(
        {"bootstrap.servers": kafka_bootstrap}, Subscription("subscribePattern", pattern=f"{prefix}-.*"), kept.group
    )
    listed = backend.partitions()
    assert sorted(listed) == sorted(f"{t.name}:{p}" for t in (kept, gone) for p in range(2))
    gone.delete()
    stale = [listed]  # the first metadata answer predates the deletion
    fresh = backend.partitions
    backend.partitions = lambda: stale.pop() if stale else fresh()  # type: ignore[method-assign]
    assert sorted(backend.bounds()) == [f"{kept.name}:0", f"{kept.name}:1"]
