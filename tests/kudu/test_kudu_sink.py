"""The spyt_kudu sink through Spark on a real Kudu: options, table creation, planners end to end, row errors, and
the one-task-per-key check."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pytest
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spyt_queue.sinks.kudu.client import ColumnSpec, get_client

pytestmark = pytest.mark.spark


def name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def write(df, kudu, table: str, **options) -> None:
    writer = df.write.format("spyt_kudu").mode("append").option("kudu.master", kudu.master_addresses)
    writer = writer.option("table", table)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.save()


def rows(kudu, table: str, order: tuple[str, ...]) -> list[dict]:
    return sorted(get_client(kudu.master_addresses).table(table).read_all(), key=lambda r: tuple(r[c] for c in order))


EVERY_SPARK_TYPE = StructType(
    [
        StructField("id", LongType(), False),
        StructField("flag", BooleanType()),
        StructField("tiny", ByteType()),
        StructField("small", ShortType()),
        StructField("medium", IntegerType()),
        StructField("real", FloatType()),
        StructField("dbl", DoubleType()),
        StructField("text", StringType()),
        StructField("raw", BinaryType()),
        StructField("at", TimestampType()),
        StructField("amount", DecimalType(12, 3)),
        StructField("day", DateType()),
    ]
)


def test_created_table_holds_every_spark_type_and_nulls(spark, kudu) -> None:
    table = name("types")
    full = (
        1, True, -3, 300, 70000, 0.5, 1e300, "héllo", b"\x00\x01", dt.datetime(2024, 5, 6, 7, 8, 9, 123456),
        decimal.Decimal("-1.250"), dt.date(2000, 1, 1),
    )  # fmt: skip
    nulls = (2, *([None] * (len(full) - 1)))
    df = spark.createDataFrame([full, nulls], EVERY_SPARK_TYPE)
    write(df, kudu, table, create_table="true", planner="upsert", **{"planner.key": "id"})
    kudu_table = get_client(kudu.master_addresses).table(table)
    assert kudu_table.primary_key == ["id"]
    assert kudu_table.column_types()["at"] == "UNIXTIME_MICROS" and kudu_table.column_types()["amount"] == "DECIMAL"
    assert rows(kudu, table, ("id",)) == [dict(zip(EVERY_SPARK_TYPE.names, r, strict=True)) for r in (full, nulls)]


def test_missing_table_is_an_error_naming_it(spark, kudu) -> None:
    df = spark.createDataFrame([(1, "a")], "id long, v string")
    with pytest.raises(Exception, match=r"Kudu table .absent_table. does not exist.*create_table=true"):
        write(df, kudu, "absent_table", planner="upsert", **{"planner.key": "id"})


def test_unknown_options_are_refused(spark, kudu) -> None:
    df = spark.createDataFrame([(1, "a")], "id long, v string")
    with pytest.raises(Exception, match=r"planner\.kee"):
        write(df, kudu, "t", planner="upsert", **{"planner.kee": "id"})
    with pytest.raises(Exception, match="create_tabel"):
        write(df, kudu, "t", create_tabel="true", **{"planner.key": "id"})


def test_history_ten_twenty_then_late_fifteen(spark, kudu) -> None:
    """The notes' example across three writes: 10 then 20 -> 10..19 N, 20..inf Y; a late 15 -> 10..14, 15..19, 20.."""
    table = name("history")
    opts = {"planner": "history", "planner.key": "id", "planner.event_time": "ts", "create_table": "true"}
    schema = "id long, ts long, v string"
    write(spark.createDataFrame([(1, 10, "a")], schema), kudu, table, **opts)
    write(spark.createDataFrame([(1, 20, "b")], schema), kudu, table, **opts)
    write(spark.createDataFrame([(1, 15, "c")], schema), kudu, table, **opts)
    write(spark.createDataFrame([(1, 15, "c")], schema), kudu, table, **opts)  # a replay writes nothing
    got = [(r["ts"], r["effective_to"], r["is_current"], r["v"]) for r in rows(kudu, table, ("ts",))]
    assert got == [(10, 14, False, "a"), (15, 19, False, "c"), (20, 2**63 - 1, True, "b")]


def test_latest_keeps_the_newest_and_ignores_stale_arrivals(spark, kudu) -> None:
    table = name("latest")
    opts = {"planner": "latest", "planner.key": "id", "planner.event_time": "ts", "create_table": "true"}
    schema = "id long, ts long, v string"
    write(spark.createDataFrame([(1, 10, "a"), (1, 30, "c"), (2, 5, "x")], schema).coalesce(1), kudu, table, **opts)
    write(spark.createDataFrame([(1, 20, "late"), (2, 6, "y")], schema).coalesce(1), kudu, table, **opts)
    assert [(r["id"], r["ts"], r["v"]) for r in rows(kudu, table, ("id",))] == [(1, 30, "c"), (2, 6, "y")]
    assert all(isinstance(r["last_updated"], dt.datetime) for r in rows(kudu, table, ("id",)))


def test_one_key_in_two_tasks_fails_the_write_naming_the_key(spark, kudu) -> None:
    table = name("split")
    opts = {"planner": "latest", "planner.key": "id", "planner.event_time": "ts", "create_table": "true"}
    from spyt_queue.sinks.kudu.sink import by_key

    write(spark.createDataFrame([(7, 0, "0")], "id long, ts long, v string"), kudu, table, **opts)
    df = spark.range(1, 5, numPartitions=2).selectExpr("7L as id", "id as ts", "cast(id as string) as v")
    with pytest.raises(Exception, match=r"rows of key \(id\) = \(7,\).*tasks 0 and 1.*repartition\('id'\)"):
        write(df, kudu, table, **opts)  # both tasks UPDATE key 7 from the same stored row: Kudu cannot tell
    write(by_key(df, ["id"]), kudu, table, **opts)
    assert [(r["id"], r["ts"]) for r in rows(kudu, table, ("id",))] == [(7, 4)]


def test_first_rows_of_one_key_in_two_tasks_collide_in_kudu(spark, kudu) -> None:
    """Both tasks INSERT the new key: Kudu refuses the later one if they overlap (the error says why), else the
    commit's key check refuses the batch; either way the write fails and says to repartition by the key."""
    table = name("split_new")
    opts = {"planner": "latest", "planner.key": "id", "planner.event_time": "ts", "create_table": "true"}
    df = spark.range(0, 4, numPartitions=2).selectExpr("7L as id", "id as ts", "cast(id as string) as v")
    with pytest.raises(Exception, match=r"(another task|planned by tasks 0 and 1).*df\.repartition\('id'\)"):
        write(df, kudu, table, **opts)


def test_a_row_kudu_refuses_fails_the_write(spark, kudu) -> None:
    """Kudu refuses cells over 64 KiB on the server: the task fails with Kudu's reason, nothing is dropped silently."""
    table = name("refused")
    get_client(kudu.master_addresses).create_table(
        table, [ColumnSpec("id", "int64", key=True), ColumnSpec("v", "string")], hash_columns=["id"]
    )
    df = spark.createDataFrame([(1, "ok"), (2, "x" * 70_000)], "id long, v string").coalesce(1)
    with pytest.raises(Exception, match="Kudu refused 1 operation"):
        write(df, kudu, table, planner="upsert", **{"planner.key": "id"})


def test_table_with_another_key_is_refused(spark, kudu) -> None:
    table = name("otherkey")
    get_client(kudu.master_addresses).create_table(
        table, [ColumnSpec("id", "int64", key=True), ColumnSpec("v", "string", key=True)], hash_columns=["id"]
    )
    df = spark.createDataFrame([(1, "a")], "id long, v string")
    with pytest.raises(Exception, match=r"primary key \['id', 'v'\].*planner.key"):
        write(df, kudu, table, planner="upsert", **{"planner.key": "id"})
