"""Small batches over several Kafka partitions run as one Spark task (``min_rows_per_task``): the task reads the
partitions one after the other with one pooled consumer, re-assigned per range. Large ones keep a task per
partition; either way every record arrives once with its own ``partition`` and ``offset``."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql.functions import spark_partition_id

from tests.kafka.helpers import Topic

pytestmark = pytest.mark.spark


def run_batches(df: Any, checkpoint: str) -> list[tuple[int, int, int, int, int]]:
    """Run ``df`` to the end (AvailableNow); returns ``(batch, task, id, partition, offset)`` of every record."""
    seen: list[tuple[int, int, int, int, int]] = []

    def collect(batch_df: Any, batch: int) -> None:
        rows = batch_df.select(
            spark_partition_id().alias("task"), batch_df.value.cast("string").alias("id"), "partition", "offset"
        ).collect()
        seen.extend((batch, r.task, int(r.id), r.partition, r.offset) for r in rows)

    query = df.writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint).trigger(availableNow=True)
    running = query.start()
    running.awaitTermination(120)
    assert not running.isActive and running.exception() is None, running.exception()
    return seen


def tasks_per_batch(seen: list[tuple[int, int, int, int, int]]) -> dict[int, int]:
    batches: dict[int, set[int]] = {}
    for batch, task, *_ in seen:
        batches.setdefault(batch, set()).add(task)
    return {batch: len(tasks) for batch, tasks in sorted(batches.items())}


def records(seen: list[tuple[int, int, int, int, int]]) -> list[tuple[int, int, int]]:
    return sorted((i, partition, offset) for _, _, i, partition, offset in seen)


def test_a_small_batch_over_four_partitions_is_one_task_with_every_record_once(
    spark, kafka_bootstrap, checkpoint
) -> None:
    topic = Topic(kafka_bootstrap, checkpoint, partitions=4)
    ids = topic.produce(40)  # id i goes to partition i % 4 at offset i // 4
    seen = run_batches(topic.stream(spark, startingOffsets="earliest"), checkpoint)
    assert tasks_per_batch(seen) == {0: 1}
    assert records(seen) == [(i, i % 4, i // 4) for i in ids]
    assert topic.group_offsets() == {0: 10, 1: 10, 2: 10, 3: 10}


def test_packed_batches_reuse_the_consumer_across_partitions_and_batches(spark, kafka_bootstrap, checkpoint) -> None:
    """Three packed batches in a row: the pooled consumer is re-assigned from partition to partition within a task
    and across tasks, and never hands one partition's records to another's range."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=4)
    ids = topic.produce(40)
    ids += topic.produce(20, partition=3)  # an uneven partition: offsets 10..29 of partition 3
    seen = run_batches(topic.stream(spark, startingOffsets="earliest", maxOffsetsPerTrigger=25), checkpoint)
    assert tasks_per_batch(seen) == {0: 1, 1: 1, 2: 1}
    expected = [(i, i % 4, i // 4) for i in ids[:40]] + [(i, 3, 10 + n) for n, i in enumerate(ids[40:])]
    assert records(seen) == sorted(expected)
    assert topic.group_offsets() == {0: 10, 1: 10, 2: 10, 3: 30}


def test_ranges_of_min_rows_per_task_or_more_keep_a_task_each(spark, kafka_bootstrap, checkpoint) -> None:
    topic = Topic(kafka_bootstrap, checkpoint, partitions=4)
    ids = topic.produce(40)
    seen = run_batches(topic.stream(spark, startingOffsets="earliest", min_rows_per_task=10), checkpoint)
    assert tasks_per_batch(seen) == {0: 4}
    by_task: dict[int, set[int]] = {}
    for _, task, _, partition, _ in seen:
        by_task.setdefault(task, set()).add(partition)
    assert sorted(map(sorted, by_task.values())) == [[0], [1], [2], [3]]
    assert records(seen) == [(i, i % 4, i // 4) for i in ids]


def test_a_batch_read_over_four_partitions_is_one_partition(spark, kafka_bootstrap, checkpoint) -> None:
    topic = Topic(kafka_bootstrap, checkpoint, partitions=4)
    ids = topic.produce(40)

    def read(**options: Any) -> Any:
        reader = spark.read.format("ytqueue").option("kafka.bootstrap.servers", kafka_bootstrap)
        for key, value in {"subscribe": topic.name, **options}.items():
            reader = reader.option(key, value)
        return reader.load()

    df = read()
    assert df.rdd.getNumPartitions() == 1
    rows = df.selectExpr("cast(value as string) as id", "partition", "offset").collect()
    assert sorted((int(r.id), r.partition, r.offset) for r in rows) == [(i, i % 4, i // 4) for i in ids]
    assert read(min_rows_per_task="0").rdd.getNumPartitions() == 4
