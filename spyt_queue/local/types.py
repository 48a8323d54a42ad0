"""Logical (``type_v3``) column types: parsing, the v1 ``type``/``required`` cast, value checks of composite types.

Types are kept in YT's serialized ``type_v3`` form: a string for a simple type, else a map with ``type_name``
(``optional``/``list``/``tagged``: ``item``; ``struct``: ``members`` of ``{name; type}``; ``tuple``: ``elements``
of ``{type}``; ``variant``: ``members`` or ``elements``; ``dict``: ``key``/``value``; ``decimal``:
``precision``/``scale``), exactly what ``get @schema`` returns.

Composite values are checked and normalised once, at insert, into the form a real cluster returns from
``pull_queue``/``select_rows``/``lookup_rows`` by default (the HTTP proxy's ``TSchemafulWriter`` converts with a
default ``TYsonConverterConfig``: ``complex_type_mode=named``): a struct is a map with every member in schema
order (absent optional members as ``#``), a variant over struct is ``[name; value]``, a variant over tuple is
``[index; value]``, a dict is a list of ``[key; value]`` pairs, a decimal is its binary string. Reads then
return the stored bytes unchanged. Checks follow ``validate_logical_type.cpp`` (token kinds are strict inside
composite values: an ``uint64`` member needs an unsigned YSON integer, a ``double`` member a YSON double)
and ``yson_format_conversion.cpp`` (named input: a struct must be a map, unknown members fail, absent
non-optional members fail; positional input: a struct is a list, possibly without trailing optional members).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import yt.yson as yson

from spyt_queue.local.errors import SCHEMA_VIOLATION, YtError
from spyt_queue.local.formats import dumps_value

SCHEMA_ERROR = 314

# v3 simple type names; the v1 ``type`` name differs only for these two.
SIMPLE_V3 = frozenset(
    {
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "double",
        "float",
        "bool",
        "string",
        "utf8",
        "json",
        "uuid",
        "yson",
        "null",
        "void",
        "date",
        "datetime",
        "timestamp",
        "interval",
        "date32",
        "datetime64",
        "timestamp64",
        "interval64",
    }
)
V1_OF_V3 = {"bool": "boolean", "yson": "any"}
V3_OF_V1 = {v: k for k, v in V1_OF_V3.items()}
SIMPLE_V1 = frozenset(V1_OF_V3.get(name, name) for name in SIMPLE_V3)

_DAYS = 49673
_DAYS64 = 53375809
INT_RANGES = {
    "int64": (-(1 << 63), (1 << 63) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int8": (-128, 127),
    "uint64": (0, (1 << 64) - 1),
    "uint32": (0, (1 << 32) - 1),
    "uint16": (0, 65535),
    "uint8": (0, 255),
    "date": (0, _DAYS - 1),
    "datetime": (0, _DAYS * 86400 - 1),
    "timestamp": (0, _DAYS * 86400 * 10**6 - 1),
    "interval": (-(_DAYS * 86400 * 10**6 - 1), _DAYS * 86400 * 10**6 - 1),
    "date32": (-_DAYS64, _DAYS64 - 2),
    "datetime64": (-_DAYS64 * 86400, (_DAYS64 - 1) * 86400 - 1),
    "timestamp64": (-_DAYS64 * 86400 * 10**6, (_DAYS64 - 1) * 86400 * 10**6 - 1),
    "interval64": (-9223339708800000000, 9223339708800000000),
}
UNSIGNED_TYPES = frozenset({"uint64", "uint32", "uint16", "uint8", "date", "datetime", "timestamp"})
STRING_TYPES = frozenset({"string", "utf8", "json", "uuid"})

# ----------------------------------------------------------------------------------------------------------------
# Parsing


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return str.__str__(value)
    return None


def _fail(column: str, message: str) -> YtError:
    return YtError(f"Error validating column {column!r} in table schema: {message}", code=SCHEMA_ERROR)


def parse_type(raw: Any, column: str) -> Any:
    """A ``type_v3`` description (string or map) in its normalised serialized form; errors name the column."""
    name = _text(raw)
    if name is not None:
        if name not in SIMPLE_V3:
            raise _fail(column, f"unknown type {name!r}")
        return name
    if not isinstance(raw, dict):
        raise _fail(column, f"a type must be a string or a map, got {type(raw).__name__}")
    data = {_text(k): v for k, v in raw.items()}
    type_name = _text(data.get("type_name"))
    if type_name is None:
        raise _fail(column, '"type_name" is missing in a type description')
    if type_name in SIMPLE_V3:
        return type_name
    if type_name in ("optional", "list"):
        return {"type_name": type_name, "item": parse_type(_need(data, "item", column), column)}
    if type_name == "tagged":
        tag = _text(_need(data, "tag", column))
        if not tag:
            raise _fail(column, "tag is empty")
        return {"type_name": "tagged", "tag": tag, "item": parse_type(_need(data, "item", column), column)}
    if type_name == "dict":
        key = parse_type(_need(data, "key", column), column)
        if strip_tags(key) in ("yson", "json"):
            raise _fail(column, f'"<dict-key>" is of type {strip_tags(key)!r} that is not allowed in dict key')
        return {"type_name": "dict", "key": key, "value": parse_type(_need(data, "value", column), column)}
    if type_name == "decimal":
        precision, scale = data.get("precision"), data.get("scale")
        if not isinstance(precision, int) or not isinstance(scale, int) or isinstance(precision, bool):
            raise _fail(column, 'decimal needs integer "precision" and "scale"')
        if not 1 <= precision <= 35:
            raise _fail(column, f"Invalid decimal precision {precision}, precision must be in range [1, 35]")
        if not 0 <= scale <= precision:
            raise _fail(column, f"Invalid decimal scale {scale}, scale must be in range [0, {precision}]")
        return {"type_name": "decimal", "precision": int(precision), "scale": int(scale)}
    if type_name == "struct":
        return {"type_name": "struct", "members": _members(_need(data, "members", column), column)}
    if type_name == "tuple":
        return {"type_name": "tuple", "elements": _elements(_need(data, "elements", column), column)}
    if type_name == "variant":
        if ("members" in data) == ("elements" in data):
            raise _fail(column, 'variant must have exactly one of "members" and "elements"')
        if "members" in data:
            return {"type_name": "variant", "members": _members(data["members"], column)}
        return {"type_name": "variant", "elements": _elements(data["elements"], column)}
    raise _fail(column, f"unknown type {type_name!r}")


def _need(data: dict[Any, Any], key: str, column: str) -> Any:
    if key not in data:
        raise _fail(column, f'"{key}" is missing in a {_text(data.get("type_name"))} type description')
    return data[key]


def _members(raw: Any, column: str) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise _fail(column, '"members" must be a list')
    members: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        data = {_text(k): v for k, v in item.items()} if isinstance(item, dict) else {}
        name = _text(data.get("name"))
        if not name:
            raise _fail(column, f"Name of struct field #{index} is empty")
        if name in seen:
            raise _fail(column, f"Struct field name {name!r} is used twice")
        seen.add(name)
        members.append({"name": name, "type": parse_type(_need(data, "type", column), column)})
    return members


def _elements(raw: Any, column: str) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise _fail(column, '"elements" must be a list')
    elements = []
    for item in raw:
        data = {_text(k): v for k, v in item.items()} if isinstance(item, dict) else {}
        elements.append({"type": parse_type(_need(data, "type", column), column)})
    return elements


def optional_of(logical: Any) -> dict[str, Any]:
    """``optional<logical>``."""
    return {"type_name": "optional", "item": logical}


def strip_tags(logical: Any) -> Any:
    """The type under any ``tagged`` wrappers."""
    while isinstance(logical, dict) and logical["type_name"] == "tagged":
        logical = logical["item"]
    return logical


def is_nullable(logical: Any) -> bool:
    """Whether ``#`` is a value of the type (``IsNullable``)."""
    logical = strip_tags(logical)
    if isinstance(logical, str):
        return logical in ("null", "void")
    return logical["type_name"] == "optional"


def v1_info(logical: Any) -> tuple[str, bool, bool]:
    """``(v1 type name, required, composite)`` as ``CastToV1Type``/``IsV3Composite`` compute them."""
    logical = strip_tags(logical)
    if isinstance(logical, str):
        return V1_OF_V3.get(logical, logical), logical not in ("null", "void"), False
    kind = logical["type_name"]
    if kind == "decimal":
        return "string", True, False
    if kind == "optional":
        item = logical["item"]
        if is_nullable(item):
            return "any", False, True
        v1, _, composite = v1_info(item)
        return v1, False, composite
    return "any", True, True


def scalar_check(logical: Any) -> str:
    """The check of a non-composite column: the simple v3 name (``yson`` as ``any``) or ``decimal``."""
    logical = strip_tags(logical)
    if isinstance(logical, dict) and logical["type_name"] == "optional":
        logical = strip_tags(logical["item"])
    if isinstance(logical, dict):
        return "decimal"
    return V1_OF_V3.get(logical, logical)


def decimal_of(logical: Any) -> tuple[int, int]:
    """``(precision, scale)`` of a (possibly optional/tagged) decimal type."""
    logical = strip_tags(logical)
    if logical["type_name"] == "optional":
        logical = strip_tags(logical["item"])
    return logical["precision"], logical["scale"]


def has_named_form(logical: Any) -> bool:
    """Whether the type contains a struct or a variant over struct (named and positional forms differ)."""
    if isinstance(logical, str):
        return False
    kind = logical["type_name"]
    if kind in ("struct",) or (kind == "variant" and "members" in logical):
        return True
    if kind in ("optional", "list", "tagged"):
        return has_named_form(logical["item"])
    if kind == "dict":
        return has_named_form(logical["key"]) or has_named_form(logical["value"])
    if kind in ("tuple", "variant"):
        return any(has_named_form(e["type"]) for e in logical["elements"])
    return False


# ----------------------------------------------------------------------------------------------------------------
# Values

Converter = Callable[[Any], Any]


def _token(value: Any) -> str:
    if value is None or isinstance(value, yson.YsonEntity):
        return "entity_value"
    if isinstance(value, bool):
        return "boolean_value"
    if isinstance(value, yson.YsonUint64):
        return "uint64_value"
    if isinstance(value, int):
        return "int64_value"
    if isinstance(value, float):
        return "double_value"
    if isinstance(value, (bytes, str)):
        return "string_value"
    if isinstance(value, list):
        return "begin_list"
    if isinstance(value, dict):
        return "begin_map"
    return type(value).__name__


def violation(message: str) -> YtError:
    """A schema-violation (307) error; the caller adds ``table_path``/``column``."""
    return YtError(message, code=SCHEMA_VIOLATION)


def _unexpected(desc: str, expected: str, value: Any) -> YtError:
    return violation(f'Cannot parse {json.dumps(desc)}: expected "{expected}", found "{_token(value)}"')


def _is_null(value: Any) -> bool:
    return value is None or isinstance(value, yson.YsonEntity)


def decimal_size(precision: int) -> int:
    """Bytes of the binary representation of ``decimal(precision, _)``."""
    return 4 if precision <= 9 else 8 if precision <= 18 else 16 if precision <= 38 else 32


def check_decimal(value: bytes, precision: int, scale: int, desc: str) -> None:
    """``TDecimal::ValidateBinaryValue``: the length and the digit range (nan and ±inf allowed)."""
    size = decimal_size(precision)
    if len(value) != size:
        raise violation(
            f"Error validating field {json.dumps(desc)}: binary value of decimal({precision}, "
            f"{scale}) has invalid length: expected {size}, got {len(value)}"
        )
    bits = size * 8
    number = int.from_bytes(value, "big") - (1 << (bits - 1))
    limit = 10**precision - 1
    top = (1 << (bits - 1)) - 1
    if -limit <= number <= limit or number in (top, top - 1, -top + 1):
        return
    raise violation(
        f"Error validating field {json.dumps(desc)}: decimal value is out of range of decimal({precision}, {scale})"
    )


def check_json(value: bytes, desc: str) -> None:
    """A valid JSON text, no NaN or infinities (``ValidateSimpleLogicalType<Json>``)."""

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not allowed")

    try:
        json.loads(value.decode("utf-8"), parse_constant=constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise violation(f"Invalid JSON in {json.dumps(desc)}: {exc}") from None


def _simple(name: str, desc: str) -> Converter:
    if name in INT_RANGES:
        low, high = INT_RANGES[name]
        unsigned = name in UNSIGNED_TYPES
        expected = "uint64_value" if unsigned else "int64_value"

        def integer(value: Any) -> Any:
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or (isinstance(value, yson.YsonUint64) != unsigned)
            ):
                raise _unexpected(desc, expected, value)
            if not low <= value <= high:
                raise violation(
                    f"Cannot parse {json.dumps(desc)}: value {int(value)} is out of range of type "
                    f"{name!r} [{low}, {high}]"
                )
            return value

        return integer
    if name in ("double", "float"):

        def double(value: Any) -> Any:
            if not isinstance(value, float):
                raise _unexpected(desc, "double_value", value)
            return value

        return double
    if name == "bool":

        def boolean(value: Any) -> Any:
            if not isinstance(value, bool):
                raise _unexpected(desc, "boolean_value", value)
            return value

        return boolean
    if name in STRING_TYPES:

        def string(value: Any) -> Any:
            if isinstance(value, str):
                value = value.encode("utf-8")
            if not isinstance(value, bytes):
                raise _unexpected(desc, "string_value", value)
            if name == "utf8":
                try:
                    value.decode("utf-8")
                except UnicodeDecodeError:
                    raise violation(f"Cannot parse {json.dumps(desc)}: invalid UTF-8 string") from None
            elif name == "json":
                check_json(value, desc)
            elif name == "uuid" and len(value) != 16:
                raise violation(f"Cannot parse {json.dumps(desc)}: invalid uuid length {len(value)}, expected 16 bytes")
            return value

        return string
    if name in ("null", "void"):

        def null(value: Any) -> Any:
            if not _is_null(value):
                raise _unexpected(desc, "entity_value", value)
            return None

        return null

    def any_value(value: Any) -> Any:  # yson
        if _is_null(value):
            raise violation(f"Cannot parse {json.dumps(desc)}; unexpected entity value")
        return value

    return any_value


def converter(logical: Any, desc: str, positional: bool) -> Converter:
    """A function checking one input value of ``logical`` and returning its stored (named output) form.

    ``positional``: the input format's ``complex_type_mode=positional`` (structs as lists, struct variants by
    index); otherwise the default ``named`` input (structs as maps, struct variants by name).
    """
    if isinstance(logical, str):
        return _simple(logical, desc)
    kind = logical["type_name"]
    if kind == "tagged":
        return converter(logical["item"], desc + ".<tagged-element>", positional)
    if kind == "decimal":
        precision, scale = logical["precision"], logical["scale"]

        def decimal(value: Any) -> Any:
            if not isinstance(value, bytes):
                raise _unexpected(desc, "string_value", value)
            check_decimal(value, precision, scale, desc)
            return value

        return decimal
    if kind == "optional":
        item_type = logical["item"]
        item = converter(item_type, desc + ".<optional-element>", positional)
        if not is_nullable(item_type):
            return lambda value: None if _is_null(value) else item(value)

        def nested_optional(value: Any) -> Any:
            if _is_null(value):
                return None
            if not isinstance(value, list):
                raise _unexpected(desc, "begin_list", value)
            if not value:
                raise violation(f"Cannot parse {json.dumps(desc)}; empty yson")
            if len(value) > 1:
                raise _unexpected(desc, "end_list", value[1])
            return [item(value[0])]

        return nested_optional
    if kind == "list":
        item = converter(logical["item"], desc + ".<list-element>", positional)

        def list_value(value: Any) -> Any:
            if not isinstance(value, list):
                raise _unexpected(desc, "begin_list", value)
            return [item(v) for v in value]

        return list_value
    if kind == "dict":
        key = converter(logical["key"], desc + ".<key>", positional)
        val = converter(logical["value"], desc + ".<value>", positional)

        def dict_value(value: Any) -> Any:
            if not isinstance(value, list):
                raise _unexpected(desc, "begin_list", value)
            result = []
            for pair in value:
                if not isinstance(pair, list):
                    raise _unexpected(desc, "begin_list", pair)
                if len(pair) != 2:
                    raise (
                        _unexpected(desc, "end_list", pair[2])
                        if len(pair) > 2
                        else violation(f"Cannot parse {json.dumps(desc)}: a dict item must be a [key; value] pair")
                    )
                result.append([key(pair[0]), val(pair[1])])
            return result

        return dict_value
    if kind == "tuple":
        elements = [
            converter(e["type"], f"{desc}.<tuple-element-{i}>", positional) for i, e in enumerate(logical["elements"])
        ]

        def tuple_value(value: Any) -> Any:
            if not isinstance(value, list):
                raise _unexpected(desc, "begin_list", value)
            if len(value) < len(elements):
                raise violation(
                    f"Cannot parse {json.dumps(desc)}; expected "
                    f'{json.dumps(f"{desc}.<tuple-element-{len(value)}>")} got "end_list"'
                )
            if len(value) > len(elements):
                raise _unexpected(desc, "end_list", value[len(elements)])
            return [convert(v) for convert, v in zip(elements, value, strict=True)]

        return tuple_value
    if kind == "struct":
        return _struct(logical["members"], desc, positional)
    if kind == "variant":
        return _variant(logical, desc, positional)
    raise AssertionError(kind)  # pragma: no cover


def _struct(members: list[dict[str, Any]], desc: str, positional: bool) -> Converter:
    fields = [
        (
            m["name"],
            m["name"].encode("utf-8"),
            converter(m["type"], f"{desc}.{m['name']}", positional),
            is_nullable(m["type"]),
            isinstance(m["type"], dict) and m["type"]["type_name"] == "optional",
        )
        for m in members
    ]
    by_name = {bname: index for index, (_, bname, _, _, _) in enumerate(fields)}
    count = len(fields)

    if positional:

        def positional_struct(value: Any) -> Any:
            if not isinstance(value, list):
                raise _unexpected(desc, "begin_list", value)
            if len(value) > count:
                raise _unexpected(desc, "end_list", value[count])
            result = {}
            for index, (name, bname, convert, _nullable, optional) in enumerate(fields):
                if index < len(value):
                    result[bname] = convert(value[index])
                elif not optional:
                    raise violation(
                        f"Cannot parse {json.dumps(desc)}; struct ended before required field {json.dumps(name)} is set"
                    )
                else:
                    result[bname] = None
            return result

        return positional_struct

    def named_struct(value: Any) -> Any:
        if not isinstance(value, dict):
            raise violation(f'Cannot parse {json.dumps(desc)}; expected: "begin_map"; actual: "{_token(value)}"')
        given: list[Any] = [_MISSING] * count
        for key, item in value.items():
            bkey = key.encode("utf-8") if isinstance(key, str) else key
            index = by_name.get(bkey)
            if index is None:
                name = bkey.decode("utf-8", "replace") if isinstance(bkey, bytes) else str(bkey)
                raise violation(f"Unknown field {json.dumps(name)} while parsing {json.dumps(desc)}")
            given[index] = item
        result = {}
        for index, (name, bname, convert, nullable, _optional) in enumerate(fields):
            item = given[index]
            if item is _MISSING:
                if not nullable:
                    raise violation(f"Field {json.dumps(name)} is missing while parsing {json.dumps(desc)}")
                result[bname] = None
            else:
                result[bname] = convert(item)
        return result

    return named_struct


_MISSING = object()


def _variant(logical: dict[str, Any], desc: str, positional: bool) -> Converter:
    if "elements" in logical:
        alternatives: list[tuple[Any, Converter]] = [
            (i, converter(e["type"], f"{desc}.<variant-element-{i}>", positional))
            for i, e in enumerate(logical["elements"])
        ]
        by_name: dict[bytes, int] = {}
    else:
        alternatives = [
            (m["name"].encode("utf-8"), converter(m["type"], f"{desc}.{m['name']}", positional))
            for m in logical["members"]
        ]
        by_name = {tag: index for index, (tag, _) in enumerate(alternatives)}
    named = bool(by_name) and not positional
    count = len(alternatives)

    def variant(value: Any) -> Any:
        if not isinstance(value, list):
            raise _unexpected(desc, "begin_list", value)
        if len(value) != 2:
            if len(value) > 2:
                raise _unexpected(desc, "end_list", value[2])
            raise violation(f"Cannot parse {json.dumps(desc)}: a variant must be a [alternative; value] pair")
        tag = value[0]
        if named:
            bkey = tag.encode("utf-8") if isinstance(tag, str) else tag
            if not isinstance(bkey, bytes):
                raise violation(f'Cannot parse {json.dumps(desc)}; expected: "string_value"; actual: "{_token(tag)}"')
            index = by_name.get(bkey)
            if index is None:
                raise violation(
                    f"Unknown variant field {json.dumps(bkey.decode('utf-8', 'replace'))} while "
                    f"parsing {json.dumps(desc)}"
                )
        else:
            if isinstance(tag, bool) or not isinstance(tag, int) or isinstance(tag, yson.YsonUint64):
                raise _unexpected(desc, "int64_value", tag)
            index = int(tag)
            if index < 0:
                raise violation(f'Cannot parse {json.dumps(desc)}; variant alternative index "{index}" is less than 0')
            if index >= count:
                raise violation(
                    f'Cannot parse {json.dumps(desc)}; variant alternative index "{index}" '
                    f'exceeds number of variant elements "{count}"'
                )
        label, convert = alternatives[index]
        return [label, convert(value[1])]

    return variant


def positional_weight(logical: Any) -> Callable[[Any], int]:
    """Data weight of a stored composite value: the length of its positional binary YSON (as YT stores it)."""
    if not has_named_form(logical):
        return lambda value: len(dumps_value(value))
    to_positional = _positional(logical)
    return lambda value: len(dumps_value(to_positional(value)))


def _positional(logical: Any) -> Converter:
    if isinstance(logical, str) or not has_named_form(logical):
        return lambda value: value
    kind = logical["type_name"]
    if kind == "tagged":
        return _positional(logical["item"])
    if kind == "optional":
        item = _positional(logical["item"])
        if is_nullable(logical["item"]):
            return lambda value: None if value is None else [item(value[0])]
        return lambda value: None if value is None else item(value)
    if kind == "list":
        item = _positional(logical["item"])
        return lambda value: [item(v) for v in value]
    if kind == "dict":
        key, val = _positional(logical["key"]), _positional(logical["value"])
        return lambda value: [[key(k), val(v)] for k, v in value]
    if kind == "struct":
        fields = [(m["name"].encode("utf-8"), _positional(m["type"])) for m in logical["members"]]
        return lambda value: [convert(value.get(name)) for name, convert in fields]
    if kind == "tuple":
        elements = [_positional(e["type"]) for e in logical["elements"]]
        return lambda value: [convert(v) for convert, v in zip(elements, value, strict=True)]
    if "members" in logical:
        members = [(m["name"].encode("utf-8"), _positional(m["type"])) for m in logical["members"]]
        index = {name: i for i, (name, _) in enumerate(members)}
        return lambda value: [index[value[0]], members[index[value[0]]][1](value[1])]
    elements = [_positional(e["type"]) for e in logical["elements"]]
    return lambda value: [value[0], elements[value[0]](value[1])]
