"""The embedded server's schemaful DSV writer (``spyt_queue/local/formats.py``), without a server: doubles printed
as YTsaurus's ``WriteDouble`` prints them and values escaped so that the reader's unescaping gives them back."""

from __future__ import annotations

import random
import re
import struct

import pytest
import yt.yson as yson

from spyt_queue.local.errors import YtError
from spyt_queue.local.formats import (
    Format,
    _schemaful_dsv,
    _schemaful_dsv_columns,
    _schemaful_dsv_config,
    _schemaful_dsv_rows,
    format_double,
)

UNESCAPE = {b"t": b"\t", b"n": b"\n", b"r": b"\r", b"0": b"\0"}


def random_doubles(count: int) -> list[float]:
    rng = random.Random(7)
    values = [0.0, -0.0, 1e16, 1e-4, 9.999e-5, 1e21, 1e20, 1e-10, 1e-11, 5e-324, 1.7976931348623157e308, 100.0, -2.5]
    for _ in range(count):
        values.append(struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0])
        values.append(rng.random() * 10 ** rng.randint(-14, 25))
        values.append(float(rng.randint(-(10**12), 10**12)))
    return [v for v in values if v == v and abs(v) != float("inf")]


def test_doubles_round_trip_and_use_ytsaurus_notation() -> None:
    """Every finite double reads back exactly; decimal notation for exponents in [-10, 21), else ``d.ddde+XX``; a
    ``.`` is appended when the text has neither ``.`` nor ``e`` (``100.``)."""
    for value in random_doubles(20_000):
        text = format_double(value).decode()
        assert float(text) == value, (value, text)
        assert "." in text or "e" in text, text
        exponent = int(f"{abs(value):e}".split("e")[1]) if value else 0
        assert ("e" in text) == (not -10 <= exponent < 21), (value, text)
        if "e" not in text:
            assert not re.search(r"\.\d*0$", text), f"trailing zero in {text!r}"
    assert format_double(100.0) == b"100."
    assert format_double(-0.0) == b"-0."
    assert format_double(1e21) == b"1e+21"
    assert format_double(float("nan")) == b"nan."
    assert format_double(float("-inf")) == b"-inf."


def dsv(rows: list[dict], **attributes: object) -> bytes:
    return _schemaful_dsv(rows, Format("schemaful_dsv", {"columns": ["a", "b"], **attributes}))


def unescape(field: bytes) -> bytes:
    return re.sub(rb"\\(.)", lambda m: UNESCAPE.get(m.group(1), m.group(1)), field, flags=re.S)


def test_escaped_values_split_into_their_fields_and_unescape_to_the_original() -> None:
    rng = random.Random(11)
    alphabet = [b"\t", b"\n", b"\\", b"\r", b"\0", b"x", b"\xff", b"t", b"n"]
    rows = [
        {"a": b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))), "b": rng.randint(-5, 5)}
        for _ in range(2000)
    ]
    lines = dsv(rows).split(b"\n")
    assert lines[-1] == b"" and len(lines) == len(rows) + 1
    for row, line in zip(rows, lines[:-1], strict=True):
        first, second = split_fields(line)
        assert unescape(first) == row["a"] and int(second) == row["b"]


def split_fields(line: bytes) -> list[bytes]:
    """Split on unescaped tabs, reading escapes left to right (a ``\\\\`` before a tab does not escape it)."""
    fields, current, i = [], bytearray(), 0
    while i < len(line):
        if line[i : i + 1] == b"\\":
            current += line[i : i + 2]
            i += 2
        elif line[i : i + 1] == b"\t":
            fields.append(bytes(current))
            current = bytearray()
            i += 1
        else:
            current.append(line[i])
            i += 1
    fields.append(bytes(current))
    return fields


def test_missing_values_follow_the_missing_value_mode() -> None:
    rows = [{"a": "x", "b": 1}, {"a": None, "b": 2}, {"b": 3}]
    with pytest.raises(YtError, match='Column "a" is in schema but missing'):
        dsv(rows)
    assert dsv(rows, missing_value_mode="skip_row") == b"x\t1\n"
    assert dsv(rows, missing_value_mode="print_sentinel", missing_value_sentinel="\\N") == b"x\t1\n\\N\t2\n\\N\t3\n"
    assert dsv([], missing_value_mode="skip_row") == b""


# --------------------------------------------------------------------------------------------------------------
# The columnar writer against the row writer: the same bytes, or the same error, for every table


def written(rows: list, attributes: dict) -> tuple[str, bytes | str]:
    """What the server writes for ``rows`` (the columnar writer, falling back to the row writer), as
    ``("bytes", output)`` or ``("error", its text)``: the columnar writer at any row count, as for big tables."""
    try:
        return "bytes", _schemaful_dsv(rows, Format("schemaful_dsv", attributes), columnar_from=0)
    except Exception as error:  # the comparison covers every error, of any type
        return "error", f"{type(error).__name__}: {error}"


def reference(rows: list, attributes: dict) -> tuple[str, bytes | str]:
    """What the row writer alone writes for ``rows``."""
    try:
        return "bytes", _schemaful_dsv_rows(rows, _schemaful_dsv_config(attributes))
    except Exception as error:
        return "error", f"{type(error).__name__}: {error}"


BYTES_ALPHABET = [b"\t", b"\n", b"\\", b"\r", b"\0", b"=", b"x", b"\xff", b"\xc3", b"t", b"n", b"N", b'"', b" "]
TEXT_ALPHABET = ["\t", "\n", "\\", "\r", "=", "é", "日", "x", "\U0001f600", '"']


def fuzzed_value(rng: random.Random, kind: str) -> object:
    """A value of ``kind`` as the server holds it (rows decoded from binary YSON)."""
    if kind == "bytes":
        return b"".join(rng.choice(BYTES_ALPHABET) for _ in range(rng.randint(0, 10)))
    if kind == "str":
        return "".join(rng.choice(TEXT_ALPHABET) for _ in range(rng.randint(0, 6)))
    if kind == "int":
        return rng.choice([0, -1, 1, 2**63 - 1, -(2**63), rng.randint(-(2**63), 2**63 - 1), rng.randint(-9, 9)])
    if kind == "uint":
        return yson.YsonUint64(rng.choice([0, 2**64 - 1, 2**63, rng.randint(0, 2**64 - 1)]))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float":
        return rng.choice([*random_doubles(3), float("nan"), float("inf"), float("-inf"), -0.0, 1e21, 1e-11])
    raise AssertionError(kind)


KINDS = ["bytes", "str", "int", "uint", "bool", "float"]


def fuzzed_table(rng: random.Random, rows: int, null_share: float) -> tuple[list[dict], list[str]]:
    """Rows with bytes keys over columns of random kinds, some values null (``None``, YSON entity) or missing."""
    kinds = [rng.choice(KINDS) for _ in range(rng.randint(1, 5))]
    names = [f"c{i}" for i in range(len(kinds))]
    table = []
    for _ in range(rows):
        row: dict = {}
        for name, kind in zip(names, kinds, strict=True):
            roll = rng.random()
            if roll < null_share / 3:
                continue  # missing
            if roll < 2 * null_share / 3:
                row[name.encode()] = None
            elif roll < null_share:
                row[name.encode()] = yson.YsonEntity()
            else:
                row[name.encode()] = fuzzed_value(rng, kind)
        table.append(row)
    return table, names


MODES = [
    {"missing_value_mode": "print_sentinel", "missing_value_sentinel": "\\N"},
    {"missing_value_mode": "skip_row"},
    {"missing_value_mode": "fail"},
    {"missing_value_mode": "print_sentinel"},
]


def test_the_columnar_writer_writes_the_row_writers_bytes_on_fuzzed_tables() -> None:
    """Every column kind, nulls of both forms and missing columns in each missing-value mode, escapes, non-UTF-8
    bytes, big integers, doubles' exact text: the server's output is the row writer's, byte for byte."""
    rng = random.Random(35)
    columnar = 0
    for case in range(400):
        null_share = rng.choice([0.0, 0.0, 0.05, 0.3])
        table, names = fuzzed_table(rng, rng.randint(1, 60), null_share)
        attributes = {"columns": names, **MODES[case % len(MODES)]}
        assert written(table, attributes) == reference(table, attributes), (table, attributes)
        columnar += _schemaful_dsv_columns(table, _schemaful_dsv_config(attributes)) is not None
    assert columnar > 200, f"the columnar writer wrote only {columnar} of 400 tables"


@pytest.mark.parametrize(
    "attributes",
    [
        {"enable_escaping": False},
        {"field_separator": ",", "record_separator": ";"},
        {"field_separator": "t"},
        # separators that are the escaped form of another: passes one after the other would escape their own output
        {"field_separator": "t", "record_separator": "\t"},
        {"field_separator": "\n", "record_separator": "n"},
        {"escaping_symbol": "=", "field_separator": "\n", "record_separator": "\t"},
        {"record_separator": "\xff"},
        {"field_separator": "\t", "record_separator": "\t"},
    ],
)
def test_the_columnar_writer_follows_every_separator_and_escaping_setting(attributes: dict) -> None:
    rng = random.Random(str(attributes))
    for _ in range(60):
        table, names = fuzzed_table(rng, rng.randint(1, 40), rng.choice([0.0, 0.2]))
        settings = {"columns": names, **attributes, **MODES[0]}
        assert written(table, settings) == reference(table, settings), (table, settings)


def test_tables_the_columnar_writer_leaves_to_the_row_writer_give_its_bytes_and_errors() -> None:
    """Mixed kinds in a column, composite values, integers beyond 64 bits, strings that are not UTF-8-encodable,
    ``str`` column names, rows holding a value under a later column than a composite one: each gives the row
    writer's output or error."""
    tables = [
        [{b"a": 1, b"b": b"x"}, {b"a": b"y", b"b": b"z"}],  # int and bytes in one column
        [{b"a": True, b"b": b"x"}, {b"a": 2, b"b": b"z"}],  # bool and int
        [{b"a": 1.5, b"b": b"x"}, {b"a": 2, b"b": b"z"}],  # float and int
        [{b"a": [1, 2], b"b": b"x"}],  # composite
        [{b"a": {b"k": 1}, b"b": None}],  # composite before a null
        [{b"a": None, b"b": [1]}],  # a null before a composite: skip_row skips the row, fail names the null
        [{b"a": 2**64, b"b": b"x"}],  # beyond uint64
        [{b"a": -(2**63) - 1, b"b": b"x"}],
        [{b"a": "\ud800", b"b": b"x"}],  # a lone surrogate
        [{"a": b"str key", "b": 1}, {b"a": b"bytes key", b"b": 2}],
        [{b"a": yson.YsonUint64(5), b"b": -1}, {b"a": 7, b"b": 2**63 - 1}],
        [{b"a": b"x"}, {b"b": 1}],
        [{b"a": yson.to_yson_type(1, attributes={"x": 1}), b"b": b"x"}],
    ]
    for table in tables:
        for mode in MODES:
            attributes = {"columns": ["a", "b"], **mode}
            assert written(table, attributes) == reference(table, attributes), (table, attributes)


def test_a_column_of_one_plain_kind_is_written_whole() -> None:
    """The fast path is taken for the tables the server serves (so the comparisons above cover it)."""
    rows = [{b"$row_index": i, b"id": i, b"payload": b"p\t\\\n" * (i % 3)} for i in range(100)]
    config = _schemaful_dsv_config({"columns": ["$row_index", "id", "payload"], **MODES[0]})
    assert _schemaful_dsv_columns(rows, config) == _schemaful_dsv_rows(rows, config)
    assert _schemaful_dsv_columns(rows, config) is not None


def test_an_empty_columns_list_gives_the_row_writers_bytes() -> None:
    """``columns=[]`` with more rows than the columnar writer starts at: the row writer writes every column of each
    row (an empty list is no list); the columnar writer leaves it to it (it failed with a TypeError, an Arrow scalar
    from joining no columns)."""
    rows = [{b"a": i, b"b": b"x\ty"} for i in range(300)]
    fmt = Format("schemaful_dsv", {"columns": []})
    assert _schemaful_dsv(rows, fmt, columnar_from=1) == _schemaful_dsv(rows, fmt, columnar_from=10**9)
