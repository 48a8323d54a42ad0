"""``ytqueue produce``'s value rules at their boundaries (the command is tested in tests/cli/test_cli_produce.py)."""

from __future__ import annotations

import pytest
from yt.yson import YsonUint64

from spyt_queue.yt.produce import convert_value
from spyt_queue.yt.schema import YtColumn


def col(type_v3: object, required: bool = False) -> YtColumn:
    return YtColumn("c", type_v3 if required else {"type_name": "optional", "item": type_v3})


@pytest.mark.parametrize(
    ("type_name", "value", "expected"),
    [
        ("int64", 2**63 - 1, 2**63 - 1),
        ("int64", -(2**63), -(2**63)),
        ("int8", -128, -128),
        ("double", 3, 3.0),
        ("utf8", "é", "é"),
        ("json", {"a": [1, None]}, '{"a":[1,null]}'),
        ("date", "1970-01-02", 1),
        ("date32", "1969-12-31", -1),
        ("datetime", "1970-01-01T00:00:01+00:00", 1),
        ("timestamp", "1969-12-31T23:59:59.999999Z", -1),
        ("timestamp", "2026-01-31T14:00:00+02:00", 1769860800000000),
        ("timestamp64", 5, 5),
        ("yson", {"any": "thing"}, {"any": "thing"}),
    ],
)
def test_values_convert_exactly(type_name: str, value: object, expected: object) -> None:
    assert convert_value(value, col(type_name)) == expected


def test_unsigned_values_are_sent_as_uint64() -> None:
    converted = convert_value(2**64 - 1, col("uint64"))
    assert isinstance(converted, YsonUint64) and converted == 2**64 - 1


@pytest.mark.parametrize(
    ("type_name", "value", "fragment"),
    [
        ("int64", 2**63, "out of the range of int64"),
        ("uint64", -1, "out of the range of uint64"),
        ("int32", 1.5, "expected an integer (int32), got a number 1.5"),
        ("int32", True, "expected an integer (int32), got a boolean"),
        ("bool", 1, "expected true or false"),
        ("date", "31.01.2026", "expected a date YYYY-MM-DD"),
        ("timestamp", "2026-01-31 12:00", "has no UTC offset"),
        ("timestamp", [1], "expected an integer or ISO 8601 text"),
    ],
)
def test_values_that_do_not_fit_say_what_was_expected(type_name: str, value: object, fragment: str) -> None:
    with pytest.raises(ValueError) as raised:
        convert_value(value, col(type_name))
    assert fragment in str(raised.value)


def test_null_in_a_required_column_is_refused_and_allowed_in_an_optional_one() -> None:
    assert convert_value(None, col("int64")) is None
    with pytest.raises(ValueError, match="is required"):
        convert_value(None, col("int64", required=True))
