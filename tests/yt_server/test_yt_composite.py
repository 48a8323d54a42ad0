"""Conformance: composite (``type_v3``) column types of dynamic tables.

Sources: ``yt/docs/en/_includes/user-guide/storage/data-types.md`` (schema forms of every type, "Representing
compound types in formats" / YSON: named struct representation is the default, ``complex_type_mode=positional``
the alternative; dict as a list of ``[key; value]``; variant as ``[alternative; value]``; decimal as a binary
string), ``yt/yt/client/table_client/schema_serialization_helpers.cpp`` (``type_v3`` wins, ``type`` and
``required`` must agree with it, a required ``yson`` column is refused, ``@schema`` carries ``type`` = the v1
cast, ``required`` and ``type_v3``), ``logical_type.cpp`` (``CastToV1Type``: composite -> ``any``, decimal ->
``string``, tagged transparent), ``yt/yt/client/formats/format.cpp`` (input: ``TTableParserAdapter`` reads
``complex_type_mode``, default ``named``), ``yt/yt/client/complex_types/yson_format_conversion.cpp`` (named
input: a struct must be a map, unknown or absent non-optional members fail; positional input: a list),
``yt/yt/client/formats/schemaful_writer.cpp`` (dynamic-table output converts composite columns with a default
``TYsonConverterConfig``, i.e. named structs, whatever the output format asks), ``validate_logical_type.cpp``
(shape checks, error ``SchemaViolation`` 307, descriptions such as ``tags.<list-element>``).
"""

from __future__ import annotations

import pytest
import yt.wrapper as yw
import yt.yson as yson
from conformance import create_producer, create_queue, create_sorted_table, insert, pull, select
from yt.wrapper.errors import YtResponseError

SCHEMA_VIOLATION = 307  # NTableClient::EErrorCode::SchemaViolation

STRUCT = {
    "type_name": "struct",
    "members": [{"name": "x", "type": "int64"}, {"name": "y", "type": {"type_name": "optional", "item": "double"}}],
}
POSITIONAL = yw.YsonFormat(attributes={"complex_type_mode": "positional"})


def one_column_queue(yt, yt_root, type_v3, name="v"):
    return create_queue(yt, f"{yt_root}/q", schema=[{"name": name, "type_v3": type_v3}])


def round_trip(yt, yt_root, type_v3, values, **insert_kwargs):
    path = one_column_queue(yt, yt_root, type_v3)
    insert(yt, path, [{"v": v} for v in values], **insert_kwargs)
    return [row["v"] for row in pull(yt, path, 0)]


def rejected(yt, path, rows, **kwargs) -> YtResponseError:
    with pytest.raises(YtResponseError) as info:
        insert(yt, path, rows, **kwargs)
    assert info.value.contains_code(SCHEMA_VIOLATION), str(info.value)
    return info.value


def decimal_bytes(digits: int, precision: int) -> bytes:
    """The binary decimal of data-types.md: big-endian, width by precision, most significant bit inverted."""
    size = 4 if precision <= 9 else 8 if precision <= 18 else 16
    return (digits + (1 << (size * 8 - 1))).to_bytes(size, "big")


# ----------------------------------------------------------------------------------------------------------------
# Schema


def test_schema_round_trip_reports_v1_type_required_and_type_v3(yt, yt_root):
    """``get @schema`` returns every column with ``type`` (composite types cast to ``any``, decimal to
    ``string``, tagged transparent), ``required`` (false only for optional/null types) and ``type_v3``."""
    decimal = {"type_name": "decimal", "precision": 10, "scale": 2}
    tagged = {"type_name": "tagged", "tag": "image/svg", "item": {"type_name": "optional", "item": "string"}}
    nested_optional = {"type_name": "optional", "item": {"type_name": "optional", "item": "bool"}}
    columns = [
        ("list", {"type_name": "list", "item": "string"}, "any", True),
        ("struct", STRUCT, "any", True),
        ("tuple", {"type_name": "tuple", "elements": [{"type": "double"}, {"type": "utf8"}]}, "any", True),
        ("dict", {"type_name": "dict", "key": "string", "value": "int32"}, "any", True),
        ("vstruct", {"type_name": "variant", "members": [{"name": "a", "type": "int8"}]}, "any", True),
        ("vtuple", {"type_name": "variant", "elements": [{"type": "uint16"}]}, "any", True),
        ("opt_list", {"type_name": "optional", "item": {"type_name": "list", "item": "int64"}}, "any", False),
        ("nested_optional", nested_optional, "any", False),
        ("opt_int", {"type_name": "optional", "item": "int64"}, "int64", False),
        ("flag", "bool", "boolean", True),
        ("day", "date", "date", True),
        ("blob", {"type_name": "optional", "item": "yson"}, "any", False),
        ("money", decimal, "string", True),
        ("tagged", tagged, "string", False),
        ("j", {"type_name": "optional", "item": "json"}, "json", False),
        ("u", {"type_name": "optional", "item": "uuid"}, "uuid", False),
        ("d32", {"type_name": "optional", "item": "date32"}, "date32", False),
    ]
    path = create_queue(yt, f"{yt_root}/q", schema=[{"name": n, "type_v3": t} for n, t, _, _ in columns])
    schema = yt.get(path + "/@schema")
    assert [c["name"] for c in schema] == [n for n, _, _, _ in columns]
    for column, (name, type_v3, v1, required) in zip(schema, columns, strict=True):
        assert (column["type"], column["required"], column["type_v3"]) == (v1, required, type_v3), name


def test_old_style_type_and_required_map_to_type_v3(yt, yt_root):
    """``type`` + ``required`` keep working; ``required=%false`` is ``optional<T>`` in ``type_v3``."""
    schema = [
        {"name": "a", "type": "string"},
        {"name": "b", "type": "int64", "required": True},
        {"name": "c", "type": "boolean"},
        {"name": "d", "type": "any"},
    ]
    path = create_queue(yt, f"{yt_root}/q", schema=schema)
    assert [(c["type"], c["required"], c["type_v3"]) for c in yt.get(path + "/@schema")] == [
        ("string", False, {"type_name": "optional", "item": "string"}),
        ("int64", True, "int64"),
        ("boolean", False, {"type_name": "optional", "item": "bool"}),
        ("any", False, {"type_name": "optional", "item": "yson"}),
    ]


def test_type_and_required_must_agree_with_type_v3(yt, yt_root):
    """Given together with ``type_v3``, ``type`` must be its v1 cast and ``required`` its nullability."""
    for column in (
        {"name": "a", "type": "string", "type_v3": "int64"},
        {"name": "a", "type": "int64", "required": False, "type_v3": "int64"},
        {"name": "a", "type": "string", "type_v3": {"type_name": "list", "item": "string"}},
    ):
        with pytest.raises(YtResponseError):
            yt.create("table", f"{yt_root}/bad", attributes={"dynamic": True, "schema": [column]})
    ok = {"name": "a", "type": "any", "required": True, "type_v3": {"type_name": "list", "item": "string"}}
    create_queue(yt, f"{yt_root}/ok", schema=[ok])


def test_required_yson_column_is_refused(yt, yt_root):
    """A non-optional ``yson`` column is "Column of type any cannot be required"."""
    with pytest.raises(YtResponseError):
        yt.create("table", f"{yt_root}/bad", attributes={"dynamic": True, "schema": [{"name": "a", "type_v3": "yson"}]})


def test_invalid_type_descriptions_are_refused(yt, yt_root):
    """Unknown type names, decimal precision outside [1, 35] and duplicate struct members are schema errors."""
    for type_v3 in (
        "int128",
        {"type_name": "decimal", "precision": 0, "scale": 0},
        {"type_name": "decimal", "precision": 5, "scale": 6},
        {"type_name": "struct", "members": [{"name": "a", "type": "int8"}, {"name": "a", "type": "int8"}]},
    ):
        with pytest.raises(YtResponseError):
            yt.create(
                "table", f"{yt_root}/bad", attributes={"dynamic": True, "schema": [{"name": "a", "type_v3": type_v3}]}
            )


# ----------------------------------------------------------------------------------------------------------------
# Round trips (insert, then pull)


def test_list_round_trip(yt, yt_root):
    """``list<T>`` is a YSON list; nested lists nest."""
    nested = {"type_name": "list", "item": {"type_name": "list", "item": "string"}}
    assert round_trip(yt, yt_root, nested, [[["a", "b"], []], []]) == [[["a", "b"], []], []]


def test_struct_named_input_returns_every_member_in_schema_order(yt, yt_root):
    """A struct is given as a map (named, the default); it reads back as a map with all members, an absent
    optional member as ``#``."""
    values = round_trip(yt, yt_root, STRUCT, [{"y": 2.5, "x": 1}, {"x": -5}])
    assert values == [{"x": 1, "y": 2.5}, {"x": -5, "y": None}]
    assert [list(v) for v in values] == [["x", "y"], ["x", "y"]]


def test_struct_positional_input_with_complex_type_mode_positional(yt, yt_root):
    """With ``<complex_type_mode=positional>`` input a struct is a list (trailing optional members may be
    left out); reads still return the named form (the dynamic-table writer ignores the format's mode)."""
    values = round_trip(yt, yt_root, STRUCT, [[1, 2.5], [7]], format=POSITIONAL)
    assert values == [{"x": 1, "y": 2.5}, {"x": 7, "y": None}]


def test_struct_as_list_is_refused_in_default_named_mode(yt, yt_root):
    """In the default named mode a struct must be a map."""
    path = one_column_queue(yt, yt_root, STRUCT)
    error = rejected(yt, path, [{"v": [1, 2.5]}])
    assert '"v"' in str(error)


def test_struct_unknown_or_missing_members_are_refused(yt, yt_root):
    """Named input: an unknown member fails, an absent non-optional member fails."""
    path = one_column_queue(yt, yt_root, STRUCT)
    assert "z" in str(rejected(yt, path, [{"v": {"x": 1, "z": 2}}]))
    assert "x" in str(rejected(yt, path, [{"v": {"y": 1.0}}]))
    rejected(yt, path, [{"v": []}], format=POSITIONAL)


def test_tuple_round_trip_and_length_check(yt, yt_root):
    """``tuple`` is a fixed-length list."""
    optional_string = {"type_name": "optional", "item": "string"}
    tuple_type = {"type_name": "tuple", "elements": [{"type": "int64"}, {"type": optional_string}]}
    assert round_trip(yt, yt_root, tuple_type, [[42, None], [-5, "minus five"]]) == [[42, None], [-5, "minus five"]]
    path = f"{yt_root}/q"
    rejected(yt, path, [{"v": [42]}])
    rejected(yt, path, [{"v": [42, "a", "b"]}])


def test_dict_round_trip_as_list_of_pairs(yt, yt_root):
    """``dict<K, V>`` is a list of ``[key; value]`` pairs, also with string keys (positional dict mode is
    the default); a YSON map is not a dict value."""
    dict_type = {"type_name": "dict", "key": "string", "value": "int32"}
    assert round_trip(yt, yt_root, dict_type, [[["k", 7], ["j", -1]], []]) == [[["k", 7], ["j", -1]], []]
    rejected(yt, f"{yt_root}/q", [{"v": {"k": 7}}])
    rejected(yt, f"{yt_root}/q", [{"v": [["k"]]}])


def test_variant_over_tuple_round_trip(yt, yt_root):
    """An unnamed variant is ``[index; value]``; an index outside the alternatives fails."""
    optional_utf8 = {"type_name": "optional", "item": "utf8"}
    variant = {"type_name": "variant", "elements": [{"type": "int64"}, {"type": optional_utf8}]}
    values = [[0, 42], [1, None], [1, "foo bar"]]
    assert round_trip(yt, yt_root, variant, values) == values
    rejected(yt, f"{yt_root}/q", [{"v": [2, 1]}])
    rejected(yt, f"{yt_root}/q", [{"v": [0, "not an int"]}])


def test_variant_over_struct_is_named_by_default(yt, yt_root):
    """A named variant is ``[name; value]`` on input and output; with positional input it is
    ``[index; value]``, read back named."""
    variant = {"type_name": "variant", "members": [{"name": "Foo", "type": "int64"}, {"name": "Bar", "type": "string"}]}
    assert round_trip(yt, yt_root, variant, [["Bar", "x"], ["Foo", 1]]) == [["Bar", "x"], ["Foo", 1]]
    path = f"{yt_root}/q"
    insert(yt, path, [{"v": [0, 5]}], format=POSITIONAL)
    assert pull(yt, path, 2)[0]["v"] == ["Foo", 5]
    rejected(yt, path, [{"v": ["Baz", 1]}])
    rejected(yt, path, [{"v": [0, 1]}])


def test_tagged_is_transparent(yt, yt_root):
    """``tagged`` does not change the representation of its item."""
    tagged = {"type_name": "tagged", "tag": "point", "item": STRUCT}
    assert round_trip(yt, yt_root, tagged, [{"x": 3}]) == [{"x": 3, "y": None}]


def test_optional_of_optional(yt, yt_root):
    """``optional<optional<T>>``: ``#`` is the outer null, ``[#]`` the inner one, ``[v]`` a value."""
    nested = {"type_name": "optional", "item": {"type_name": "optional", "item": "int64"}}
    assert round_trip(yt, yt_root, nested, [None, [None], [-42]]) == [None, [None], [-42]]
    rejected(yt, f"{yt_root}/q", [{"v": -42}])
    rejected(yt, f"{yt_root}/q", [{"v": []}])


def test_decimal_is_binary(yt, yt_root):
    """A ``decimal(p, s)`` value is its binary string (4 bytes up to precision 9); a wrong length or a value
    beyond the precision fails."""
    decimal = {"type_name": "decimal", "precision": 5, "scale": 4}
    raw = [decimal_bytes(31415, 5), decimal_bytes(-27182, 5)]
    assert raw == [b"\x80\x00\x7a\xb7", b"\x7f\xff\x95\xd2"]  # the examples of data-types.md
    values = round_trip(yt, yt_root, decimal, raw)
    assert [yson.get_bytes(v) for v in values] == raw
    rejected(yt, f"{yt_root}/q", [{"v": b"\x80\x00"}])
    rejected(yt, f"{yt_root}/q", [{"v": decimal_bytes(100000, 5)}])


def test_decimal_inside_composite(yt, yt_root):
    """Decimals nested in composite types are checked the same way."""
    type_v3 = {"type_name": "list", "item": {"type_name": "decimal", "precision": 12, "scale": 2}}
    raw = decimal_bytes(123456, 12)
    assert [[yson.get_bytes(x) for x in v] for v in round_trip(yt, yt_root, type_v3, [[raw]])] == [[raw]]
    rejected(yt, f"{yt_root}/q", [{"v": [decimal_bytes(1, 5)]}])


def test_dates_and_timestamps_are_integers(yt, yt_root):
    """``date`` is days, ``timestamp`` microseconds since the epoch (unsigned integers in YSON)."""
    schema = [{"name": "day", "type_v3": "date"}, {"name": "at", "type_v3": "timestamp"}]
    path = create_queue(yt, f"{yt_root}/q", schema=schema)
    insert(yt, path, [{"day": 19000, "at": 1_700_000_000_123_456}])
    row = pull(yt, path, 0)[0]
    assert (row["day"], row["at"]) == (19000, 1_700_000_000_123_456)
    rejected(yt, path, [{"day": 49673, "at": 0}])


def test_the_spark_composite_row(yt, yt_root):
    """The composite row of ``tests/yt/test_yt_stream.py`` is accepted and read back as written."""
    schema = [
        {"name": "tags", "type_v3": {"type_name": "list", "item": "string"}},
        {"name": "point", "type_v3": STRUCT},
        {"name": "attrs", "type_v3": {"type_name": "dict", "key": "string", "value": "int32"}},
        {"name": "maybe", "type_v3": {"type_name": "optional", "item": "int64"}},
        {"name": "day", "type_v3": "date"},
        {"name": "at", "type_v3": "timestamp"},
        {"name": "blob", "type_v3": {"type_name": "optional", "item": "yson"}},
    ]
    row = {
        "tags": ["a", "b"],
        "point": {"x": 1, "y": 2.5},
        "attrs": [["k", 7]],
        "maybe": None,
        "day": 19000,
        "at": 1_700_000_000_123_456,
        "blob": {"any": [1, "two"]},
    }
    path = create_queue(yt, f"{yt_root}/q", schema=schema)
    insert(yt, path, [row])
    assert {k: v for k, v in pull(yt, path, 0)[0].items() if not k.startswith("$")} == row
    assert {k: v for k, v in select(yt, f"* from [{path}]")[0].items() if not k.startswith("$")} == row


# ----------------------------------------------------------------------------------------------------------------
# Validation


def test_wrong_shape_is_a_schema_violation_naming_the_column(yt, yt_root):
    """A value of the wrong shape fails with 307; the message names the column and the nested field."""
    schema = [{"name": "tags", "type_v3": {"type_name": "list", "item": "string"}}]
    path = create_queue(yt, f"{yt_root}/q", schema=schema)
    error = rejected(yt, path, [{"tags": "a"}])
    assert '"tags"' in str(error)
    error = rejected(yt, path, [{"tags": ["a", 1]}])
    assert "tags.<list-element>" in str(error)
    assert pull(yt, path, 0) == []


def test_inner_integers_follow_the_yson_kind(yt, yt_root):
    """Inside composite values the YSON kind must match the physical type: ``uint64`` members take unsigned
    integers, ``double`` members doubles, and ranges of narrow integers are checked."""
    path = one_column_queue(
        yt, yt_root, {"type_name": "tuple", "elements": [{"type": "uint64"}, {"type": "double"}, {"type": "int8"}]}
    )
    insert(yt, path, [{"v": [yson.YsonUint64(1), 1.5, -128]}])
    assert pull(yt, path, 0)[0]["v"] == [1, 1.5, -128]
    rejected(yt, path, [{"v": [1, 1.5, 0]}])
    rejected(yt, path, [{"v": [yson.YsonUint64(1), 1, 0]}])
    rejected(yt, path, [{"v": [yson.YsonUint64(1), 1.5, 128]}])


def test_required_composite_column_needs_a_value(yt, yt_root):
    """A non-optional composite column is ``required``: null or an absent value fails; an optional one
    accepts null."""
    schema = [
        {"name": "tags", "type_v3": {"type_name": "list", "item": "string"}},
        {"name": "more", "type_v3": {"type_name": "optional", "item": {"type_name": "list", "item": "string"}}},
    ]
    path = create_queue(yt, f"{yt_root}/q", schema=schema)
    rejected(yt, path, [{"tags": None}])
    rejected(yt, path, [{"more": ["a"]}])
    insert(yt, path, [{"tags": [], "more": None}])
    assert pull(yt, path, 0)[0]["more"] is None


def test_producer_push_validates_composite_values(yt, yt_root):
    """``push_queue_producer`` rows are checked against the queue schema like ``insert_rows``."""
    path = create_queue(yt, f"{yt_root}/q", schema=[{"name": "point", "type_v3": STRUCT}])
    producer = create_producer(yt, f"{yt_root}/p")
    session = yt.create_queue_producer_session(producer, path, "s1")
    epoch = session["epoch"]
    yt.push_queue_producer(producer, path, "s1", epoch, [{"point": {"x": 1}, "$sequence_number": 0}])
    with pytest.raises(YtResponseError) as info:
        yt.push_queue_producer(producer, path, "s1", epoch, [{"point": {"y": 1.0}, "$sequence_number": 1}])
    assert info.value.contains_code(SCHEMA_VIOLATION)
    assert [row["point"] for row in pull(yt, path, 0)] == [{"x": 1, "y": None}]


# ----------------------------------------------------------------------------------------------------------------
# Sorted tables, select, data weight


def test_sorted_table_composite_values_lookup_and_select(yt, yt_root):
    """Sorted tables store composite values the same way: ``lookup_rows`` and ``select_rows`` return the
    named form."""
    schema = [
        {"name": "key", "type": "int64", "sort_order": "ascending"},
        {"name": "point", "type_v3": STRUCT},
        {"name": "tags", "type_v3": {"type_name": "optional", "item": {"type_name": "list", "item": "string"}}},
    ]
    path = create_sorted_table(yt, f"{yt_root}/t", schema=schema)
    insert(yt, path, [{"key": 1, "point": {"x": 1}, "tags": ["a"]}])
    insert(yt, path, [{"key": 2, "point": [2, 0.5]}], format=POSITIONAL)
    assert list(yt.lookup_rows(path, [{"key": 2}, {"key": 1}])) == [
        {"key": 2, "point": {"x": 2, "y": 0.5}, "tags": None},
        {"key": 1, "point": {"x": 1, "y": None}, "tags": ["a"]},
    ]
    assert [row["point"] for row in select(yt, f"point from [{path}]")] == [{"x": 1, "y": None}, {"x": 2, "y": 0.5}]
    with pytest.raises(YtResponseError) as info:
        insert(yt, path, [{"key": 3, "point": {"x": "no"}}])
    assert info.value.contains_code(SCHEMA_VIOLATION)


def test_cumulative_data_weight_counts_composite_values(yt, yt_root):
    """``$cumulative_data_weight`` grows by each row's data weight; a composite value weighs as much as
    its stored (positional) binary YSON."""
    schema = [{"name": "$cumulative_data_weight", "type": "int64"}, {"name": "point", "type_v3": STRUCT}]
    path = create_queue(yt, f"{yt_root}/q", schema=schema)
    insert(yt, path, [{"point": {"x": 1, "y": 2.5}}])
    weight = pull(yt, path, 0)[0]["$cumulative_data_weight"]
    # 1 for the row, the struct's positional binary YSON, 8 for the $cumulative_data_weight value itself.
    assert weight == 1 + len(yson.dumps([1, 2.5], yson_format="binary")) + 8
