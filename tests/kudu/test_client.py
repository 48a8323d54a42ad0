"""The Kudu cluster recipe (integration/kudu.py) and the JPype client (spyt_queue.sinks.kudu.client) on a real Kudu."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import time
import uuid

import pytest

from spyt_queue.errors import BadRecordError
from spyt_queue.sinks.kudu.client import ColumnSpec, KuduTableNotFoundError, KuduWriteError, get_client
from spyt_queue.sinks.kudu.mutations import Mutation

EVERY_TYPE = [
    ColumnSpec("id", "int64", key=True),
    ColumnSpec("name", "string", key=True),
    ColumnSpec("flag", "bool"),
    ColumnSpec("tiny", "int8"),
    ColumnSpec("small", "int16"),
    ColumnSpec("medium", "int32"),
    ColumnSpec("real", "float"),
    ColumnSpec("dbl", "double"),
    ColumnSpec("raw", "binary"),
    ColumnSpec("at", "unixtime_micros"),
    ColumnSpec("amount", "decimal", precision=10, scale=2),
    ColumnSpec("day", "date"),
    ColumnSpec("code", "varchar", length=8),
]
FULL = {
    "id": 1,
    "name": "a",
    "flag": True,
    "tiny": -128,
    "small": -32768,
    "medium": 2**31 - 1,
    "real": 1.5,
    "dbl": -2.25e300,
    "raw": b"\x00\xffbin",
    "at": dt.datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=dt.timezone.utc),
    "amount": decimal.Decimal("-12345678.90"),
    "day": dt.date(1969, 12, 31),
    "code": "varchar!",
}


def table_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture
def client(kudu):
    return get_client(kudu.master_addresses)


def test_cluster_serves_one_tablet_server(kudu) -> None:
    listed = kudu.cli("tserver", "list", kudu.master_addresses, "-format=csv")
    assert listed.returncode == 0 and f"127.0.0.1:{kudu.tserver_port}" in listed.stdout
    assert kudu.uri("offsets") == f"kudu://{kudu.master_addresses}/offsets"


def test_every_kudu_type_round_trips(client) -> None:
    table = client.create_table(table_name("types"), EVERY_TYPE, hash_columns=["id"], hash_buckets=2)
    assert set(table.column_types().values()) == {
        "INT64", "STRING", "BOOL", "INT8", "INT16", "INT32", "FLOAT", "DOUBLE", "BINARY", "UNIXTIME_MICROS",
        "DECIMAL", "DATE", "VARCHAR",
    }  # fmt: skip
    table.apply([Mutation("insert", FULL)])
    assert table.read_all() == [FULL]


@pytest.mark.parametrize("null_column", [c.name for c in EVERY_TYPE if not c.key])
def test_null_in_any_column_keeps_the_rest_of_the_row(client, null_column: str) -> None:
    """The seed design stopped reading a row at its first NULL; every other column must still be read."""
    table = client.table("null_types") if client.table_exists("null_types") else None
    if table is None:
        table = client.create_table("null_types", EVERY_TYPE, hash_columns=["id"], hash_buckets=2)
    row = {**FULL, "id": EVERY_TYPE.index(next(c for c in EVERY_TYPE if c.name == null_column)), null_column: None}
    table.apply([Mutation("upsert", row)])
    [back] = table.scan(equal={"id": row["id"], "name": "a"})
    assert back == row


def test_all_null_row(client) -> None:
    table = client.create_table(table_name("all_null"), EVERY_TYPE, hash_columns=["id"], hash_buckets=2)
    row = {c.name: None for c in EVERY_TYPE} | {"id": 7, "name": "n"}
    table.apply([Mutation("insert", row)])
    assert table.read_all() == [row]


def test_rows_for_keys_is_one_scan_per_batch_and_drops_the_cross_product(client) -> None:
    cols = [ColumnSpec("k1", "int64", key=True), ColumnSpec("k2", "string", key=True), ColumnSpec("v", "int32")]
    table = client.create_table(table_name("keys"), cols, hash_columns=["k1"], hash_buckets=2)
    table.apply([Mutation("insert", {"k1": a, "k2": b, "v": a * 10}) for a in (1, 2) for b in ("x", "y")])
    found = table.rows_for_keys(["k1", "k2"], [(1, "x"), (2, "y"), (3, "z")])
    assert found == {(1, "x"): [{"k1": 1, "k2": "x", "v": 10}], (2, "y"): [{"k1": 2, "k2": "y", "v": 20}], (3, "z"): []}


def test_every_refused_row_is_reported(client) -> None:
    cols = [ColumnSpec("k", "int64", key=True), ColumnSpec("v", "string")]
    table = client.create_table(table_name("errors"), cols, hash_columns=["k"], hash_buckets=2)
    table.apply([Mutation("insert", {"k": 1, "v": "one"})])
    with pytest.raises(KuduWriteError, match="2 operation") as raised:
        table.apply(
            [
                Mutation("insert", {"k": 1, "v": "again"}),
                Mutation("update", {"k": 2, "v": "missing"}),
                Mutation("insert", {"k": 3, "v": "fine"}),
            ]
        )
    errors = raised.value.errors
    assert sorted((e.kind, e.already_present, e.not_found) for e in errors) == [
        ("INSERT", True, False),
        ("UPDATE", False, True),
    ]
    assert {r["k"]: r["v"] for r in table.read_all()} == {1: "one", 3: "fine"}


def test_values_that_do_not_fit_name_the_column(client) -> None:
    cols = [ColumnSpec("k", "int64", key=True), ColumnSpec("amount", "decimal", precision=6, scale=2)]
    table = client.create_table(table_name("fit"), cols, hash_columns=["k"], hash_buckets=2)
    with pytest.raises(BadRecordError, match="'amount'"):
        table.apply([Mutation("insert", {"k": 1, "amount": decimal.Decimal("1.234")})])
    with pytest.raises(BadRecordError, match="no column 'nope'"):
        table.apply([Mutation("insert", {"k": 1, "nope": 1})])
    with pytest.raises(BadRecordError, match="NOT NULL"):
        table.apply([Mutation("insert", {"k": None})])


def test_missing_table_is_named(client) -> None:
    with pytest.raises(KuduTableNotFoundError, match="'no_such_table'"):
        client.table("no_such_table")


def test_decimal_38_digits_round_trip_without_touching_the_global_context(client) -> None:
    """DECIMAL(38, s) values beyond the 28 digits of Python's default context are written exactly, through a local
    context: the process's context stays as it was. More digits than the column's precision is refused."""
    cols = [ColumnSpec("k", "int64", key=True), ColumnSpec("d", "decimal", precision=38, scale=10)]
    table = client.create_table(table_name("dec38"), cols, hash_columns=["k"], hash_buckets=2)
    big = decimal.Decimal("9" * 28 + "." + "9" * 10)
    table.apply([Mutation("insert", {"k": 1, "d": big}), Mutation("insert", {"k": 2, "d": big.copy_negate()})])
    assert sorted(r["d"] for r in table.read_all()) == [big.copy_negate(), big]
    assert decimal.getcontext().prec == 28
    with pytest.raises(BadRecordError, match=r"'d' \(DECIMAL\(38, 10\)\).*29 digits before the point"):
        table.apply([Mutation("insert", {"k": 3, "d": decimal.Decimal("1" * 29)})])


def test_timestamps_are_utc_instants_whatever_the_process_time_zone(client, monkeypatch) -> None:
    """UNIXTIME_MICROS holds UTC microseconds: an aware datetime is written as its instant, a naive one as its
    wall clock taken as UTC, and reads are aware UTC datetimes, in any process time zone (here New York, on the
    fall-back night and inside the spring-forward gap)."""
    utc = dt.timezone.utc
    cols = [ColumnSpec("k", "int64", key=True), ColumnSpec("at", "unixtime_micros")]
    table = client.create_table(table_name("tz"), cols, hash_columns=["k"], hash_buckets=2)
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        written = {
            1: dt.datetime(2024, 11, 3, 5, 30, tzinfo=utc),
            2: dt.datetime(2024, 11, 3, 6, 30, tzinfo=utc),
            3: dt.datetime(2024, 3, 10, 2, 30, 0, 7),  # naive, in New York's gap
            4: dt.datetime(2024, 11, 3, 1, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
        }
        table.apply([Mutation("insert", {"k": k, "at": v}) for k, v in written.items()])
        got = {r["k"]: r["at"] for r in table.read_all()}
        assert got == {1: written[1], 2: written[2], 3: written[3].replace(tzinfo=utc), 4: written[2]}
        assert all(v.tzinfo is utc for v in got.values())
        assert [r["k"] for r in table.scan(equal={"at": written[2]})] in ([2, 4], [4, 2])
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert os.environ.get("TZ") is None
