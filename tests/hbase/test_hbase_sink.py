"""The ``spyt_hbase`` sink on a real HBase, through the Thrift1 gateway and the Thrift2 gateway (``thrift_api=2``):
type mapping read back, event-time convergence, table errors; the per-column codec against the per-value one."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pytest
from pyspark.sql import types as T

from spyt_queue.errors import SpytQueueError
from spyt_queue.options import Options
from spyt_queue.sinks.hbase.codec import decode
from spyt_queue.sinks.hbase.sink import HBaseWriteCommit, settings_from_options, write_task

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc


def table_name() -> str:
    return f"sink_{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=[1, 2], ids=["thrift1", "thrift2"])
def api(request) -> int:
    """The gateway the sink writes through: 1 (``hbase thrift``, happybase) or 2 (``hbase thrift2``)."""
    return request.param


def gateway(hbase, api: int = 1) -> dict[str, str]:
    """The sink options naming one of the session HBase's gateways."""
    if api == 2:
        return {"thrift": hbase.thrift2_address, "thrift_api": "2"}
    return {"thrift": hbase.thrift_address}


def write(df, hbase, table: str, api: int = 1, **options) -> None:
    writer = df.write.format("spyt_hbase").option("table", table)
    options = {**gateway(hbase, api), **options}
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.mode("append").save()


def cells(hbase, table: str, **scan) -> dict[bytes, dict[bytes, bytes]]:
    conn = hbase.connection()
    try:
        return dict(conn.table(table).scan(**scan))
    finally:
        conn.close()


ALL_TYPES = T.StructType(
    [
        T.StructField("id", T.StringType()),
        T.StructField("s", T.StringType()),
        T.StructField("b", T.BinaryType()),
        T.StructField("flag", T.BooleanType()),
        T.StructField("i8", T.ByteType()),
        T.StructField("i16", T.ShortType()),
        T.StructField("i32", T.IntegerType()),
        T.StructField("i64", T.LongType()),
        T.StructField("f32", T.FloatType()),
        T.StructField("f64", T.DoubleType()),
        T.StructField("dec", T.DecimalType(10, 2)),
        T.StructField("day", T.DateType()),
        T.StructField("at", T.TimestampType()),
    ]
)


def test_every_type_reads_back_with_the_documented_mapping(spark, hbase, api) -> None:
    rows = [
        (
            "k1",
            "héllo",
            b"\x00\xff",
            True,
            -5,
            -300,
            -70000,
            -(2**40),
            1.5,
            -2.25,
            decimal.Decimal("12.50"),
            dt.date(1969, 12, 31),
            dt.datetime(2024, 2, 29, 12, 0, 0, 123456, tzinfo=UTC),
        ),
        ("k2", None, None, False, 0, 0, 0, 0, 0.0, 0.0, None, dt.date(2030, 1, 1), None),
    ]
    table = table_name()
    write(spark.createDataFrame(rows, ALL_TYPES), hbase, table, api, row_key="id", create_table="true")
    stored = cells(hbase, table)
    assert sorted(stored) == [b"k1", b"k2"]
    for row in rows:
        back = {
            field.name: decode(stored[row[0].encode()][b"d:" + field.name.encode()], field.dataType)
            for field in ALL_TYPES.fields[1:]
            if b"d:" + field.name.encode() in stored[row[0].encode()]
        }
        expected = {f.name: v for f, v in zip(ALL_TYPES.fields[1:], row[1:], strict=True) if v is not None}
        assert back == expected
    assert stored[b"k1"][b"d:i32"] == (-70000).to_bytes(4, "big", signed=True)  # HBase's Bytes.toBytes(int)
    assert stored[b"k1"][b"d:flag"] == b"\xff" and stored[b"k2"][b"d:flag"] == b"\x00"
    assert b"d:s" not in stored[b"k2"], "a null writes no cell"


def test_event_time_makes_replays_and_late_rows_converge(spark, hbase, api) -> None:
    """HBase keeps the newest version by timestamp: an older event written after a newer one lands underneath, and
    replaying a batch rewrites the same cells with the same versions."""
    schema = "user string, status string, at timestamp"
    table = table_name()
    newer = spark.createDataFrame([("u1", "paid", dt.datetime(2024, 1, 2, tzinfo=UTC))], schema)
    older = spark.createDataFrame([("u1", "created", dt.datetime(2024, 1, 1, tzinfo=UTC))], schema)
    options = {"row_key": "user", "timestamp_column": "at", "create_table": "true"}
    write(newer, hbase, table, api, **options)
    write(older, hbase, table, api, **options)  # late
    write(newer, hbase, table, api, **options)  # replay
    conn = hbase.connection()
    try:
        t = conn.table(table)
        assert t.row(b"u1")[b"d:status"] == b"paid"
        ts_newer = int(dt.datetime(2024, 1, 2, tzinfo=UTC).timestamp() * 1000)
        assert t.row(b"u1", include_timestamp=True)[b"d:status"] == (b"paid", ts_newer)
    finally:
        conn.close()


def test_row_key_from_columns_with_separator_and_salt(spark, hbase) -> None:
    table = table_name()
    df = spark.createDataFrame([("eu", 7, "x"), ("us", 12, "y")], "region string, n int, v string")
    write(df, hbase, table, row_key="region,n", row_key_separator="#", row_key_prefix="salt:16", create_table="true")
    keys = sorted(cells(hbase, table))
    import zlib

    assert keys == sorted(f"{zlib.crc32(k) % 16:02d}#".encode() + k for k in (b"eu#7", b"us#12"))
    assert all(b"d:v" in c and b"d:region" not in c for c in cells(hbase, table).values())


def test_column_mapping_to_other_families(spark, hbase) -> None:
    table = table_name()
    conn = hbase.connection()
    conn.create_table(table, {"d": {}, "meta": {}})
    conn.close()
    df = spark.createDataFrame([("k", "a", "b")], "id string, x string, y string")
    write(df, hbase, table, row_key="id", column_mapping="y=meta:why")
    assert cells(hbase, table) == {b"k": {b"d:x": b"a", b"meta:why": b"b"}}


def test_missing_table_and_missing_family_are_errors_naming_them(spark, hbase, api) -> None:
    df = spark.createDataFrame([("k", "a")], "id string, x string")
    table = table_name()
    with pytest.raises(Exception, match=f"'{table}' via Thrift2? .* does not exist.*create_table=true"):
        write(df, hbase, table, api, row_key="id")
    conn = hbase.connection()
    conn.create_table(table, {"other": {}})
    conn.close()
    with pytest.raises(Exception, match=f"'{table}'.*has no column family 'd'"):
        write(df, hbase, table, api, row_key="id")


def test_a_failed_mutation_fails_the_task_naming_table_and_row(spark, hbase, api) -> None:
    """What a task does when HBase refuses a put (here: the family vanished after the driver's check)."""
    table = table_name()
    conn = hbase.connection()
    conn.create_table(table, {"other": {}})
    conn.close()
    schema = T.StructType([T.StructField("id", T.StringType()), T.StructField("x", T.StringType())])
    settings = settings_from_options(Options({**gateway(hbase, api), "table": table, "row_key": "id"}), schema)
    import pyarrow as pa

    batch = pa.RecordBatch.from_pydict({"id": ["r1", "r2"], "x": ["a", "b"]})
    with pytest.raises(SpytQueueError, match=f"'{table}'.*from row key b'r1' failed after 0 row"):
        write_task(settings, iter([batch]))
    assert write_task(settings, iter([])) == HBaseWriteCommit()


def test_a_connection_the_gateway_closed_while_idle_is_reopened(hbase, api) -> None:
    """The gateways close connections idle longer than 60 s (``hbase.thrift.server.socket.read.timeout``): a Python
    worker's cached connection then fails its next call with end-of-file ("TSocket read 0 bytes"). The task sends
    again on a new connection instead of failing the query (puts are idempotent), and so does the table check."""
    import pyarrow as pa

    from spyt_queue.sinks.hbase.senders import check_table, connection

    from .helpers import close_from_the_gateway_side

    table = table_name()
    conn = hbase.connection()
    conn.create_table(table, {"d": {}})
    conn.close()
    schema = T.StructType([T.StructField("id", T.StringType()), T.StructField("x", T.StringType())])
    settings = settings_from_options(Options({**gateway(hbase, api), "table": table, "row_key": "id"}), schema)
    write_task(settings, iter([pa.RecordBatch.from_pydict({"id": ["r1"], "x": ["a"]})]))
    close_from_the_gateway_side(connection(settings).transport.sock)
    commit = write_task(settings, iter([pa.RecordBatch.from_pydict({"id": ["r2", "r3"], "x": ["b", "c"]})]))
    assert commit.rows == 2
    assert cells(hbase, table) == {b"r1": {b"d:x": b"a"}, b"r2": {b"d:x": b"b"}, b"r3": {b"d:x": b"c"}}
    close_from_the_gateway_side(connection(settings).transport.sock)
    check_table(settings)  # the driver's check before a batch, in a reused Python worker


def test_bad_options_name_the_option(spark, hbase) -> None:
    df = spark.createDataFrame([("k", [1])], "id string, xs array<int>")
    with pytest.raises(Exception, match="column 'xs' has type array<int>"):
        write(df, hbase, table_name(), row_key="id", create_table="true")
    with pytest.raises(Exception, match="row_key"):
        write(df.select("id"), hbase, table_name(), row_key="nope")
    with pytest.raises(Exception, match=r"not an option of the spyt_hbase sink.*row_key"):
        write(df.select("id"), hbase, table_name(), rowkey="id")


def test_the_wrong_gateway_kind_says_which_thrift_api_to_set(spark, hbase) -> None:
    """A Thrift1 client on the Thrift2 gateway (and the reverse) fails at the driver's table check with the fix."""
    df = spark.createDataFrame([("k", "a")], "id string, x string")
    with pytest.raises(Exception, match="Thrift2 gateway\\? then set thrift_api=2"):
        write(df, hbase, table_name(), thrift=hbase.thrift2_address, row_key="id", create_table="true")
    with pytest.raises(Exception, match="Thrift gateway\\? then set thrift_api=1"):
        write(df, hbase, table_name(), 2, thrift=hbase.thrift_address, row_key="id", create_table="true")


def test_thrift2_idl_not_found_says_where_to_get_it(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from spyt_queue.sinks.hbase import thrift2

    with pytest.raises(thrift2.Thrift2UnavailableError, match=r"thrift2_idl=.* neither the hbase-thrift jar"):
        thrift2.idl_path(str(tmp_path / "missing.jar"))
    monkeypatch.setattr(thrift2, "_REPO_LIBS", tmp_path)
    monkeypatch.delenv(thrift2.THRIFT_JAR_ENV, raising=False)
    with pytest.raises(thrift2.Thrift2UnavailableError, match=r"SPYT_HBASE_THRIFT_JAR.*org.apache.hbase:hbase-thrift"):
        thrift2.idl_path()


def test_per_column_encoding_equals_the_per_value_encoders() -> None:
    """The sink encodes whole Arrow columns (numpy for fixed widths); every value must get exactly the bytes of
    the documented per-value encoder, nulls staying None, whatever the Arrow timestamp unit."""
    import pyarrow as pa

    from spyt_queue.sinks.hbase.codec import encode_column, encoder_for, key_column, key_part, physical

    columns = {
        "s": (pa.array(["héllo", None, ""]), T.StringType()),
        "ls": (pa.array(["a", None], pa.large_string()), T.StringType()),
        "b": (pa.array([b"\x00\xff", None, b""]), T.BinaryType()),
        "flag": (pa.array([True, None, False]), T.BooleanType()),
        "i8": (pa.array([-128, None, 127], pa.int8()), T.ByteType()),
        "i16": (pa.array([-300, None, 32767], pa.int16()), T.ShortType()),
        "i32": (pa.array([-70000, None, 2**31 - 1], pa.int32()), T.IntegerType()),
        "i64": (pa.array([-(2**63), None, 2**63 - 1], pa.int64()), T.LongType()),
        "f32": (pa.array([1.5, None, -0.0], pa.float32()), T.FloatType()),
        "f64": (pa.array([-2.25, None, float("inf")], pa.float64()), T.DoubleType()),
        "dec": (pa.array([decimal.Decimal("12.50"), None], pa.decimal128(10, 2)), T.DecimalType(10, 2)),
        "day": (pa.array([dt.date(1969, 12, 31), None, dt.date(2030, 1, 1)]), T.DateType()),
    }
    for unit in ("s", "ms", "us", "ns"):
        values = [-1_500_000_001, None, 1_700_000_000_123]
        columns[f"at_{unit}"] = (pa.array(values, pa.timestamp(unit, tz="UTC")), T.TimestampType())
        columns[f"ntz_{unit}"] = (pa.array(values, pa.timestamp(unit)), T.TimestampNTZType())
    for name, (array, data_type) in columns.items():
        encode = encoder_for(name, data_type)
        expected = [None if v is None else encode(v) for v in physical(array)]
        assert encode_column(array, data_type) == expected, name
    for array in (pa.array(["a|b", "é"]), pa.array([b"\x00", b"k"]), pa.array([-5, 2**40]), pa.array([1], pa.int8())):
        assert key_column(array) == [key_part(v) for v in array.to_pylist()]
    assert key_column(pa.array([dt.date(2024, 1, 1)])) is None, "dates keep the per-value text"
