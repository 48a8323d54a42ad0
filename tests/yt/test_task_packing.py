"""Small batches over several YT tablets run as one Spark task (``min_rows_per_task``), large ones keep a task per
tablet; either way every row arrives once with its source tablet and row index (service columns)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql.functions import spark_partition_id

from tests.yt.helpers import make_pipeline

pytestmark = pytest.mark.spark


@pytest.fixture
def pipe(yt, yt_proxy, yt_root, checkpoint):
    return make_pipeline(yt, yt_proxy, yt_root, checkpoint, tablets=4)


def run_batches(pipe: Any, spark: Any, **options: Any) -> list[tuple[int, int, int, int, int]]:
    """Run the queue to the end (AvailableNow); returns ``(batch, task, id, tablet, row)`` of every row read."""
    seen: list[tuple[int, int, int, int, int]] = []

    def collect(df: Any, batch: int) -> None:
        rows = df.select(spark_partition_id().alias("task"), "id", "tablet", "row").collect()
        seen.extend((batch, r.task, r.id, r.tablet, r.row) for r in rows)

    df = pipe.reader(spark, **options).selectExpr(
        "id", "__spyt_streaming_src_tablet_index as tablet", "__spyt_streaming_src_row_index as row"
    )
    query = (
        df.writeStream.foreachBatch(collect)
        .option("checkpointLocation", pipe.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert not query.isActive and query.exception() is None, query.exception()
    return seen


def tasks_per_batch(seen: list[tuple[int, int, int, int, int]]) -> dict[int, int]:
    batches: dict[int, set[int]] = {}
    for batch, task, *_ in seen:
        batches.setdefault(batch, set()).add(task)
    return {batch: len(tasks) for batch, tasks in sorted(batches.items())}


def test_a_small_batch_over_four_tablets_is_one_task_with_every_row_once(spark, pipe) -> None:
    ids = pipe.produce(40)  # id i goes to tablet i % 4 as its row i // 4
    seen = run_batches(pipe, spark, startingOffsets="earliest")
    assert tasks_per_batch(seen) == {0: 1}
    assert sorted((i, tablet, row) for _, _, i, tablet, row in seen) == [(i, i % 4, i // 4) for i in ids]
    assert pipe.consumer_offsets() == {0: 10, 1: 10, 2: 10, 3: 10}


def test_every_batch_is_packed_and_resumes_where_the_last_ended(spark, pipe) -> None:
    ids = pipe.produce(40)
    seen = run_batches(pipe, spark, startingOffsets="earliest", maxOffsetsPerTrigger=16)
    assert tasks_per_batch(seen) == {0: 1, 1: 1, 2: 1}
    assert sorted((i, tablet, row) for _, _, i, tablet, row in seen) == [(i, i % 4, i // 4) for i in ids]


def test_ranges_of_min_rows_per_task_or_more_keep_a_task_each(spark, pipe) -> None:
    ids = pipe.produce(40)
    seen = run_batches(pipe, spark, startingOffsets="earliest", min_rows_per_task=10)
    assert tasks_per_batch(seen) == {0: 4}
    by_task: dict[int, set[int]] = {}
    for _, task, _, tablet, _ in seen:
        by_task.setdefault(task, set()).add(tablet)
    assert sorted(map(sorted, by_task.values())) == [[0], [1], [2], [3]]
    assert sorted((i, tablet, row) for _, _, i, tablet, row in seen) == [(i, i % 4, i // 4) for i in ids]


def test_ranges_fitting_together_share_tasks_up_to_the_threshold(spark, pipe) -> None:
    pipe.produce(40)
    assert tasks_per_batch(run_batches(pipe, spark, startingOffsets="earliest", min_rows_per_task=20)) == {0: 2}


def test_packing_off_and_min_partitions(spark, pipe) -> None:
    pipe.produce(40)
    assert tasks_per_batch(run_batches(pipe, spark, startingOffsets="earliest", min_rows_per_task=0)) == {0: 4}
    pipe.delete_checkpoint()
    assert tasks_per_batch(run_batches(pipe, spark, startingOffsets="earliest", minPartitions=3)) == {0: 3}


def test_trimmed_rows_with_packing_follow_fail_on_data_loss(spark, pipe) -> None:
    """Rows trimmed from one tablet fail the query, or (failOnDataLoss=false) are skipped while the other tablets'
    rows, read in the same task, all arrive."""
    pipe.produce(40)
    pipe.yt.trim_rows(pipe.queue, 2, 4)  # tablet 2 loses rows 0..3 (ids 2, 6, 10, 14)
    everything = '{"0": 0, "1": 0, "2": 0, "3": 0}'
    with pytest.raises(Exception, match=r"rows \[0, 4\) of tablet 2 .* removed"):
        run_batches(pipe, spark, startingOffsets=everything)
    pipe.delete_checkpoint()
    seen = run_batches(pipe, spark, startingOffsets=everything, failOnDataLoss="false")
    assert tasks_per_batch(seen) == {0: 1}
    assert sorted(i for _, _, i, _, _ in seen) == [i for i in range(40) if not (i % 4 == 2 and i < 16)]


def test_a_batch_read_over_four_tablets_is_one_partition(spark, pipe) -> None:
    ids = pipe.produce(40)
    df = (
        spark.read.format("ytqueue")
        .option("proxy", pipe.proxy)
        .option("include_service_columns", "true")
        .option("startingOffsets", "earliest")
        .load(pipe.queue)
    )
    assert df.rdd.getNumPartitions() == 1
    rows = df.selectExpr(
        "id", "__spyt_streaming_src_tablet_index as t", "__spyt_streaming_src_row_index as r"
    ).collect()
    assert sorted((r.id, r.t, r.r) for r in rows) == [(i, i % 4, i // 4) for i in ids]
    split = spark.read.format("ytqueue").option("proxy", pipe.proxy).option("min_rows_per_task", "0").load(pipe.queue)
    assert split.rdd.getNumPartitions() == 4
