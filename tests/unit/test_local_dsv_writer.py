"""The embedded server's schemaful DSV writer (``spyt_queue/local/formats.py``), without a server: doubles printed
as YTsaurus's ``WriteDouble`` prints them and values escaped so that the reader's unescaping gives them back."""

from __future__ import annotations

import random
import re
import struct

import pytest

from spyt_queue.local.errors import YtError
from spyt_queue.local.formats import Format, _schemaful_dsv, format_double

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
