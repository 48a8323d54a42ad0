"""The spyt_kudu sink through Spark on a real Kudu: options, table creation, planners end to end, row errors, and
the one-task-per-key check."""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import uuid
from collections.abc import Iterator

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

UTC = dt.timezone.utc


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
        1, True, -3, 300, 70000, 0.5, 1e300, "héllo", b"\x00\x01", dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
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


# -- values at the column's limits (issue 19) ----------------------------------------------------------------------


def _varchar_table(kudu, length: int = 5) -> str:
    table = name("varchar")
    get_client(kudu.master_addresses).create_table(
        table, [ColumnSpec("id", "int64", key=True), ColumnSpec("code", "varchar", length=length)], hash_columns=["id"]
    )
    return table


def test_a_string_longer_than_its_varchar_column_is_refused_naming_column_limit_and_row(spark, kudu) -> None:
    """Kudu (client and server) would truncate 'abcdefghij' to 'abcde' without a word; the sink refuses the row
    like an integer out of range, and writes none of the task's rows."""
    table = _varchar_table(kudu)
    df = spark.createDataFrame([(1, "abc"), (2, "abcdefghij")], "id long, code string").coalesce(1)
    with pytest.raises(Exception) as raised:
        write(df, kudu, table, planner="append", **{"planner.key": "id"})
    message = str(raised.value)
    assert "'abcdefghij' (10 characters) is longer than Kudu column 'code' VARCHAR(5)" in message, message
    assert "(id=2)" in message, message
    assert all(r["code"] != "abcde" for r in rows(kudu, table, ("id",)))


def test_varchar_length_counts_characters_as_kudu_does(spark, kudu) -> None:
    """Kudu's VARCHAR(n) holds n UTF-8 characters (code points), whatever their bytes or UTF-16 units: five accented
    letters or five emoji fit VARCHAR(5), six do not."""
    table = _varchar_table(kudu)
    fits = {1: "héllo", 2: "😀😀😀😀😀", 3: "ab", 4: "€€€€€"}
    df = spark.createDataFrame(list(fits.items()), "id long, code string").coalesce(1)
    write(df, kudu, table, planner="upsert", **{"planner.key": "id"})
    assert {r["id"]: r["code"] for r in rows(kudu, table, ("id",))} == fits
    df = spark.createDataFrame([(5, "😀" * 6)], "id long, code string")
    with pytest.raises(Exception, match=r"\(6 characters\) is longer than Kudu column 'code' VARCHAR\(5\)"):
        write(df, kudu, table, planner="upsert", **{"planner.key": "id"})


@contextlib.contextmanager
def executor_time_zone(spark, zone: str) -> Iterator[None]:
    """Run the spyt_kudu tasks started inside the block with ``TZ=zone``: the variable goes into the environment
    that Spark gives the data source's Python workers (a new worker pool, since the environment differs)."""
    source = spark._jsparkSession.sessionState().dataSourceManager().lookupDataSource("spyt_kudu")
    env = source.dataSourceCls().envVars()
    env.put("TZ", zone)
    try:
        yield
    finally:
        env.remove("TZ")


def as_utc(value: dt.datetime) -> dt.datetime:
    """A read timestamp as an aware UTC datetime (a naive one taken as UTC)."""
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def test_timestamps_are_instants_whatever_the_executors_time_zone(spark, kudu) -> None:
    """Executors in America/New_York: 05:30Z and 06:30Z on 2024-11-03 are both 01:30 local (the fall-back hour).
    They stay two versions of the history, stored as their own UTC microseconds, and the far-future sentinel is
    9999-12-31T00:00Z."""
    table = name("tz_history")
    first, second = dt.datetime(2024, 11, 3, 5, 30, tzinfo=UTC), dt.datetime(2024, 11, 3, 6, 30, tzinfo=UTC)
    df = spark.createDataFrame([(1, first, "edt"), (1, second, "est")], "id long, at timestamp, v string")
    opts = {"planner": "history", "planner.key": "id", "planner.event_time": "at", "create_table": "true"}
    with executor_time_zone(spark, "America/New_York"):
        write(df.coalesce(1), kudu, table, **opts)
        write(df.coalesce(1), kudu, table, **opts)  # a replay writes nothing (planner comparisons in UTC too)
    got = [(as_utc(r["at"]), as_utc(r["effective_to"]), r["is_current"], r["v"]) for r in rows(kudu, table, ("at",))]
    assert got == [
        (first, second - dt.timedelta(microseconds=1), False, "edt"),
        (second, dt.datetime(9999, 12, 31, tzinfo=UTC), True, "est"),
    ]


def test_timestamp_ntz_is_its_wall_clock_taken_as_utc(spark, kudu) -> None:
    """TimestampNTZ is written as the microseconds of its wall-clock value read as UTC, whatever the executors'
    zone: 2024-03-10T02:30 (inside New York's spring-forward gap) is stored as 2024-03-10T02:30Z, and 01:30 on the
    fall-back day as 01:30Z."""
    from pyspark.sql.types import TimestampNTZType

    table = name("tz_ntz")
    gap, repeated = dt.datetime(2024, 3, 10, 2, 30), dt.datetime(2024, 11, 3, 1, 30, 0, 5)
    schema = StructType([StructField("id", LongType(), False), StructField("at", TimestampNTZType())])
    df = spark.createDataFrame([(1, gap), (2, repeated)], schema)
    with executor_time_zone(spark, "America/New_York"):
        write(df, kudu, table, planner="upsert", create_table="true", **{"planner.key": "id"})
    assert get_client(kudu.master_addresses).table(table).column_types()["at"] == "UNIXTIME_MICROS"
    assert [as_utc(r["at"]) for r in rows(kudu, table, ("id",))] == [
        gap.replace(tzinfo=UTC),
        repeated.replace(tzinfo=UTC),
    ]


def test_history_int32_event_time_gets_a_sentinel_that_fits(spark, kudu) -> None:
    """An INT32 event time makes an INT32 effective-to column: the current version is open until 2^31-1 (2^63-1
    does not fit it, and the refused row left the key without a current version)."""
    table = name("hist_int32")
    opts = {"planner": "history", "planner.key": "id", "planner.event_time": "ts", "create_table": "true"}
    df = spark.createDataFrame([(1, 10, "a"), (1, 20, "b")], "id long, ts int, v string").coalesce(1)
    write(df, kudu, table, **opts)
    assert get_client(kudu.master_addresses).table(table).column_types()["effective_to"] == "INT32"
    got = [(r["ts"], r["effective_to"], r["is_current"]) for r in rows(kudu, table, ("ts",))]
    assert got == [(10, 19, False), (20, 2**31 - 1, True)]
    with pytest.raises(Exception, match=r"planner\.far_future.*1099511627776.*'effective_to' \(INT32\)"):
        write(df, kudu, table, **opts, **{"planner.far_future": str(2**40)})


def test_decimal_38_digits_are_written_exactly(spark, kudu) -> None:
    """Every value a DECIMAL(38, s) column allows, beyond the 28 digits of Python's default decimal context."""
    table = name("dec38")
    schema = "id long, d0 decimal(38, 0), d2 decimal(38, 2), d38 decimal(38, 38)"
    values = [
        (1, decimal.Decimal("9" * 38), decimal.Decimal("9" * 36 + ".99"), decimal.Decimal("0." + "9" * 38)),
        (2, decimal.Decimal("-" + "1234567890" * 3 + "12345678"), decimal.Decimal("-123456789012345678901234567890.12"),
         decimal.Decimal("-0." + "0" * 37 + "1")),
    ]  # fmt: skip
    write(spark.createDataFrame(values, schema).coalesce(1), kudu, table, planner="upsert", create_table="true",
          **{"planner.key": "id"})  # fmt: skip
    assert [(r["id"], r["d0"], r["d2"], r["d38"]) for r in rows(kudu, table, ("id",))] == values


def test_history_equal_consecutive_versions_give_the_same_rows_in_any_order(spark, kudu) -> None:
    """Versions 10:A, 20:A, 30:B: arriving in time order or with 20:A first (another batch), the table holds the
    merged history 10..29 A, 30.. B."""
    opts = {"planner": "history", "planner.key": "id", "planner.event_time": "ts", "create_table": "true"}
    schema = "id long, ts long, v string"
    tables = []
    for batches in ([[(1, 10, "A"), (1, 20, "A"), (1, 30, "B")]], [[(1, 20, "A")], [(1, 30, "B"), (1, 10, "A")]]):
        table = name("hist_merge")
        for batch in batches:
            write(spark.createDataFrame(batch, schema).coalesce(1), kudu, table, **opts)
        tables.append([(r["ts"], r["effective_to"], r["is_current"], r["v"]) for r in rows(kudu, table, ("ts",))])
    assert tables[0] == tables[1] == [(10, 29, False, "A"), (30, 2**63 - 1, True, "B")]
