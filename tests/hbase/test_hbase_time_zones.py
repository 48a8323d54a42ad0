"""The ``spyt_hbase`` sink writes the same bytes whatever time zone Spark and its Python workers run in: here
America/New_York (session, JVM default and ``TZ`` of the workers), with instants in the hour New York lives twice
(2024-11-03 01:00-02:00) and around the hour it skips (2024-03-10 02:00-03:00).

``timestamp``: the cell is the instant's exact microseconds since the epoch (UTC), the key part its UTC ISO 8601
text, ``timestamp_column`` the HBase timestamp in ms (floor). ``timestamp_ntz``: the wall-clock time as written,
read as UTC (cell: its microseconds since 1970-01-01T00:00, key part: the ISO text without offset), even for a
wall-clock time New York never shows."""

from __future__ import annotations

import datetime as dt
import struct
import uuid

import pytest

from spyt_queue.sinks.hbase.codec import decode, split_row_key
from spyt_queue.sinks.hbase.source import HBaseDataSource
from tests.yt.worker_tz import python_workers_in

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
ZONE = "America/New_York"

#: (instant, wall-clock time): New York's two 01:30s and the end of its repeated hour, and both sides of the hour it
#: skips; the wall-clock times lie in the repeated hour and in the skipped one.
CASES = [
    (dt.datetime(2024, 11, 3, 5, 30, 0, 123457, tzinfo=UTC), dt.datetime(2024, 11, 3, 1, 30, 0, 123457)),  # 01:30 EDT
    (dt.datetime(2024, 11, 3, 6, 30, 0, 654321, tzinfo=UTC), dt.datetime(2024, 11, 3, 1, 59, 59, 999999)),  # 01:30 EST
    (dt.datetime(2024, 3, 10, 6, 59, 59, 999999, tzinfo=UTC), dt.datetime(2024, 3, 10, 2, 30)),  # 01:59:59 EST
    (dt.datetime(2024, 3, 10, 7, 0, tzinfo=UTC), dt.datetime(2024, 3, 10, 2, 0)),  # 03:00 EDT
]


def _micros(value: dt.datetime) -> int:
    naive = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    return (naive - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


def test_timestamps_are_exact_whatever_the_time_zone_of_spark_and_its_workers(spark, hbase) -> None:
    table = f"tz_{uuid.uuid4().hex[:10]}"
    rows = " UNION ALL ".join(
        f"SELECT {i} AS id, timestamp_micros({_micros(at)}) AS at, TIMESTAMP_NTZ '{wall.isoformat(' ')}' AS wall"
        for i, (at, wall) in enumerate(CASES)
    )
    with python_workers_in(spark, ZONE) as register:
        name = register(HBaseDataSource)
        (
            spark.sql(rows)
            .selectExpr("id", "at", "wall", "at AS at_cell", "wall AS wall_cell")
            .write.format(name)
            .option("thrift", hbase.thrift_address)
            .option("table", table)
            .option("row_key", "at,wall")
            .option("timestamp_column", "at")
            .option("create_table", "true")
            .mode("append")
            .save()
        )
    conn = hbase.connection()
    try:
        stored = {key: cells for key, cells in conn.table(table).scan(include_timestamp=True)}
    finally:
        conn.close()
    expected_keys = {
        f"{at.isoformat()}|{wall.isoformat()}".encode(): (i, at, wall) for i, (at, wall) in enumerate(CASES)
    }
    assert sorted(stored) == sorted(expected_keys), "key parts: the UTC instant, the wall-clock text"
    for key, (i, at, wall) in expected_keys.items():
        cells = stored[key]
        assert cells[b"d:id"][0] == struct.pack(">i", i)
        assert cells[b"d:at_cell"][0] == struct.pack(">q", _micros(at)), f"row {i}: the instant's exact micros"
        assert cells[b"d:wall_cell"][0] == struct.pack(">q", _micros(wall)), f"row {i}: the wall clock as UTC"
        assert {ts for _, ts in cells.values()} == {_micros(at) // 1000}, f"row {i}: HBase timestamp in ms"
        assert decode(cells[b"d:at_cell"][0], spark_type("timestamp")) == at
        assert decode(cells[b"d:wall_cell"][0], spark_type("timestamp_ntz")) == wall
        assert split_row_key(key, b"|", 2) == [at.isoformat().encode(), wall.isoformat().encode()]


def spark_type(name: str):
    from pyspark.sql import types as T

    return {"timestamp": T.TimestampType(), "timestamp_ntz": T.TimestampNTZType()}[name]
