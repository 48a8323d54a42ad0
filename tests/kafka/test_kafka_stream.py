"""Kafka-only behaviour of the adapter on a real local Spark against a real Apache Kafka broker (KRaft): Spark's
Kafka schema, headers, transactions, minOffsetsPerTrigger, the sink, timestamps, subscribePattern, status.

The scenarios every backend shares (restarts, caps, deleted records, added partitions, two queries on one group,
idle commits) run once for all backends in ``tests/contract/streams/``."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.kafka.helpers import Topic, ids_in, run_to_files

pytestmark = pytest.mark.spark


@pytest.fixture
def topic(kafka_bootstrap, checkpoint) -> Topic:
    return Topic(kafka_bootstrap, checkpoint)


@pytest.fixture
def out(tmp_path) -> callable:
    """A fresh output directory per query run of a test."""
    counter = iter(range(100))
    return lambda: str(tmp_path / f"out-{next(counter)}")


def test_rows_use_sparks_kafka_schema(spark, topic) -> None:
    df = topic.stream(spark, startingOffsets="earliest", includeHeaders="true")
    assert [f.name for f in df.schema.fields] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]


def test_min_offsets_per_trigger_waits_then_fires_after_max_delay(spark, topic) -> None:
    """Fewer new records than minOffsetsPerTrigger: no batch until maxTriggerDelay since the last trigger that fired
    (the first trigger of a run fires at once, as in Spark's source: test_spark_kafka_suites)."""
    df = topic.stream(spark, startingOffsets="earliest", minOffsetsPerTrigger=100, maxTriggerDelay="6s")
    query = (
        df.writeStream.format("memory")
        .queryName("k4")
        .option("checkpointLocation", topic.checkpoint)
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        while not query.recentProgress:  # the first trigger fired (with nothing to read)
            time.sleep(0.2)
        topic.produce(3)
        started = time.time()
        time.sleep(2.5)
        early = spark.sql("select * from k4").count()
        while time.time() - started < 60 and spark.sql("select * from k4").count() < 3:
            time.sleep(0.5)
        waited = time.time() - started
        final = spark.sql("select * from k4").count()
    finally:
        query.stop()
    assert early == 0, "fewer than minOffsetsPerTrigger records must not fire a batch before maxTriggerDelay"
    assert final == 3
    assert waited >= 3.5, "the batch must wait for maxTriggerDelay"


def test_headers_round_trip(spark, topic) -> None:
    topic.produce(2, headers=[("trace", b"abc"), ("n", b"1")])
    df = topic.stream(spark, startingOffsets="earliest", includeHeaders="true")
    query = df.writeStream.format("memory").queryName("k7").option("checkpointLocation", topic.checkpoint)
    query = query.trigger(availableNow=True).start()
    query.awaitTermination(120)
    rows = spark.sql("select headers from k7").collect()
    assert [[(h.key, bytes(h.value)) for h in r.headers] for r in rows] == [[("trace", b"abc"), ("n", b"1")]] * 2


def test_aborted_transactions_invisible_under_read_committed(spark, topic, out) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": topic.bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic.name, value=b"1000", partition=0)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic.name, value=b"2000", partition=0)
    producer.commit_transaction(30)
    df = topic.stream(spark, startingOffsets="earliest", **{"kafka.isolation.level": "read_committed"})
    path = out()
    run_to_files(df, topic.checkpoint, path)
    assert ids_in(spark, path) == [2000]


def test_sink_round_trip(spark, topic, tmp_path) -> None:
    target = Topic(topic.bootstrap, str(tmp_path / "out"))
    src = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(50)], "key string, value string")
    (
        src.write.format("ytqueue")
        .mode("append")
        .option("kafka.bootstrap.servers", topic.bootstrap)
        .option("topic", target.name)
        .save()
    )
    path = str(tmp_path / "files")
    run_to_files(target.stream(spark, startingOffsets="earliest"), target.checkpoint, path)
    rows = spark.read.parquet(path).collect()
    assert sorted((r.key, r.value) for r in rows) == sorted((f"k{i}", f"v{i}") for i in range(50))


def test_streaming_sink_writes_each_batch(spark, topic, tmp_path) -> None:
    topic.produce(20)
    target = Topic(topic.bootstrap, str(tmp_path / "out2"))
    query = (
        topic.stream(spark, startingOffsets="earliest")
        .selectExpr("key", "value")
        .writeStream.format("ytqueue")
        .option("kafka.bootstrap.servers", topic.bootstrap)
        .option("topic", target.name)
        .option("checkpointLocation", str(tmp_path / "sink-chk"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert sum(target.ends().values()) == 20


def test_invalid_options_fail_before_start(spark, topic) -> None:
    with pytest.raises(Exception, match="exactly one of subscribe"):
        spark.readStream.format("ytqueue").option("kafka.bootstrap.servers", topic.bootstrap).load()
    with pytest.raises(Exception, match=r"kafka\.auto\.offset\.reset"):
        topic.stream(spark, **{"kafka.auto.offset.reset": "earliest"}).writeStream.format("noop").start()


def test_status_command_shows_group_lag(spark, topic, out) -> None:
    import re

    from typer.testing import CliRunner

    from spyt_queue.cli import app

    topic.produce(10)
    run_to_files(topic.stream(spark, startingOffsets="earliest"), topic.checkpoint, out())
    topic.produce(4, partition=1)
    args = ["status", "--bootstrap-servers", topic.bootstrap, "--topic", topic.name, "--group", topic.group]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert re.search(rf"{topic.name}:0\s+│\s+5\s+│\s+0\s+│\s+5\s+│\s+0\s+│", result.output), result.output
    assert re.search(rf"{topic.name}:1\s+│\s+5\s+│\s+0\s+│\s+9\s+│\s+4\s+│", result.output), result.output


def test_starting_timestamp_picks_first_record_at_or_after(spark, topic, out) -> None:
    now = int(time.time() * 1000)  # recent stamps: the broker's retention would delete ancient ones at once
    topic.produce(8, timestamp_ms=now - 600_000)
    later = topic.produce(8, timestamp_ms=now - 60_000)
    path = out()
    run_to_files(topic.stream(spark, startingTimestamp=now - 300_000), topic.checkpoint, path)
    assert ids_in(spark, path) == later
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy"):
        run_to_files(topic.stream(spark, startingTimestamp=now + 3_600_000), topic.checkpoint + "2", out())


def test_subscribe_pattern_picks_up_topics_created_later(spark, kafka_bootstrap, checkpoint, out) -> None:
    prefix = f"pat{uuid.uuid4().hex[:6]}"
    first = Topic(kafka_bootstrap, checkpoint, name=f"{prefix}-a")
    first.produce(3)
    df = (
        spark.readStream.format("ytqueue")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("subscribePattern", f"{prefix}-.*")
        .option("startingOffsets", "earliest")
        .load()
    )
    path = out()
    run_to_files(df, checkpoint, path)
    second = Topic(kafka_bootstrap, checkpoint, name=f"{prefix}-b")
    second.next_id = 100
    second.produce(4)
    run_to_files(df, checkpoint, path)  # the new topic is recorded at this trigger ...
    run_to_files(df, checkpoint, path)  # ... and read at the next one
    assert ids_in(spark, path) == [0, 1, 2, 100, 101, 102, 103]


def test_records_deleted_while_a_range_is_read_are_reported(topic) -> None:
    """Retention removes records after the range read began: librdkafka's out-of-range event is reported as
    data loss and reading continues at the first remaining record (real broker, real consumer)."""
    from confluent_kafka import Consumer, TopicPartition

    from spyt_queue.errors import DataLossError
    from spyt_queue.kafka.backend import KafkaBackend
    from spyt_queue.kafka.clients import consumer_config
    from spyt_queue.kafka.options import Subscription
    from spyt_queue.spark.partitions import DataLossPolicy

    topic.produce(10, partition=0)
    topic.delete_records(0, 6)
    backend = KafkaBackend(
        {"bootstrap.servers": topic.bootstrap}, Subscription("subscribe", topics=(topic.name,)), topic.group
    )
    from spyt_queue.spark.compat import arrow_schema

    backend._arrow_schema = arrow_schema(backend.schema())
    for fail in (True, False):
        consumer = Consumer(consumer_config(backend.config))
        consumer.assign([TopicPartition(topic.name, 0, 2)])  # as if the range [2, 8) had started before the delete
        try:
            read = backend._consume(consumer, topic.name, 0, 2, 8, f"{topic.name}:0", DataLossPolicy(fail))
            if fail:
                with pytest.raises(DataLossError, match=r"offsets \[2, 6\)"):
                    list(read)
            else:
                assert [int(v) for b in read for v in b.column("value").to_pylist()] == [6, 7]
        finally:
            consumer.close()
