"""YT-only behaviour of the ytqueue source and sink on a real local Spark against the local YTsaurus-compatible
server (service columns, batch reads, composite types, lag and status, schema and option errors).

The scenarios every backend shares (restarts, caps, trimmed rows, added tablets, two queries on one consumer, idle
commits) run once for all backends in ``tests/contract/streams/``."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.spark


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


@pytest.mark.parametrize("name", ["consumer_path", "consumerPath"])
def test_batch_read_through_a_consumer_starts_at_its_offsets_under_either_name(spark, pipe, name: str) -> None:
    """A batch read naming a consumer starts at its committed offsets (``startingOffsets=consumer``), whichever of
    the option's names gives it (``consumerPath`` is the alias of ``consumer_path``)."""
    pipe.produce(10)  # ids 0, 2, ... 8 in tablet 0; 1, 3, ... 9 in tablet 1
    for tablet in (0, 1):
        pipe.yt.advance_consumer(pipe.consumer, pipe.queue, partition_index=tablet, old_offset=0, new_offset=2)
    df = spark.read.format("ytqueue").option("proxy", pipe.proxy).option(name, pipe.consumer).load(pipe.queue)
    assert sorted(r.id for r in df.select("id").collect()) == [4, 5, 6, 7, 8, 9]


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


@pytest.mark.parametrize("read_mode", ["executors", "driver"])
def test_lag_from_progress_in_both_read_modes(spark, pipe, read_mode: str) -> None:
    """``lag_from_progress`` on every batch's progress gives the rows left behind per tablet, whichever the read
    mode: 15 rows per tablet read 5 at a time leave 10, 5, then 0."""
    from spyt_queue.lag import lag_from_progress

    pipe.produce(30)
    query = pipe.run(spark, max_rows_per_partition=5, read_mode=read_mode)
    lags = [lag_from_progress(p) for p in query.recentProgress if p["numInputRows"] > 0]
    assert lags == [{"0": 10, "1": 10}, {"0": 5, "1": 5}, {"0": 0, "1": 0}]
    assert lag_from_progress(query.lastProgress) == {"0": 0, "1": 0}


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


def test_starting_offsets_beyond_the_end_are_refused_and_consumer_untouched(spark, pipe) -> None:
    pipe.produce(4)
    with pytest.raises(Exception, match=r"startingOffsets.*beyond its end"):
        pipe.run(spark, startingOffsets=json.dumps({"0": 99}))
    assert pipe.consumer_offsets() == {}
