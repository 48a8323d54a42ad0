"""YT timestamps through the ``ytqueue`` source and sink are exact whatever time zone Spark and its Python workers
run in: here America/New_York (session, JVM default and ``TZ`` of the workers), with instants in the hour New York
lives twice (2024-11-03 01:00-02:00) and around the hour it skips (2024-03-10 02:00-03:00).

Reading: YT ``timestamp`` (microseconds) and ``datetime`` (seconds) become the same instant as a Spark ``timestamp``,
``date`` (days) the same day, also inside structs with ``parsing_type_v3``. Writing: a Spark ``timestamp`` is
written as its exact microseconds since the epoch (``datetime`` columns: its seconds, rounded down), a
``timestamp_ntz`` as the wall-clock time read as UTC."""

from __future__ import annotations

import datetime as dt

import pytest
import yt.yson as yson

from spyt_queue.datasource import YtQueueDataSource
from spyt_queue.yt.admin import column, create_consumer, create_queue, create_sorted_table
from tests.yt.worker_tz import python_workers_in

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
ZONE = "America/New_York"
EPOCH = dt.datetime(1970, 1, 1)

#: New York's two 01:30s, the end of its repeated hour, both sides of the hour it skips, and one before the epoch.
INSTANTS = [
    dt.datetime(2024, 11, 3, 5, 30, 0, 123457),  # 01:30 EDT
    dt.datetime(2024, 11, 3, 6, 30, 0, 654321),  # 01:30 EST
    dt.datetime(2024, 11, 3, 6, 59, 59, 999999),  # 01:59:59.999999 EST
    dt.datetime(2024, 3, 10, 6, 59, 59, 999999),  # 01:59:59.999999 EST, the last instant before the skipped hour
    dt.datetime(2024, 3, 10, 7, 0),  # 03:00 EDT
    dt.datetime(1969, 12, 31, 23, 59, 59, 500000),  # -0.5 s
]
#: Wall-clock times New York repeats or skips (``timestamp_ntz`` values).
WALLS = [
    dt.datetime(2024, 11, 3, 1, 30, 0, 123457),
    dt.datetime(2024, 11, 3, 1, 59, 59, 999999),
    dt.datetime(2024, 3, 10, 2, 30),
    dt.datetime(2024, 3, 10, 2, 0),
    dt.datetime(2024, 3, 10, 2, 59, 59, 999999),
    dt.datetime(1969, 12, 31, 23, 59, 59, 500000),
]


#: (timestamp, datetime, date) types of YT, and how many of the cases they hold (the 32-bit types start at 1970).
FAMILIES = {
    "plain": (("timestamp", "datetime", "date"), len(INSTANTS) - 1),
    "64": (("timestamp64", "datetime64", "date32"), len(INSTANTS)),
}


@pytest.fixture(params=sorted(FAMILIES))
def family(request) -> tuple[tuple[str, str, str], int]:
    return FAMILIES[request.param]


def _micros(naive_utc: dt.datetime) -> int:
    return (naive_utc - EPOCH) // dt.timedelta(microseconds=1)


def test_reading_yt_times_gives_the_exact_instants_and_days(spark, yt, yt_proxy, yt_root, family) -> None:
    (ts, dtm, day), count = family
    queue = f"{yt_root}/times"
    members = [{"name": "at", "type": ts}, {"name": "sec", "type": dtm}, {"name": "day", "type": day}]
    schema = [
        column("k", "int64"),
        column("at", ts),
        column("sec", dtm),
        column("day", day),
        {"name": "nested", "type_v3": {"type_name": "struct", "members": members}},
    ]
    create_queue(yt, queue, schema)
    rows = []
    for k, instant in enumerate(INSTANTS[:count]):
        micros = _micros(instant)
        seconds, days = micros // 1_000_000, (instant - EPOCH).days
        times = {"at": micros, "sec": seconds, "day": days}
        unsigned = ts == "timestamp"  # inside a struct, YT wants the 32-bit types' values as YSON uint64
        nested = {key: yson.YsonUint64(v) if unsigned else v for key, v in times.items()}
        rows.append({"k": k, **times, "nested": nested})
    yt.insert_rows(queue, rows)

    with python_workers_in(spark, ZONE) as register:
        name = register(YtQueueDataSource)
        got = (
            spark.read.format(name)
            .option("proxy", yt_proxy)
            .option("parsing_type_v3", "true")
            .load(queue)
            .selectExpr(
                "k",
                "unix_micros(at)",
                "unix_micros(sec)",
                "unix_date(day)",
                "unix_micros(nested.at)",
                "unix_micros(nested.sec)",
                "unix_date(nested.day)",
            )
            .collect()
        )
    expected = [
        (r["k"], r["at"], r["sec"] * 1_000_000, r["day"], r["at"], r["sec"] * 1_000_000, r["day"]) for r in rows
    ]
    assert sorted(tuple(r) for r in got) == expected


def test_writing_spark_times_to_yt_is_exact(spark, yt, yt_proxy, yt_root, family) -> None:
    """``timestamp`` -> its microseconds (``datetime``: seconds, floor); ``timestamp_ntz`` -> the wall clock as UTC;
    ``date`` -> its days. Through a batch write and through ``writeStream`` fed by the ``ytqueue`` source."""
    (ts, dtm, day), count = family
    target = f"{yt_root}/written"
    create_sorted_table(
        yt,
        target,
        [
            column("k", "int64", sort_order="ascending"),
            column("at", ts),
            column("sec", dtm),
            column("wall", ts),
            column("day", day),
        ],
    )
    cases = list(zip(INSTANTS, WALLS, strict=True))[:count]
    select = " UNION ALL ".join(
        f"SELECT {k} AS k, timestamp_micros({_micros(at)}) AS at, timestamp_micros({_micros(at)}) AS sec, "
        f"TIMESTAMP_NTZ '{wall.isoformat(' ')}' AS wall, DATE '{wall.date().isoformat()}' AS day"
        for k, (at, wall) in enumerate(cases)
    )
    expected = [
        {
            "k": k,
            "at": _micros(at),
            "sec": _micros(at) // 1_000_000,
            "wall": _micros(wall),
            "day": (wall.date() - EPOCH.date()).days,
        }
        for k, (at, wall) in enumerate(cases)
    ]
    with python_workers_in(spark, ZONE) as register:
        name = register(YtQueueDataSource)
        spark.sql(select).write.format(name).option("proxy", yt_proxy).mode("append").save(target)
    assert sorted(yt.select_rows(f"* from [{target}]"), key=lambda r: r["k"]) == expected


def test_a_stream_from_a_yt_queue_to_a_yt_table_keeps_every_instant(spark, yt, yt_proxy, yt_root, checkpoint) -> None:
    queue, consumer, target = f"{yt_root}/in", f"{yt_root}/consumer", f"{yt_root}/out"
    create_queue(yt, queue, [column("k", "int64"), column("at", "timestamp64"), column("sec", "datetime64")])
    create_consumer(yt, consumer, queue)
    create_sorted_table(
        yt,
        target,
        [column("k", "int64", sort_order="ascending"), column("at", "timestamp64"), column("sec", "datetime64")],
    )
    rows = [{"k": k, "at": _micros(i), "sec": _micros(i) // 1_000_000} for k, i in enumerate(INSTANTS)]
    yt.insert_rows(queue, rows)
    with python_workers_in(spark, ZONE) as register:
        name = register(YtQueueDataSource)
        query = (
            spark.readStream.format(name)
            .option("proxy", yt_proxy)
            .option("consumer_path", consumer)
            .load(queue)
            .writeStream.format(name)
            .option("proxy", yt_proxy)
            .option("path", target)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        try:
            assert query.awaitTermination(300), "the query did not finish within 300 s"
        finally:
            query.stop()
        assert query.exception() is None, query.exception()
    assert sorted(yt.select_rows(f"* from [{target}]"), key=lambda r: r["k"]) == rows


def test_times_nested_in_composite_columns_are_written_exactly(spark, yt, yt_proxy, yt_root) -> None:
    """A ``timestamp``/``timestamp_ntz``/``date`` inside a struct, a list or an optional of a YT composite column is
    written as YT's integer form of that member's type (microseconds, seconds for ``datetime``, days), exactly as
    a top-level column is, with the workers in New York."""
    target = f"{yt_root}/nested"
    struct = {
        "type_name": "struct",
        "members": [
            {"name": "at", "type": "timestamp"},
            {"name": "sec", "type": {"type_name": "optional", "item": "datetime"}},
            {"name": "wall", "type": "timestamp"},
            {"name": "day", "type": "date"},
        ],
    }
    listed = {"type_name": "list", "item": {"type_name": "optional", "item": "timestamp"}}
    create_sorted_table(
        yt,
        target,
        [
            column("k", "int64", sort_order="ascending"),
            {"name": "s", "type_v3": {"type_name": "optional", "item": struct}},
            {"name": "l", "type_v3": listed},
        ],
    )
    at, wall = INSTANTS[1], WALLS[2]
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    select = (
        f"SELECT 1 AS k, named_struct('at', timestamp_micros({_micros(at)}), 'sec', timestamp_micros({_micros(at)}), "
        f"'wall', TIMESTAMP_NTZ '{wall.isoformat(' ')}', 'day', DATE '{wall.date().isoformat()}') AS s, "
        f"array(timestamp_micros({_micros(at)}), CAST(NULL AS TIMESTAMP)) AS l"
    )
    with python_workers_in(spark, ZONE) as register:
        name = register(YtQueueDataSource)
        spark.sql(select).write.format(name).option("proxy", yt_proxy).mode("append").save(target)
    (row,) = yt.select_rows(f"* from [{target}]")
    assert row["s"] == {
        "at": _micros(at),
        "sec": _micros(at) // 1_000_000,
        "wall": _micros(wall),
        "day": (wall.date() - EPOCH.date()).days,
    }
    assert row["l"] == [_micros(at), None]
