"""Unit tests of ``spyt_queue.local.types`` and the composite-column parts of ``spyt_queue.local.schema``."""

from __future__ import annotations

import pytest
import yt.yson as yson

from spyt_queue.local import types
from spyt_queue.local.errors import SCHEMA_VIOLATION, YtError
from spyt_queue.local.schema import TableSchema, row_data_weight, same_schema

STRUCT = {
    "type_name": "struct",
    "members": [{"name": "x", "type": "int64"}, {"name": "y", "type": {"type_name": "optional", "item": "double"}}],
}


def test_parse_type_normalises_bytes_and_simple_maps():
    raw = {b"type_name": b"list", b"item": {"type_name": "int64"}}
    assert types.parse_type(raw, "c") == {"type_name": "list", "item": "int64"}
    assert types.parse_type(b"utf8", "c") == "utf8"


@pytest.mark.parametrize(
    "raw",
    [
        "int128",
        {"type_name": "optional"},
        {"type_name": "variant", "members": [], "elements": []},
        {"type_name": "dict", "key": "yson", "value": "int64"},
        {"type_name": "tagged", "tag": "", "item": "int64"},
    ],
)
def test_parse_type_refuses_bad_descriptions(raw):
    with pytest.raises(YtError):
        types.parse_type(raw, "c")


@pytest.mark.parametrize(
    ("logical", "expected"),
    [
        ("int64", ("int64", True, False)),
        ("null", ("null", False, False)),
        ({"type_name": "optional", "item": "bool"}, ("boolean", False, False)),
        ({"type_name": "decimal", "precision": 3, "scale": 1}, ("string", True, False)),
        ({"type_name": "tagged", "tag": "t", "item": {"type_name": "optional", "item": "yson"}}, ("any", False, False)),
        ({"type_name": "optional", "item": {"type_name": "optional", "item": "int64"}}, ("any", False, True)),
        ({"type_name": "list", "item": "int64"}, ("any", True, True)),
        ({"type_name": "optional", "item": STRUCT}, ("any", False, True)),
    ],
)
def test_v1_info_is_cast_to_v1_type(logical, expected):
    assert types.v1_info(logical) == expected


def test_named_struct_converter_fills_absent_optional_members():
    convert = types.converter(STRUCT, "p", positional=False)
    assert convert({b"y": 1.5, b"x": 2}) == {b"x": 2, b"y": 1.5}
    assert convert({"x": 2}) == {b"x": 2, b"y": None}
    with pytest.raises(YtError, match='Field "x" is missing while parsing "p"'):
        convert({b"y": 1.0})
    with pytest.raises(YtError, match='Unknown field "z"'):
        convert({b"x": 1, b"z": 1})
    with pytest.raises(YtError) as info:
        convert([1, 2.0])
    assert info.value.code == SCHEMA_VIOLATION


def test_positional_struct_converter_accepts_short_lists():
    convert = types.converter(STRUCT, "p", positional=True)
    assert convert([1]) == {b"x": 1, b"y": None}
    with pytest.raises(YtError, match='struct ended before required field "x"'):
        convert([])
    with pytest.raises(YtError):
        convert({b"x": 1})


def test_variant_struct_converters():
    variant = {"type_name": "variant", "members": [{"name": "a", "type": "int64"}, {"name": "b", "type": "string"}]}
    assert types.converter(variant, "v", False)([b"b", b"s"]) == [b"b", b"s"]
    assert types.converter(variant, "v", True)([1, b"s"]) == [b"b", b"s"]
    with pytest.raises(YtError, match="Unknown variant field"):
        types.converter(variant, "v", False)([b"c", 1])
    with pytest.raises(YtError, match="exceeds number of variant elements"):
        types.converter(variant, "v", True)([2, 1])


def test_descriptions_name_nested_fields():
    logical = {"type_name": "dict", "key": "string", "value": {"type_name": "list", "item": "int32"}}
    with pytest.raises(YtError, match=r"attrs\.<value>\.<list-element>"):
        types.converter(logical, "attrs", False)([[b"k", [1, 1 << 40]]])
    with pytest.raises(YtError, match=r"expected \"uint64_value\", found \"int64_value\""):
        types.converter({"type_name": "list", "item": "uint8"}, "u", False)([1])
    assert types.converter({"type_name": "list", "item": "uint8"}, "u", False)([yson.YsonUint64(1)]) == [1]


def test_decimal_checks():
    types.check_decimal(b"\x80\x00\x7a\xb7", 5, 4, "d")
    types.check_decimal(((1 << 31) - 1 + (1 << 31)).to_bytes(4, "big"), 5, 4, "d")  # nan
    with pytest.raises(YtError, match="invalid length"):
        types.check_decimal(b"\x80", 5, 4, "d")
    with pytest.raises(YtError, match="out of range"):
        types.check_decimal((100000 + (1 << 31)).to_bytes(4, "big"), 5, 4, "d")


def test_positional_weight_and_row_data_weight():
    schema = TableSchema.parse([{"name": "p", "type_v3": STRUCT}, {"name": "s", "type": "string"}], dynamic=True)
    row = {b"p": {b"x": 1, b"y": 2.5}, b"s": b"abc"}
    expected = 1 + len(yson.dumps([1, 2.5], yson_format="binary")) + 3
    assert row_data_weight(row, [b"p", b"s"], schema.weighers) == expected
    assert row_data_weight({b"p": None, b"s": None}, [b"p", b"s"], schema.weighers) == 1


def test_schema_storage_round_trip_keeps_type_v3():
    raw = [
        {"name": "k", "type": "int64", "sort_order": "ascending"},
        {"name": "p", "type_v3": {"type_name": "tagged", "tag": "t", "item": STRUCT}},
        {"name": "m", "type_v3": {"type_name": "decimal", "precision": 10, "scale": 2}},
    ]
    schema = TableSchema.parse(raw, dynamic=True)
    stored = yson.loads(yson.dumps(schema.to_storage()))
    back = TableSchema.from_storage(stored)
    assert same_schema(schema, back)
    assert [c.to_yson() for c in back.columns] == [c.to_yson() for c in schema.columns]
    assert [c.check for c in back.columns] == ["int64", "composite", "decimal"]


def test_stored_schema_without_type_v3_still_loads():
    back = TableSchema.from_storage(
        {
            "strict": True,
            "unique_keys": False,
            "columns": [{"name": "a", "type": "string", "required": False, "sort_order": None}],
        }
    )
    assert back.columns[0].type_v3 == {"type_name": "optional", "item": "string"}


def test_composite_key_columns_are_refused():
    with pytest.raises(YtError, match="composite"):
        TableSchema.parse(
            [
                {"name": "k", "type_v3": {"type_name": "list", "item": "int64"}, "sort_order": "ascending"},
                {"name": "v", "type": "int64"},
            ],
            dynamic=True,
        )


def test_top_level_json_uuid_and_decimal_columns_are_checked():
    schema = TableSchema.parse(
        [
            {"name": "j", "type": "json"},
            {"name": "u", "type": "uuid"},
            {
                "name": "d",
                "type_v3": {"type_name": "optional", "item": {"type_name": "decimal", "precision": 3, "scale": 0}},
            },
        ],
        dynamic=True,
    )
    schema.validate_rows(
        [{b"j": b'{"a": 1}', b"u": b"0123456789abcdef", b"d": (5 + (1 << 31)).to_bytes(4, "big")}], "//t", ordered=True
    )
    for row in ({b"j": b"{"}, {b"u": b"short"}, {b"d": b"\x00"}):
        with pytest.raises(YtError) as info:
            schema.validate_rows([row], "//t", ordered=True)
        assert info.value.code == SCHEMA_VIOLATION
