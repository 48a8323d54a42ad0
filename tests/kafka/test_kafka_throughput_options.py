"""Options and internals of the Kafka adapter's fast read path, at the level a user sees them (a Spark query)
where possible: ``includeTimestamp=false``, ``minPartitions`` cutting one Kafka partition into several tasks,
and the garbage-collector pause around each consume step."""

from __future__ import annotations

import gc

import pytest
from pyspark.sql.functions import spark_partition_id

from spyt_queue.collector import gc_paused
from spyt_queue.kafka.backend import KafkaBackend
from spyt_queue.kafka.subscription import Subscription
from spyt_queue.spark.partitions import DataLossPolicy
from tests.kafka.helpers import Topic, ids_in, run_to_files

pytestmark = pytest.mark.spark


def test_include_timestamp_false_leaves_out_the_timestamp_columns(spark, kafka_bootstrap, checkpoint, tmp_path) -> None:
    topic = Topic(kafka_bootstrap, checkpoint)
    ids = topic.produce(7)
    df = topic.stream(spark, startingOffsets="earliest", includeTimestamp="false")
    assert [f.name for f in df.schema.fields] == ["key", "value", "topic", "partition", "offset"]
    out = str(tmp_path / "out")
    run_to_files(df, checkpoint, out)
    assert ids_in(spark, out) == ids
    rows = spark.read.parquet(out).collect()
    assert sorted((r.partition, r.offset) for r in rows) == sorted(
        (p, o) for p, count in topic.ends().items() for o in range(count)
    )
    assert {r.key for r in rows} == {f"k{i}" for i in ids}
    assert topic.group_offsets() == topic.ends()


def test_include_timestamp_defaults_to_sparks_schema(spark, kafka_bootstrap, checkpoint) -> None:
    topic = Topic(kafka_bootstrap, checkpoint)
    df = topic.stream(spark, startingOffsets="earliest")
    assert [f.name for f in df.schema.fields][-2:] == ["timestamp", "timestampType"]


def test_include_timestamp_rejects_a_non_boolean(spark, kafka_bootstrap, checkpoint) -> None:
    topic = Topic(kafka_bootstrap, checkpoint)
    with pytest.raises(Exception, match="includeTimestamp"):
        topic.stream(spark, startingOffsets="earliest", includeTimestamp="sometimes")


def test_min_partitions_splits_one_kafka_partition_into_ranges_without_gap_or_overlap(
    spark, kafka_bootstrap, checkpoint, tmp_path
) -> None:
    """One Kafka partition, minPartitions=4: the batch's range [0, 50) is read by 4 tasks, every record once,
    and the group is committed to the end only."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    ids = topic.produce(50)
    df = topic.stream(spark, startingOffsets="earliest", minPartitions=4)
    out = str(tmp_path / "out")
    query = (
        df.select(spark_partition_id().alias("task"), "offset", df.value.cast("string").alias("value"))
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert not query.isActive and query.exception() is None
    rows = spark.read.parquet(out).collect()
    assert sorted(int(r.value) for r in rows) == ids
    by_task: dict[int, list[int]] = {}
    for row in rows:
        by_task.setdefault(row.task, []).append(row.offset)
    assert len(by_task) == 4
    spans = sorted((min(offsets), max(offsets) + 1, len(offsets)) for offsets in by_task.values())
    assert all(stop - start == count for start, stop, count in spans)  # each task read one contiguous range
    assert [s[0] for s in spans] == [0, *[s[1] for s in spans[:-1]]]  # each starts where the previous ended
    assert spans[-1][1] == 50
    assert topic.group_offsets() == {0: 50}


def _backend(bootstrap: str, topic: Topic, **kwargs) -> KafkaBackend:
    subscription = Subscription("subscribe", topics=(topic.name,))
    return KafkaBackend({"bootstrap.servers": bootstrap}, subscription, "g", **kwargs)


def test_reading_leaves_the_garbage_collector_as_it_found_it(kafka_bootstrap, checkpoint) -> None:
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    topic.produce(30)
    backend = _backend(kafka_bootstrap, topic, consume_batch=7)  # several consume steps
    key = f"{topic.name}:0"
    assert gc.isenabled()
    read = sum(b.num_rows for b in backend.read_range(key, 0, 30, DataLossPolicy(True)))
    assert read == 30 and gc.isenabled()
    gc.disable()
    try:
        read = sum(b.num_rows for b in backend.read_range(key, 5, 30, DataLossPolicy(True)))
        assert read == 25 and not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()


def test_gc_pause_ends_when_the_step_raises() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="boom"), gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_batches_without_timestamps_match_the_schema(kafka_bootstrap, checkpoint) -> None:
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    topic.produce(12)
    backend = _backend(kafka_bootstrap, topic, include_timestamp=False, include_headers=True, consume_batch=5)
    batches = list(backend.read_range(f"{topic.name}:0", 2, 12, DataLossPolicy(True)))
    assert all(b.schema.names == ["key", "value", "topic", "partition", "offset", "headers"] for b in batches)
    assert len(batches) >= 2
    assert [o for b in batches for o in b.column("offset").to_pylist()] == list(range(2, 12))
