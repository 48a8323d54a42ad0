"""Composite row keys of the ``spyt_hbase`` sink: parts holding the separator (or the escape character ``\\``) are
escaped, so two different tuples of key values never become the same row; keys whose parts hold neither are the
plain join (as written before escaping existed). Spark writes to a real HBase, and the codec alone (round trip,
order, prefix scans)."""

from __future__ import annotations

import itertools
import random
import uuid

import pytest

from spyt_queue.errors import OptionError
from spyt_queue.options import Options
from spyt_queue.sinks.hbase.codec import join_row_key, split_row_key
from spyt_queue.sinks.hbase.sink import settings_from_options


def table_name() -> str:
    return f"keys_{uuid.uuid4().hex[:10]}"


def _cells(hbase, table: str) -> dict[bytes, dict[bytes, bytes]]:
    conn = hbase.connection()
    try:
        return dict(conn.table(table).scan())
    finally:
        conn.close()


@pytest.mark.spark
@pytest.mark.parametrize("api", [1, 2], ids=["thrift1", "thrift2"])
def test_key_parts_holding_the_separator_stay_distinct_rows(spark, hbase, api) -> None:
    """('a|b', 'c') and ('a', 'b|c') joined plainly are both row ``a|b|c``: one put would silently replace the
    other. Both rows must be stored, and each key must split back into its own parts."""
    rows = [("a|b", "c", "first"), ("a", "b|c", "second"), ("a\\", "|c", "third"), ("a", "b", "plain")]
    df = spark.createDataFrame(rows, "k1 string, k2 string, v string")
    table = table_name()
    gateway = {"thrift": hbase.thrift2_address, "thrift_api": "2"} if api == 2 else {"thrift": hbase.thrift_address}
    writer = df.write.format("spyt_hbase").option("table", table).option("row_key", "k1,k2")
    for key, value in {**gateway, "create_table": "true"}.items():
        writer = writer.option(key, value)
    writer.mode("append").save()

    stored = _cells(hbase, table)
    assert len(stored) == len(rows), sorted(stored)
    by_parts = {tuple(p.decode() for p in split_row_key(key, b"|", 2)): c[b"d:v"].decode() for key, c in stored.items()}
    assert by_parts == {(k1, k2): v for k1, k2, v in rows}
    assert b"a|b" in stored, "parts without '|' or '\\' are joined as they are (existing tables stay readable)"
    assert stored[b"a\\|b|c"] == {b"d:v": b"first"}


@pytest.mark.spark
def test_escaping_with_a_salt_prefix_and_a_multi_byte_separator(spark, hbase) -> None:
    """The salt is computed over the escaped natural key; a separator of several bytes escapes its first byte."""
    import zlib

    rows = [("a:", ":b", "x"), ("a", "::b", "y"), ("a::", "b", "z")]
    df = spark.createDataFrame(rows, "k1 string, k2 string, v string")
    table = table_name()
    (
        df.write.format("spyt_hbase")
        .option("thrift", hbase.thrift_address)
        .option("table", table)
        .option("row_key", "k1,k2")
        .option("row_key_separator", "::")
        .option("row_key_prefix", "salt:8")
        .option("create_table", "true")
        .mode("append")
        .save()
    )
    stored = _cells(hbase, table)
    assert len(stored) == 3
    back = {}
    for key, cells in stored.items():
        salt, natural = key[:1], key[3:]
        assert key[1:3] == b"::" and salt == str(zlib.crc32(natural) % 8).encode()
        back[tuple(p.decode() for p in split_row_key(natural, b"::", 2))] = cells[b"d:v"].decode()
    assert back == {(k1, k2): v for k1, k2, v in rows}


# ---------------------------------------------------------------------------------------------- codec alone

ALPHABET = [b"a", b"b", b"|", b"\\", b":", b"\xff", b"\x00"]


def _parts(rng: random.Random) -> bytes:
    return b"".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 5)))


@pytest.mark.parametrize("separator", [b"|", b"#", b"::", b"|\\", b"\x00"])
def test_join_and_split_are_inverse_and_injective(separator: bytes) -> None:
    rng = random.Random(7)
    seen: dict[bytes, tuple[bytes, ...]] = {}
    for _ in range(5000):
        count = rng.randrange(2, 4)
        parts = tuple(_parts(rng) for _ in range(count))
        key = join_row_key(list(parts), separator)
        assert split_row_key(key, separator, count) == list(parts)
        assert seen.setdefault(key, parts) == parts, f"{parts} and {seen[key]} share row key {key!r}"
    short = [bytes(p) for p in itertools.product(b"a|\\:", repeat=2)]
    for a, b in itertools.product(short, repeat=2):
        assert split_row_key(join_row_key([a, b], separator), separator, 2) == [a, b]


def test_keys_without_the_separator_or_backslash_are_the_plain_join() -> None:
    assert join_row_key([b"eu", b"7"], b"|") == b"eu|7"
    assert join_row_key([b"2024-01-01", b"x"], b"#") == b"2024-01-01#x"
    assert join_row_key([b"a|b"], b"|") == b"a|b", "a one-column key is the column's text unchanged"
    assert split_row_key(b"a|b", b"|", 1) == [b"a|b"]
    assert join_row_key([b"a|b", b"c"], b"|") == b"a\\|b|c"
    assert join_row_key([b"a\\b", b"c"], b"|") == b"a\\\\b|c"
    assert join_row_key([b"a:b", b"c"], b"::") == b"a\\:b::c", "a multi-byte separator escapes its first byte"


def test_rows_with_equal_leading_parts_are_adjacent_and_prefix_scannable() -> None:
    """Every key of first part X starts with ``join_row_key([X, b''])`` and no other key does, so the rows of X are
    one contiguous range (a prefix scan); within it they are grouped by the second part the same way."""
    values = [bytes(p) for n in range(0, 3) for p in itertools.product(b"a|\\b", repeat=n)]
    keys = sorted((join_row_key([x, y, z], b"|"), (x, y, z)) for x in values for y in values[:8] for z in (b"1", b"|"))
    for depth in (1, 2):
        groups = [tuple(parts[:depth]) for _, parts in keys]
        runs = [g for g, _ in itertools.groupby(groups)]
        assert len(runs) == len(set(runs)), f"rows sharing their first {depth} part(s) are not adjacent"
    for x in values:
        prefix = join_row_key([x, b""], b"|")
        assert {parts for key, parts in keys if key.startswith(prefix)} == {p for _, p in keys if p[0] == x}
    plain = [join_row_key([x, y], b"|") for x in (b"a", b"b") for y in (b"1", b"2")]
    assert plain == sorted(plain), "parts without escapes keep their order"


def test_split_refuses_what_join_never_writes() -> None:
    for bad, count in ((b"a|b|c", 2), (b"abc", 2), (b"a\\", 1 + 1), (b"a:b::c", 2)):
        with pytest.raises(ValueError, match="row key"):
            split_row_key(bad, b"::" if b":" in bad else b"|", count)


def test_a_separator_starting_with_the_escape_character_is_refused_for_composite_keys() -> None:
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField(n, T.StringType()) for n in ("k1", "k2", "v")])
    options = {"thrift": "localhost:9090", "table": "t", "row_key_separator": "\\"}
    with pytest.raises(OptionError, match=r"row_key_separator.*escape"):
        settings_from_options(Options({**options, "row_key": "k1,k2"}), schema)
    assert settings_from_options(Options({**options, "row_key": "k1"}), schema).separator == b"\\"


def test_timestamp_key_parts_do_not_depend_on_the_column_time_zone() -> None:
    """Spark hands ``timestamp`` columns to Python in the session time zone; the key text is the UTC instant (the
    repeated 01:30 of New York gives two keys, as it is two instants), a ``timestamp_ntz`` key the wall-clock text."""
    import datetime as dt

    import pyarrow as pa

    from spyt_queue.sinks.hbase.codec import key_column, key_part

    micros = [1730611800123457, 1730615400000000, -500000]  # 01:30:00.123457 EDT, 01:30 EST, 1969-12-31T23:59:59.5Z
    utc = [b"2024-11-03T05:30:00.123457+00:00", b"2024-11-03T06:30:00+00:00", b"1969-12-31T23:59:59.500000+00:00"]
    for zone in ("UTC", "America/New_York", "Asia/Kolkata"):
        for unit, scale in (("us", 1), ("ns", 1000)):
            array = pa.array([m * scale for m in micros], pa.timestamp(unit, tz=zone))
            assert key_column(array) == utc, (zone, unit)
            assert [key_part(v) for v in array.to_pylist()] == utc, (zone, unit)
    wall = pa.array(micros, pa.timestamp("us"))
    assert key_column(wall) == [b"2024-11-03T05:30:00.123457", b"2024-11-03T06:30:00", b"1969-12-31T23:59:59.500000"]
    assert key_part(dt.datetime(2024, 3, 10, 2, 30)) == b"2024-03-10T02:30:00"


#: Two instants and their text as keys: in UTC (now), and as spyt-queue wrote them before escaping with the session
#: in America/New_York (EDT on both dates).
OLD_ZONE = "America/New_York"
AT_1 = (1730611800123457, "2024-11-03T05:30:00.123457+00:00", "2024-11-03T01:30:00.123457-04:00")
AT_2 = (1710054000000000, "2024-03-10T07:00:00+00:00", "2024-03-10T03:00:00-04:00")
#: (k1, k2, instant, value): a part holding the separator, a plain one, a part holding the escape character.
UPGRADE_ROWS = [("a|b", "c", AT_1, "first"), ("eu", "7", AT_2, "second"), ("x\\", "y", AT_1, "third")]


def _old_key(k1: str, k2: str, at: tuple[int, str, str]) -> bytes:
    return "|".join((k1, k2, at[2])).encode()


def _new_key(k1: str, k2: str, at: tuple[int, str, str]) -> bytes:
    return join_row_key([k1.encode(), k2.encode(), at[1].encode()], b"|")


@pytest.mark.spark
def test_legacy_key_encoding_overwrites_the_rows_an_older_version_wrote(spark, hbase) -> None:
    """A table an older spyt-queue wrote (composite parts joined as they are, timestamps in the session time zone).
    Written again after the upgrade, as a replay does, with ``row_key_encoding=legacy`` and the same session time
    zone, the records land on their old rows; with the default encoding they land beside them."""
    table = table_name()
    conn = hbase.connection()
    try:
        conn.create_table(table, {"d": {"max_versions": 1}})
        for k1, k2, at, _ in UPGRADE_ROWS:
            conn.table(table).put(_old_key(k1, k2, at), {b"d:v": b"before the upgrade"})
    finally:
        conn.close()
    rows = " UNION ALL ".join(
        f"SELECT '{k1}' AS k1, '{k2}' AS k2, timestamp_micros({at[0]}) AS at, '{v}' AS v"
        for k1, k2, at, v in [(k1.replace("\\", "\\\\"), k2, at, v) for k1, k2, at, v in UPGRADE_ROWS]
    )

    def write(**options: str) -> None:
        writer = spark.sql(rows).write.format("spyt_hbase").option("thrift", hbase.thrift_address)
        for key, value in {"table": table, "row_key": "k1,k2,at", **options}.items():
            writer = writer.option(key, value)
        writer.mode("append").save()

    saved = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", OLD_ZONE)
    try:
        write(row_key_encoding="legacy")
        stored = _cells(hbase, table)
        assert stored == {_old_key(k1, k2, at): {b"d:v": v.encode()} for k1, k2, at, v in UPGRADE_ROWS}, sorted(stored)
        write()  # the default encoding: other keys for the same records
    finally:
        spark.conf.set("spark.sql.session.timeZone", saved)
    stored = _cells(hbase, table)
    assert len(stored) == 2 * len(UPGRADE_ROWS), sorted(stored)
    assert {_new_key(k1, k2, at) for k1, k2, at, _ in UPGRADE_ROWS} <= set(stored)


def test_legacy_key_encoding_takes_a_separator_starting_with_the_escape_character() -> None:
    """Keys written before escaping may use any separator; ``legacy`` keeps accepting it, the default refuses it."""
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField(n, T.StringType()) for n in ("k1", "k2", "v")])
    options = {"thrift": "localhost:9090", "table": "t", "row_key": "k1,k2", "row_key_separator": "\\"}
    settings = settings_from_options(Options({**options, "row_key_encoding": "legacy"}), schema)
    assert settings.key_encoding == "legacy" and settings.separator == b"\\"
    with pytest.raises(OptionError, match=r"row_key_encoding.*expected one of escaped, legacy"):
        settings_from_options(Options({**options, "row_key_encoding": "v1"}), schema)
