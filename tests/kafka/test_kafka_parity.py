"""Where the Kafka adapter must behave as Spark's own Kafka source does (scenarios from Spark's
``KafkaRelationSuite``/``KafkaMicroBatchSourceSuite``), and the same option rules on the YT path, on a real local
Spark against a real Kafka broker and the embedded YT server."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.kafka.helpers import Topic
from tests.spark.helpers import make_pipeline

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
