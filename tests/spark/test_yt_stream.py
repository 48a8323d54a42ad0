"""The ytqueue source and sink on a real local Spark against the local YTsaurus-compatible server."""

from __future__ import annotations

import json

import pytest

from tests.spark.helpers import Pipeline, make_pipeline

pytestmark = pytest.mark.spark


@pytest.fixture
def pipe(yt, yt_proxy, yt_root, checkpoint):
    return make_pipeline(yt, yt_proxy, yt_root, checkpoint)


def test_available_now_reads_everything_and_leaves_consumer_at_end(spark, pipe) -> None:
    """Every row arrives once, and the final AvailableNow batch is committed to the consumer too."""
    ids = pipe.produce(50)
    pipe.run(spark, max_rows_per_partition=10)
    assert pipe.output_ids() == ids
    assert pipe.consumer_offsets() == pipe.ends() == {0: 25, 1: 25}


def test_restart_from_checkpoint_resumes_exactly(spark, pipe) -> None:
    first = pipe.produce(30)
    pipe.run(spark)
    second = pipe.produce(20)
    pipe.run(spark)
    assert pipe.output_ids() == first + second
    assert pipe.consumer_offsets() == pipe.ends()


def test_restart_without_checkpoint_resumes_from_consumer(spark, pipe) -> None:
    """With the checkpoint deleted, the consumer is the truth: nothing lost, nothing read twice."""
    first = pipe.produce(30)
    pipe.run(spark)
    pipe.delete_checkpoint()
    second = pipe.produce(20)
    pipe.run(spark)
    assert pipe.output_ids() == first + second


def test_max_rows_per_partition_bounds_every_batch(spark, pipe) -> None:
    pipe.produce(70)
    query = pipe.run(spark, max_rows_per_partition=8)
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert len(batches) >= 5
    for progress in batches:
        source = progress["sources"][0]
        # The first batch's progress has no startOffset: it starts at the initial offset (row 0 here).
        start = (json.loads(source["startOffset"] or "null") or {}).get("partitions", {})
        for key, stop in json.loads(source["endOffset"])["partitions"].items():
            assert stop - start.get(key, 0) <= 8
    assert sum(p["numInputRows"] for p in batches) == 70


def test_global_cap_through_admission_control(spark, pipe) -> None:
    pipe.produce(60)
    query = pipe.run(spark, maxOffsetsPerTrigger=25)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]
    assert sizes == [25, 25, 10]


def test_trigger_once_reads_everything_ignoring_caps(spark, pipe) -> None:
    pipe.produce(40)
    query = pipe.run(spark, available_now=False, max_rows_per_partition=5)
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0] == [40]


def test_trimmed_rows_fail_the_query_with_fail_on_data_loss(spark, pipe) -> None:
    """Rows trimmed after the consumer's offset are lost: the query fails naming the tablet and range."""
    pipe.produce(20, tablet=0)
    pipe.run(spark)
    pipe.produce(10, tablet=0)
    pipe.yt.trim_rows(pipe.queue, 0, 25)
    with pytest.raises(Exception, match=r"rows \[20, 25\) of tablet 0"):
        pipe.run(spark)
    pipe.delete_checkpoint()  # the consumer alone (also at 20) must give the same verdict
    with pytest.raises(Exception, match=r"rows \[20, 25\) of tablet 0"):
        pipe.run(spark)


def test_a_never_consumed_trimmed_tablet_starts_at_its_first_row(spark, pipe) -> None:
    """No consumer row: start at trimmed_row_count (not row 0), which is not data loss."""
    ids = pipe.produce(20, tablet=0)
    pipe.yt.trim_rows(pipe.queue, 0, 5)
    pipe.run(spark)
    assert pipe.output_ids() == ids[5:]


def test_trimmed_rows_skipped_without_fail_on_data_loss(spark, pipe) -> None:
    ids = pipe.produce(20, tablet=0)
    pipe.run(spark)
    more = pipe.produce(20, tablet=0)
    pipe.yt.trim_rows(pipe.queue, 0, 25)
    pipe.run(spark, failOnDataLoss="false")
    assert pipe.output_ids() == ids + more[5:]


def test_reshard_adds_tablets_mid_stream(spark, pipe) -> None:
    first = pipe.produce(10)
    pipe.run(spark)
    pipe.yt.unmount_table(pipe.queue, sync=True)
    pipe.yt.reshard_table(pipe.queue, tablet_count=4)
    pipe.yt.mount_table(pipe.queue, sync=True)
    second = pipe.produce(40)
    pipe.run(spark)
    assert pipe.output_ids() == first + second
    assert pipe.consumer_offsets() == pipe.ends()


def test_service_columns_name_source_tablet_and_row(spark, pipe) -> None:
    pipe.produce(6)
    pipe.run(spark)
    rows = pipe.yt.select_rows(f"id, tablet, row from [{pipe.output}]")
    assert sorted((r["id"], r["tablet"], r["row"]) for r in rows) == [
        (0, 0, 0),
        (1, 1, 0),
        (2, 0, 1),
        (3, 1, 1),
        (4, 0, 2),
        (5, 1, 2),
    ]


def test_two_queries_on_one_consumer_conflict(spark, pipe, tmp_path) -> None:
    """A second query moving the same consumer is a clear error, never a silent overwrite."""
    pipe.produce(10)
    pipe.run(spark)
    other = Pipeline(pipe.yt, pipe.proxy, pipe.queue, pipe.consumer, pipe.output, str(tmp_path / "other-checkpoint"))
    pipe.produce(10)
    # The other query started from the beginning (its own position) and advances the shared consumer.
    other.run(spark, startingOffsets="earliest")
    pipe.produce(10)
    with pytest.raises(Exception, match="another query"):
        pipe.run(spark)


def test_batch_read_between_offsets(spark, pipe) -> None:
    pipe.produce(20)
    df = (
        spark.read.format("ytqueue")
        .option("proxy", pipe.proxy)
        .option("startingOffsets", json.dumps({"0": 2, "1": 0}))
        .option("endingOffsets", "latest")
        .load(pipe.queue)
    )
    assert df.count() == 18
    assert sorted(r.id for r in df.collect())[:2] == [1, 3]


def test_lag_from_progress_and_status_command(spark, pipe) -> None:
    from typer.testing import CliRunner

    from spyt_queue.cli import app
    from spyt_queue.lag import lag_from_progress

    pipe.produce(30)
    query = pipe.run(spark, max_rows_per_partition=5)
    last = next(p for p in query.recentProgress if p["numInputRows"] > 0)
    lag = lag_from_progress(last)
    assert lag == {"0": 10, "1": 10}  # first batch read 5 of 15 rows per tablet
    result = CliRunner().invoke(
        app, ["status", "--queue", pipe.queue, "--consumer", pipe.consumer, "--proxy", pipe.proxy]
    )
    assert result.exit_code == 0, result.output
    import re

    for tablet in ("0", "1"):  # partition, committed, first row, end, lag
        assert re.search(rf"│\s+{tablet}\s+│\s+15\s+│\s+0\s+│\s+15\s+│\s+0\s+│", result.output), result.output
    assert re.search(r"total\s+│\s+│\s+│\s+30\s+│\s+0\s+│", result.output), result.output


def test_composite_types_as_nested_spark_types(spark, yt, yt_proxy, yt_root) -> None:
    from spyt_queue.yt.admin import create_consumer

    queue, consumer = f"{yt_root}/typed", f"{yt_root}/typed_consumer"
    schema = [
        {"name": "tags", "type_v3": {"type_name": "list", "item": "string"}},
        {
            "name": "point",
            "type_v3": {
                "type_name": "struct",
                "members": [
                    {"name": "x", "type": "int64"},
                    {"name": "y", "type": {"type_name": "optional", "item": "double"}},
                ],
            },
        },
        {"name": "attrs", "type_v3": {"type_name": "dict", "key": "string", "value": "int32"}},
        {"name": "maybe", "type_v3": {"type_name": "optional", "item": "int64"}},
        {"name": "day", "type_v3": "date"},
        {"name": "at", "type_v3": "timestamp"},
        {"name": "blob", "type_v3": {"type_name": "optional", "item": "yson"}},
    ]
    yt.create("table", queue, attributes={"dynamic": True, "schema": schema})
    yt.mount_table(queue, sync=True)
    create_consumer(yt, consumer, queue)
    yt.insert_rows(
        queue,
        [
            {
                "tags": ["a", "b"],
                "point": {"x": 1, "y": 2.5},
                "attrs": [["k", 7]],
                "maybe": None,
                "day": 19000,
                "at": 1_700_000_000_123_456,
                "blob": {"any": [1, "two"]},
            }
        ],
    )

    def read(v3: bool):
        return (
            spark.read.format("ytqueue")
            .option("proxy", yt_proxy)
            .option("parsing_type_v3", str(v3).lower())
            .load(queue)
        )

    nested = read(True)
    assert nested.schema.simpleString() == (
        "struct<tags:array<string>,point:struct<x:bigint,y:double>,attrs:map<string,int>,maybe:bigint,"
        "day:date,at:timestamp,blob:binary>"
    )
    row = nested.collect()[0]
    assert row.tags == ["a", "b"] and row.point.x == 1 and row.point.y == 2.5 and row.attrs == {"k": 7}
    assert row.maybe is None and str(row.day) == "2022-01-08"
    import yt.yson as yson

    assert yson.loads(bytes(row.blob)) == {"any": [1, "two"]}
    flat = read(False)
    assert flat.schema["tags"].dataType.simpleString() == "binary"
    assert yson.loads(bytes(flat.collect()[0].tags)) == ["a", "b"]


def test_schema_mismatch_is_reported_before_writing(spark, pipe) -> None:
    df = spark.createDataFrame([(1, "x")], "id string, unknown string")
    with pytest.raises(Exception, match=r"(?s)column 'id' is string.*column 'unknown'.*Nothing was written"):
        df.write.format("ytqueue").mode("append").option("proxy", pipe.proxy).option("path", pipe.output).save()
    assert pipe.output_ids() == []


def test_bad_options_name_the_option(spark, pipe) -> None:
    with pytest.raises(Exception, match="max_rows_per_partition"):
        pipe.run(spark, max_rows_per_partition="lots")
    with pytest.raises(Exception, match="consumer_path"):
        spark.readStream.format("ytqueue").option("proxy", pipe.proxy).load(pipe.queue).writeStream.format(
            "noop"
        ).start().awaitTermination(60)


def test_idle_query_leaves_consumer_at_processed_end(spark, pipe) -> None:
    """Spark never commits the last batch of an idle stream; the latestOffset hook does, while it runs."""
    import time

    ids = pipe.produce(20)
    query = pipe.start(spark, {"processingTime": "500 milliseconds"})
    try:
        deadline = time.time() + 60
        while time.time() < deadline and pipe.consumer_offsets() != pipe.ends():
            time.sleep(0.5)
        assert query.isActive and query.exception() is None
        assert pipe.consumer_offsets() == pipe.ends() == {0: 10, 1: 10}
        assert pipe.output_ids() == ids
    finally:
        query.stop()


def test_starting_offsets_beyond_the_end_are_refused_and_consumer_untouched(spark, pipe) -> None:
    pipe.produce(4)
    with pytest.raises(Exception, match=r"startingOffsets.*beyond its end"):
        pipe.run(spark, startingOffsets=json.dumps({"0": 99}))
    assert pipe.consumer_offsets() == {}
