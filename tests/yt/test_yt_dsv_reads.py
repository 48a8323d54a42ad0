"""Columnar YT pulls (``read_format``): rows read through ``schemaful_dsv`` and ``pyarrow.csv`` are exactly the rows
read through YSON, row for row, on the embedded server (whose ``schemaful_dsv`` is YTsaurus's writer).

Random rows are generated from fixed seeds (no hypothesis in the environment): strings built from the bytes the
format treats specially (tab, newline, backslash, carriage return, NUL, the null sentinel ``\\N``, escape letters,
non-UTF-8 bytes), NULLs in every nullable column, and the extremes of each integer type."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pytest

from spyt_queue.errors import BadRecordError, DataLossError, OptionError
from spyt_queue.spark.partitions import DataLossPolicy
from spyt_queue.yt.admin import column, create_queue
from spyt_queue.yt.backend import YtQueueBackend
from spyt_queue.yt.client import YtConnection
from spyt_queue.yt.dsv_rows import DsvDecoder
from spyt_queue.yt.schema import YtSchema

#: Every flat type the DSV path carries, with a generator of non-null values (YSON-insertable Python values).
DAYS, DAYS64 = 49_673, 53_375_809
INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**63 - 1),  # Spark's bigint: larger values are bad records (tested apart)
    "date": (0, DAYS - 1),
    "datetime": (0, DAYS * 86400 - 1),
    "timestamp": (0, DAYS * 86400 * 10**6 - 1),
    "interval": (-(DAYS * 86400 * 10**6 - 1), DAYS * 86400 * 10**6 - 1),
    "date32": (-DAYS64, DAYS64 - 2),
    "datetime64": (-DAYS64 * 86400, (DAYS64 - 1) * 86400 - 1),
    "timestamp64": (-DAYS64 * 86400 * 10**6, (DAYS64 - 1) * 86400 * 10**6 - 1),
    "interval64": (-9223339708800000000, 9223339708800000000),
}
PIECES = [b"\t", b"\n", b"\\", b"\\\\", b"\x00", b"\\N", b"N", b"t", b"n", b"0", b"a", b" ", b"\xc3\xa9"]
PIECES += [b"\\t", b"\\n"]
RAW_BYTES = [b"\xff", b"\xfe\x80", b"\xc3"]


def tricky(rng: random.Random, utf8: bool, carriage_returns: bool) -> bytes:
    """A random string of the format's special pieces (``\\r`` only when asked: it sends the pull to YSON)."""
    pieces = PIECES + ([] if utf8 else RAW_BYTES) + ([b"\r", b"\r\n"] if carriage_returns else [])
    choice = rng.random()
    if choice < 0.05:
        return b""
    if choice < 0.1:
        return b"\\N"  # the sentinel itself, as a value
    return b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))


def double(rng: random.Random) -> float:
    return rng.choice(
        [
            rng.uniform(-1e6, 1e6),
            rng.random(),
            0.0,
            -0.0,
            42.0,
            5e-324,
            1.7976931348623157e308,
            -2.2250738585072014e-308,
            1e-7,
            1e21,
            1e20,
            123456789012345678901234.0,
            0.1,
            rng.getrandbits(53) * 2.0 ** rng.randint(-1100, 900),
        ]
    )


SCHEMA = [
    column("id", "int64", required=True),
    *(column(f"c_{name}", name) for name in INT_RANGES),
    column("c_double", "double"),
    column("c_float", "float"),
    column("c_bool", "boolean"),
    column("c_string", "string"),
    column("c_utf8", "utf8"),
    column("c_required", "string", required=True),
]


def random_rows(rng: random.Random, count: int, first_id: int, utf8: bool, carriage_returns: bool) -> list[dict]:
    rows = []
    for offset in range(count):
        row: dict[str, Any] = {"id": first_id + offset}
        for name, (low, high) in INT_RANGES.items():
            row[f"c_{name}"] = rng.choice([low, high, 0, rng.randint(low, high)])
        row["c_double"] = double(rng)
        row["c_float"] = rng.choice([0.1, -0.0, 1.5, float(rng.randint(-1000, 1000)) / 7, 3.4e38])
        row["c_bool"] = rng.random() < 0.5
        row["c_string"] = tricky(rng, utf8, carriage_returns)
        row["c_utf8"] = tricky(rng, True, carriage_returns)
        row["c_required"] = tricky(rng, utf8, carriage_returns)
        for key in list(row):
            if key not in ("id", "c_required") and rng.random() < 0.15:
                row[key] = None
        rows.append(row)
    return rows


def exact(value: Any) -> Any:
    """A value compared bit for bit (``-0.0`` is not ``0.0``; NaN equals itself)."""
    if isinstance(value, float):
        return ("float", value.hex())
    return value


def storage(array: pa.Array) -> pa.Array:
    """Dates and timestamps as their integers (Python's ``date`` and ``datetime`` do not reach YT's 64-bit range)."""
    if pa.types.is_date32(array.type):
        return array.view(pa.int32())
    if pa.types.is_timestamp(array.type):
        return array.view(pa.int64())
    return array


def exact_rows(batches: Iterable[pa.RecordBatch]) -> list[dict[str, Any]]:
    rows = []
    for batch in batches:
        columns = {name: storage(batch.column(name)).to_pylist() for name in batch.schema.names}
        rows.extend({k: exact(v[i]) for k, v in columns.items()} for i in range(batch.num_rows))
    return rows


def read(proxy: str, queue: str, read_format: str, start: int, end: int, **options: Any) -> tuple[list, dict]:
    options = dict(options)
    pull_batch_rows = options.pop("pull_batch_rows", 37)
    backend = YtQueueBackend(YtConnection(proxy), queue, None, read_format=read_format, **options)
    backend.pull_batch_rows = pull_batch_rows
    backend.schema()
    batches = list(backend.read_range("0", start, end, DataLossPolicy(True)))
    return exact_rows(batches), backend.pull_counts


def both(proxy: str, queue: str, start: int, end: int, **options: Any) -> tuple[list, dict]:
    """Rows of ``[start, end)`` read with read_format=yson and =dsv: asserted equal; (rows, the DSV reader's pulls)."""
    yson_rows, yson_pulls = read(proxy, queue, "yson", start, end, **options)
    dsv_rows, dsv_pulls = read(proxy, queue, "dsv", start, end, **options)
    assert yson_pulls["dsv"] == 0
    assert len(dsv_rows) == len(yson_rows) == end - start
    for yson_row, dsv_row in zip(yson_rows, dsv_rows, strict=True):
        assert dsv_row == yson_row
    return yson_rows, dsv_pulls


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("binary_strings", [False, True])
def test_random_rows_read_alike_through_dsv_and_yson(yt, yt_proxy, yt_root, seed, binary_strings) -> None:
    rng = random.Random(seed)
    queue = f"{yt_root}/queue"
    create_queue(yt, queue, SCHEMA)
    rows = random_rows(rng, 400, 0, utf8=not binary_strings, carriage_returns=False)
    yt.insert_rows(queue, rows)

    read_rows, pulls = both(yt_proxy, queue, 0, 400, binary_strings=binary_strings, include_service_columns=True)

    assert pulls["dsv"] == math.ceil(400 / 37) and pulls["dsv_redone"] == 0 and pulls["yson"] == 0
    assert [r["__spyt_streaming_src_row_index"] for r in read_rows] == list(range(400))
    strings = [r["c_string"] for r in read_rows]
    expected = [r["c_string"] for r in rows]
    if not binary_strings:
        expected = [None if s is None else s.decode() for s in expected]
    assert strings == expected  # and the YSON path is right too
    assert sum(1 for r in rows if r["c_string"] is not None and b"\t" in r["c_string"]) > 10
    assert sum(1 for r in read_rows if r["c_string"] is None) > 10
    assert sum(1 for r in read_rows if r["c_string"] == ("\\N" if not binary_strings else b"\\N")) > 3


@pytest.mark.parametrize("seed", [4, 5])
def test_pulls_with_a_raw_carriage_return_are_read_in_yson(yt, yt_proxy, yt_root, seed) -> None:
    """``pyarrow.csv`` ends a line at a raw ``\\r``: a pull holding one is re-read in YSON, the others stay DSV."""
    rng = random.Random(seed)
    queue = f"{yt_root}/queue"
    create_queue(yt, queue, SCHEMA)
    plain = random_rows(rng, 200, 0, utf8=False, carriage_returns=False)
    plain[50]["c_required"] = b"ends the line with CR\r"  # pyarrow.csv would read CR LF as one line end
    plain[120]["c_string"] = b"ends with CR\r"
    plain[160]["c_required"] = b"\r\n"
    yt.insert_rows(queue, plain)

    _, pulls = both(yt_proxy, queue, 0, 200, binary_strings=True, pull_batch_rows=40)

    assert pulls == {"dsv": 2, "dsv_redone": 3, "yson": 3}

    yt.insert_rows(queue, random_rows(rng, 200, 200, utf8=False, carriage_returns=True))
    both(yt_proxy, queue, 150, 400, binary_strings=True)


def test_values_dsv_does_not_print_exactly_are_read_in_yson(yt, yt_proxy, yt_root) -> None:
    """Infinities and NaN (``inf.``, ``nan.``: a NaN's sign and payload are not in the text) go through YSON."""
    queue = f"{yt_root}/queue"
    create_queue(yt, queue, [column("id", "int64"), column("d", "double")])
    yt.insert_rows(queue, [{"id": 0, "d": 1.0}, {"id": 1, "d": float("inf")}, {"id": 2, "d": -float("inf")}])
    yt.insert_rows(queue, [{"id": 3, "d": 2.0}, {"id": 4, "d": float("nan")}, {"id": 5, "d": 3.0}])

    rows, pulls = both(yt_proxy, queue, 0, 6, pull_batch_rows=3)

    assert pulls == {"dsv": 0, "dsv_redone": 2, "yson": 2}
    assert [r["d"] for r in rows][:3] == [exact(1.0), exact(float("inf")), exact(-float("inf"))]
    rows, pulls = both(yt_proxy, queue, 0, 1)
    assert pulls == {"dsv": 1, "dsv_redone": 0, "yson": 0}


def test_bad_records_are_reported_alike(yt, yt_proxy, yt_root) -> None:
    """A uint64 above Spark's bigint and invalid UTF-8 in a Spark string column: DSV hands the pull to YSON, which
    names the row as it always has."""
    for name, type_, value, expected in [
        ("big", "uint64", 2**64 - 1, "column 'v' holds 18446744073709551615"),
        ("utf", "string", b"ok\xff", "Use binary_strings=true"),
    ]:
        queue = f"{yt_root}/{name}"
        create_queue(yt, queue, [column("v", type_)])
        yt.insert_rows(queue, [{"v": None}, {"v": value}])
        messages = []
        for read_format in ("yson", "dsv"):
            with pytest.raises(BadRecordError) as caught:
                read(yt_proxy, queue, read_format, 0, 2)
            messages.append(str(caught.value))
        assert messages[0] == messages[1] and "Row 1 of tablet 0" in messages[0] and expected in messages[0]


def test_trimmed_rows_are_detected_through_dsv(yt, yt_proxy, yt_root) -> None:
    queue = f"{yt_root}/queue"
    create_queue(yt, queue, [column("id", "int64"), column("s", "string")])
    yt.insert_rows(queue, [{"id": i, "s": f"\\{i}\t"} for i in range(10)])
    yt.trim_rows(queue, 0, 4)
    for read_format in ("yson", "dsv"):
        backend = YtQueueBackend(YtConnection(yt_proxy), queue, None, read_format=read_format)
        with pytest.raises(DataLossError, match=r"rows \[2, 4\) of tablet 0 .* removed"):
            list(backend.read_range("0", 2, 10, DataLossPolicy(True)))
        rows = [r for b in backend.read_range("0", 2, 10, DataLossPolicy(False)) for r in b.to_pylist()]
        assert rows == [{"id": i, "s": f"\\{i}\t"} for i in range(4, 10)]
        assert backend.pull_counts[read_format] > 0


def test_auto_reads_dsv_when_every_column_is_flat_and_dsv_refuses_other_schemas(yt, yt_proxy, yt_root) -> None:
    flat, mixed = f"{yt_root}/flat", f"{yt_root}/mixed"
    create_queue(yt, flat, [column("id", "int64"), column("s", "string")])
    create_queue(yt, mixed, [column("id", "int64"), column("payload", "any")])
    yt.insert_rows(flat, [{"id": 1, "s": "x"}])
    yt.insert_rows(mixed, [{"id": 1, "payload": {"a": [1]}}])

    assert read(yt_proxy, flat, "auto", 0, 1)[1] == {"dsv": 1, "dsv_redone": 0, "yson": 0}
    assert read(yt_proxy, mixed, "auto", 0, 1)[1] == {"dsv": 0, "dsv_redone": 0, "yson": 1}
    with pytest.raises(OptionError, match=r"'read_format'.*column\(s\) 'payload'.*use read_format=auto"):
        YtQueueBackend(YtConnection(yt_proxy), mixed, None, read_format="dsv").schema()


# -- the decoder alone, on text the writer could not have produced --------------------------------------------


def decoder() -> DsvDecoder:
    schema = YtSchema.parse([{"name": "s", "type": "string"}, {"name": "i", "type": "int32"}])
    return DsvDecoder(schema, pa.schema([pa.field("s", pa.binary()), pa.field("i", pa.int32())]))


@pytest.mark.parametrize(
    "text",
    [
        b"0\ta\\x\t1\n",  # an escape the writer never writes
        b"0\ta\\\t1\n",  # a lone backslash at the end of a field
        b"0\ta\r\t1\n",  # a raw carriage return
        b"0\ta\t2147483648\n",  # out of int32
        b"0\ta\n",  # a missing field
        b"\\N\ta\t1\n",  # a row without $row_index
    ],
)
def test_decoder_hands_back_what_it_cannot_read_exactly(text: bytes) -> None:
    assert decoder().decode(text) is None


def test_decoder_unescapes_pairs_from_the_left() -> None:
    indexes, batch = decoder().decode(b"7\t\\\\\\t\\\\n\\\\\t\\N\n8\t\\\\N\t-3\n")  # type: ignore[misc]
    assert indexes.tolist() == [7, 8]
    assert batch.to_pylist() == [{"s": b"\\\t\\n\\", "i": None}, {"s": b"\\N", "i": -3}]


def test_decoder_hands_back_a_null_in_a_required_column() -> None:
    schema = YtSchema.parse([{"name": "s", "type": "string", "required": True}])
    dsv = DsvDecoder(schema, pa.schema([pa.field("s", pa.string(), nullable=False)]))
    assert dsv.decode(b"0\t\\N\n") is None
    assert dsv.decode(b"0\t\\\\N\n")[1].to_pylist() == [{"s": "\\N"}]  # type: ignore[index]


@pytest.mark.parametrize("read_format", ["yson", "dsv"])
def test_a_range_trimmed_past_its_end_yields_nothing(yt, yt_proxy, yt_root, read_format) -> None:
    """Rows [0, 4) trimmed to 6: the pull answers rows from 6 on; none of them belongs to the range."""
    queue = f"{yt_root}/queue"
    create_queue(yt, queue, [column("id", "int64")])
    yt.insert_rows(queue, [{"id": i} for i in range(10)])
    yt.trim_rows(queue, 0, 6)
    backend = YtQueueBackend(YtConnection(yt_proxy), queue, None, read_format=read_format)
    with pytest.raises(DataLossError, match=r"rows \[0, 4\) of tablet 0 .* removed"):
        list(backend.read_range("0", 0, 4, DataLossPolicy(True)))
    assert [b.num_rows for b in backend.read_range("0", 0, 4, DataLossPolicy(False))] == []


def test_auto_goes_on_in_yson_when_the_cluster_refuses_the_dsv_pull(yt, yt_proxy, yt_root, monkeypatch) -> None:
    """A proxy that answers the DSV pull with an error (here: a format config it refuses) is read in YSON by ``auto``
    from then on; ``dsv`` reports the error."""
    from yt.wrapper import SchemafulDsvFormat
    from yt.wrapper.errors import YtResponseError

    import spyt_queue.yt.backend as backend_module

    queue = f"{yt_root}/queue"
    create_queue(yt, queue, [column("id", "int64")])
    yt.insert_rows(queue, [{"id": i} for i in range(5)])
    monkeypatch.setattr(backend_module, "dsv_format", lambda schema: SchemafulDsvFormat(columns=["id", "id"]))

    rows, pulls = read(yt_proxy, queue, "auto", 0, 5, pull_batch_rows=2)
    assert [r["id"] for r in rows] == [0, 1, 2, 3, 4]
    assert pulls == {"dsv": 0, "dsv_redone": 0, "yson": 3}
    with pytest.raises(YtResponseError, match="Duplicate column"):
        read(yt_proxy, queue, "dsv", 0, 5)
