"""Exactly-once modes after a forced replay: purge the last ``commits/N`` entry (as Spark's own tests do), so the
engine re-runs batch N and the sink sees its rows twice."""

from __future__ import annotations

import pytest

from spyt_queue.yt.admin import column, create_producer, create_queue, create_sorted_table

pytestmark = pytest.mark.spark


def run_into(spark, pipe, target: str, **sink_options) -> None:
    df = pipe.reader(spark, max_rows_per_partition=10)
    writer = (
        df.writeStream.format("ytqueue")
        .option("proxy", pipe.proxy)
        .option("path", target)
        .option("checkpointLocation", pipe.checkpoint)
        .trigger(availableNow=True)
    )
    for key, value in sink_options.items():
        writer = writer.option(key, value)
    query = writer.start()
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()


def test_plain_ordered_append_duplicates_a_replayed_batch(spark, pipe) -> None:
    """The default sink is at-least-once: this is what the exactly-once modes exist for."""
    target = f"{pipe.queue}_plain"
    create_queue(
        pipe.yt,
        target,
        [
            column("__spyt_streaming_src_tablet_index", "int64"),
            column("__spyt_streaming_src_row_index", "int64"),
            column("id", "int64"),
            column("payload", "string"),
        ],
    )
    pipe.produce(40)
    run_into(spark, pipe, target)
    pipe.purge_last_commit()
    run_into(spark, pipe, target)
    ids = [r["id"] for r in pipe.yt.select_rows(f"id from [{target}]")]
    assert len(ids) > 40 and sorted(set(ids)) == list(range(40))


def test_sorted_target_keyed_by_service_columns_is_idempotent(spark, pipe) -> None:
    target = f"{pipe.queue}_sorted"
    create_sorted_table(
        pipe.yt,
        target,
        [
            column("__spyt_streaming_src_tablet_index", "int64", sort_order="ascending"),
            column("__spyt_streaming_src_row_index", "int64", sort_order="ascending"),
            column("id", "int64"),
            column("payload", "string"),
        ],
    )
    pipe.produce(40)
    run_into(spark, pipe, target)
    replayed = pipe.purge_last_commit()
    assert replayed >= 1
    pipe.produce(10)
    run_into(spark, pipe, target)
    ids = sorted(r["id"] for r in pipe.yt.select_rows(f"id from [{target}]"))
    assert ids == list(range(50))


def test_producer_sessions_skip_replayed_rows_in_ordered_target(spark, pipe) -> None:
    target, producer = f"{pipe.queue}_exact", f"{pipe.queue}_producer"
    create_queue(pipe.yt, target, [column("id", "int64"), column("payload", "string")])
    create_producer(pipe.yt, producer)
    pipe.produce(40)
    run_into(spark, pipe, target, producer_path=producer)
    pipe.purge_last_commit()
    pipe.produce(10)
    run_into(spark, pipe, target, producer_path=producer)
    ids = sorted(r["id"] for r in pipe.yt.select_rows(f"id from [{target}]"))
    assert ids == list(range(50))
