"""Table schemas: parsing, the read-back form YT returns for ``@schema``, row validation and key encoding."""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass
from typing import Any

import yt.yson as yson

from spyt_queue.local import types
from spyt_queue.local.errors import MISSING_REQUIRED_COLUMN, SCHEMA_VIOLATION, YtError
from spyt_queue.local.formats import dumps_value
from spyt_queue.local.types import (
    INT_RANGES,
    SIMPLE_V1,
    UNSIGNED_TYPES,
    V3_OF_V1,
    check_decimal,
    check_json,
    decimal_of,
    optional_of,
    scalar_check,
    v1_info,
)

# Simple v1 type name -> its ``type_v3`` name (``boolean``/``bool``, ``any``/``yson``; the others are equal).
SIMPLE_TYPES = {name: V3_OF_V1.get(name, name) for name in sorted(SIMPLE_V1)}
V3_TO_TYPE = {v: k for k, v in SIMPLE_TYPES.items()}
SYSTEM_COLUMNS_ORDERED = ("$timestamp", "$cumulative_data_weight")
TABLET_INDEX = b"$tablet_index"
ROW_INDEX = b"$row_index"


@dataclass
class Column:
    """One schema column: ``type``/``required`` are the v1 cast of the logical type ``type_v3``."""

    name: str
    type: str
    required: bool = False
    sort_order: str | None = None
    extra: dict[str, Any] | None = None
    type_v3: Any = None

    def __post_init__(self) -> None:
        if self.type_v3 is None:
            v3 = V3_OF_V1.get(self.type, self.type)
            self.type_v3 = v3 if self.required or v3 in ("null", "void") else optional_of(v3)
        self.composite = v1_info(self.type_v3)[2]
        #: What ``_check_column`` checks: a simple v1 name, ``decimal`` or ``composite``.
        self.check = "composite" if self.composite else scalar_check(self.type_v3)
        self._converters: dict[bool, types.Converter] = {}
        self.weigh = types.positional_weight(self.type_v3) if self.composite else None

    @property
    def bname(self) -> bytes:
        """The column name as row dicts key it."""
        return self.name.encode("utf-8")

    def converter(self, positional: bool) -> types.Converter:
        """The checking/normalising function of a composite column for the input ``complex_type_mode``."""
        result = self._converters.get(positional)
        if result is None:
            result = self._converters[positional] = types.converter(self.type_v3, self.name, positional)
        return result

    def to_yson(self) -> dict[str, Any]:
        """The column as YT reads it back: name, type, required, type_v3, sort_order."""
        result: dict[str, Any] = {
            "name": self.name,
            "type": self.type,
            "required": self.required,
            "type_v3": self.type_v3,
        }
        if self.sort_order:
            result["sort_order"] = self.sort_order
        for key, value in (self.extra or {}).items():
            result.setdefault(key, value)
        return result


class TableSchema:
    """A parsed table schema (strict, unique_keys, columns)."""

    def __init__(self, columns: list[Column], strict: bool = True, unique_keys: bool = False) -> None:
        self.columns = columns
        self.strict = strict
        self.unique_keys = unique_keys
        self.by_name = {c.name: c for c in columns}
        self.by_bname = {c.bname: c for c in columns}
        self.key_columns = [c for c in columns if c.sort_order]
        self.value_columns = [c for c in columns if not c.sort_order]
        self.data_columns = [c for c in columns if c.name not in SYSTEM_COLUMNS_ORDERED]
        self.has_timestamp = "$timestamp" in self.by_name
        self.has_cumulative_data_weight = "$cumulative_data_weight" in self.by_name
        #: Data weight functions of composite columns (see ``row_data_weight``).
        self.weighers = {c.bname: c.weigh for c in columns if c.weigh is not None}

    @property
    def sorted(self) -> bool:
        """Whether the schema has key columns."""
        return bool(self.key_columns)

    @property
    def key_names(self) -> list[str]:
        """Key column names in order."""
        return [c.name for c in self.key_columns]

    def to_yson(self) -> Any:
        """``@schema`` as YT returns it: a list with ``strict`` and ``unique_keys`` attributes."""
        return yson.to_yson_type(
            [c.to_yson() for c in self.columns], attributes={"strict": self.strict, "unique_keys": self.unique_keys}
        )

    def to_storage(self) -> dict[str, Any]:
        """A plain structure for persisting."""
        return {
            "strict": self.strict,
            "unique_keys": self.unique_keys,
            "columns": [
                {
                    "name": c.name,
                    "type": c.type,
                    "required": c.required,
                    "sort_order": c.sort_order,
                    "type_v3": c.type_v3,
                }
                for c in self.columns
            ],
        }

    @classmethod
    def from_storage(cls, data: dict[str, Any]) -> TableSchema:
        """Inverse of :meth:`to_storage`."""
        columns = [
            Column(
                str(c["name"]),
                str(c["type"]),
                bool(c["required"]),
                str(c["sort_order"]) if c.get("sort_order") else None,
                type_v3=_plain(c.get("type_v3")),
            )
            for c in data["columns"]
        ]
        return cls(columns, bool(data["strict"]), bool(data["unique_keys"]))

    @classmethod
    def parse(cls, value: Any, dynamic: bool = False) -> TableSchema:
        """Parse a schema given to ``create`` (a list of column maps, optionally with attributes)."""
        attributes = dict(value.attributes) if getattr(value, "has_attributes", lambda: False)() else {}
        if isinstance(value, dict) and "$value" in value:
            attributes = dict(value.get("$attributes") or {})
            value = value["$value"]
        if not isinstance(value, list):
            raise YtError("Error parsing table schema: expected a list of columns", code=314)
        columns: list[Column] = []
        seen: set[str] = set()
        for raw in value:
            if not isinstance(raw, dict):
                raise YtError("Error parsing table schema: a column must be a map", code=314)
            columns.append(_parse_column(raw))
            if columns[-1].name in seen:
                raise YtError(f"Duplicate column name {columns[-1].name!r} in table schema", code=314)
            seen.add(columns[-1].name)
        key_done = False
        for column in columns:
            if column.sort_order:
                if key_done:
                    raise YtError(
                        f"Key columns must form a prefix of schema; column {column.name!r} is out of order", code=314
                    )
                if column.sort_order != "ascending":
                    raise YtError(f"Sort order {column.sort_order!r} is not supported by ytqueue local", code=314)
                if column.composite:
                    raise YtError(
                        f"Key column {column.name!r} has a composite type; composite key columns are "
                        "not supported by ytqueue local",
                        code=314,
                    )
            else:
                key_done = True
            if column.extra and "aggregate" in column.extra and any(c.sort_order for c in columns):
                # An aggregate column only aggregates by key; ordered tables store its values as they come.
                raise YtError(f"Aggregate column {column.name!r} is not supported by ytqueue local", code=314)
            if column.name.startswith("$") and column.name not in SYSTEM_COLUMNS_ORDERED:
                raise YtError(f"Column name {column.name!r} is reserved", code=314)
        strict = bool(attributes.get("strict", True))
        has_keys = any(c.sort_order for c in columns)
        if "unique_keys" in attributes:
            unique_keys = bool(attributes["unique_keys"])
        else:
            unique_keys = dynamic and has_keys
        if unique_keys and not has_keys:
            raise YtError("Schema with unique keys must have at least one key column", code=314)
        if dynamic:
            if has_keys and not unique_keys:
                raise YtError("Dynamic table must have unique keys", code=314)
            if not strict:
                raise YtError('"strict" cannot be "false" for a dynamic table', code=314)
            for name in SYSTEM_COLUMNS_ORDERED:
                if name in seen and has_keys:
                    raise YtError(f"Column {name!r} is allowed only in ordered tables", code=314)
            if "$timestamp" in seen and columns[[c.name for c in columns].index("$timestamp")].type != "uint64":
                raise YtError('Column "$timestamp" must have type "uint64"', code=314)
            if (
                "$cumulative_data_weight" in seen
                and columns[[c.name for c in columns].index("$cumulative_data_weight")].type != "int64"
            ):
                raise YtError('Column "$cumulative_data_weight" must have type "int64"', code=314)
        return cls(columns, strict, unique_keys)

    # ----------------------------------------------------------------------------------------------------------
    # Row validation

    def validate_rows(
        self,
        rows: list[dict[bytes, Any]],
        path: str,
        *,
        ordered: bool,
        keys_only: bool = False,
        partial: bool = False,
        extra_allowed: tuple[bytes, ...] = (),
        complex_type_mode: str = "named",
    ) -> None:
        """Validate and coerce rows in place (YT-style errors); mostly per-column vector work.

        ``keys_only``: delete/lookup keys (only key columns, all of them). ``partial``: ``update=%true``
        writes, where omitted value columns are kept (required value columns may be absent).
        ``complex_type_mode``: the input format's representation of structs (``named`` or ``positional``);
        composite values are stored in the named form real clusters return.
        """
        if not rows:
            return
        present: set[bytes] = set(itertools.chain.from_iterable(rows))  # every key of every row, in one C loop
        allowed = set(self.by_bname) | set(extra_allowed)
        if ordered:
            allowed.add(TABLET_INDEX)
        system_written = present & {b"$timestamp", b"$cumulative_data_weight", ROW_INDEX}
        if system_written:
            name = sorted(system_written)[0].decode()
            raise YtError(
                f"Column {name!r} cannot be written: it is a system column",
                code=SCHEMA_VIOLATION,
                attributes={"table_path": path, "column": name},
            )
        unknown = present - allowed
        if keys_only:
            key_names = {c.bname for c in self.key_columns}
            non_key = present - key_names
            if non_key:
                name = sorted(non_key)[0].decode("utf-8", "replace")
                raise YtError(
                    f"Column {name!r} is not a key column of table {path}",
                    code=SCHEMA_VIOLATION,
                    attributes={"table_path": path, "column": name},
                )
        elif unknown and self.strict:
            name = sorted(unknown)[0].decode("utf-8", "replace")
            raise YtError(
                f"No column {name!r} in strict schema of table {path}",
                code=SCHEMA_VIOLATION,
                attributes={"table_path": path, "column": name},
            )
        if not ordered:
            # TBuildingValueConsumer::OnEndRow: a key column a row leaves out is sent as null (so a nullable key
            # column reads as null, a required one fails below with 307 "cannot have null value").
            for column in self.key_columns:
                name = column.bname
                if name not in present:
                    for row in rows:
                        row[name] = None
                elif not all(name in row for row in rows):
                    for row in rows:
                        row.setdefault(name, None)
        columns = self.key_columns if keys_only else self.data_columns
        longest = 0
        for column in columns:
            name = column.bname
            values = [row.get(name) for row in rows]
            _check_column(
                column,
                values,
                rows,
                path,
                present=name in present,
                required=column.required,
                skip_missing=partial and not column.sort_order,
                positional=complex_type_mode == "positional",
            )
            longest += _check_lengths(column, values, path)
        if not keys_only:
            _check_row_weights(columns, longest, rows, path)
        if not ordered and not keys_only:
            self._check_value_columns(rows, path, present, partial)
        if ordered and TABLET_INDEX in present:
            values = [row.get(TABLET_INDEX) for row in rows]
            kinds = set(map(type, values))
            if not kinds <= {int, yson.YsonUint64, yson.YsonInt64}:
                raise YtError(
                    'Invalid type of column "$tablet_index": expected "int64"',
                    code=SCHEMA_VIOLATION,
                    attributes={"table_path": path},
                )

    def _check_value_columns(self, rows: list[dict[bytes, Any]], path: str, present: set[bytes], partial: bool) -> None:
        """The write checks of a sorted table's value columns, as the native client makes them: a row needs at
        least one value column (``ValidateClientRow``: with ``update=%false`` every value column is sent, null
        when absent); with ``update=%true`` a required value column the row leaves out fails with 323
        (``ValidateDuplicateAndRequiredValueColumns``)."""
        values = [c.bname for c in self.data_columns if not c.sort_order]
        if not values or (partial and not any(name in present for name in values)):
            raise YtError("At least one non-key column must be specified", attributes={"table_path": path})
        if not partial:
            return
        if not all(any(name in row for name in values) for row in rows):
            raise YtError("At least one non-key column must be specified", attributes={"table_path": path})
        for column in self.data_columns:
            if column.required and not column.sort_order:
                name = column.bname
                if name not in present or not all(name in row for row in rows):
                    raise YtError(
                        f'Missing required column "{column.name}" in table schema',
                        code=MISSING_REQUIRED_COLUMN,
                        attributes={"table_path": path, "column": column.name},
                    )


def _parse_column(raw: dict[Any, Any]) -> Column:
    data = {str(k): v for k, v in raw.items()}
    name = data.get("name")
    if not isinstance(name, (str, bytes)) or not name:
        raise YtError("Error parsing table schema: column name must be a non-empty string", code=314)
    name = name.decode() if isinstance(name, bytes) else str(name)
    type_name = data.get("type")
    required = data.get("required")
    if isinstance(type_name, bytes):
        type_name = type_name.decode("utf-8", "replace")
    if data.get("type_v3") is not None:
        # TSerializableColumnSchema::RunPostprocessor: type_v3 wins; type/required, when given, must match it.
        logical = types.parse_type(data["type_v3"], name)
        v1, v1_required, _ = v1_info(logical)
        if type_name is not None and str(type_name) != v1:
            raise YtError(
                f'Error validating column {name!r} in table schema: "type_v3" does not match '
                f'"type"; "type_v3": {_type_text(logical)!r} "type": {str(type_name)!r} '
                f'expected "type": {v1!r}',
                code=314,
            )
        if required is not None and bool(required) != v1_required:
            raise YtError(
                f'Error validating column {name!r} in table schema: "type_v3" does not match '
                f'"required"; "type_v3": {_type_text(logical)!r} "required": '
                f"{str(bool(required)).lower()}",
                code=314,
            )
        type_name, required = v1, v1_required
    elif type_name is not None:
        type_name = str(type_name)
        if type_name not in SIMPLE_V1:
            raise YtError(f"Error parsing ESimpleLogicalValueType value {type_name!r} (column {name!r})", code=314)
        required = bool(required)
        if required and type_name in ("null", "void"):
            raise YtError(f"Column {name!r} of type {type_name!r} cannot be required", code=314)
        logical = None
    else:
        raise YtError(f"Error validating column {name!r} in table schema: Column type is not specified", code=314)
    plain_v3 = logical if logical is not None else V3_OF_V1.get(type_name, type_name)
    if required and types.strip_tags(plain_v3) == "yson":
        raise YtError(
            f'Error validating column {name!r} in table schema: Column of type "any" cannot be "required"', code=314
        )
    sort_order = data.get("sort_order")
    extra = {k: v for k, v in data.items() if k in ("aggregate", "lock", "group", "expression")}
    if "expression" in extra:
        if required:  # ValidateColumnSchema, wrapped as TTableNodeTypeHandler wraps schema errors
            raise YtError(
                "New table schema is not valid",
                code=314,
                inner_errors=[
                    YtError(
                        f'Error validating schema of a column "{name}"',
                        inner_errors=[YtError("Computed column cannot be required")],
                    )
                ],
            )
        raise YtError(f"Computed column {name!r} is not supported by ytqueue local", code=314)
    if "aggregate" in extra and sort_order:
        raise YtError(f"Aggregate column {name!r} cannot be a key column", code=314)
    if "lock" in extra:
        # A cluster locks each lock group of a row apart (writes of different groups of one key do not conflict);
        # rows have one lock here, so such a schema would answer conflicts differently.
        raise YtError(
            f'Lock group "{extra["lock"]}" of column {name!r}: lock groups are not supported by ytqueue local '
            "(a row has one lock here)"
        )
    return Column(
        name, type_name, bool(required), str(sort_order) if sort_order else None, extra or None, type_v3=logical
    )


def _type_text(logical: Any) -> str:
    return yson.dumps(logical, yson_format="text").decode("utf-8", "replace")


def _plain(value: Any) -> Any:
    """A stored ``type_v3`` back as plain ``str``/``dict``/``list`` (YSON string subclasses unwrapped)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    return value


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, yson.YsonUint64):
        return "uint64"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "double"
    if isinstance(value, (bytes, str)):
        return "string"
    return "any"


_INT_KINDS = {int, yson.YsonInt64}
_ALL_INT_KINDS = {int, yson.YsonInt64, yson.YsonUint64}


def _check_column(
    column: Column,
    values: list[Any],
    rows: list[dict[bytes, Any]],
    path: str,
    *,
    present: bool,
    required: bool,
    skip_missing: bool,
    positional: bool = False,
) -> None:
    kinds = set(map(type, values))
    name = column.bname
    if type(None) in kinds:
        if required:
            for row in rows:
                if row.get(name) is None:
                    if name not in row:
                        if skip_missing:
                            continue
                        raise YtError(
                            f'Required column "{column.name}" cannot have "null" value',
                            code=SCHEMA_VIOLATION,
                            attributes={"table_path": path, "column": column.name},
                        )
                    raise YtError(
                        f'Required column "{column.name}" cannot have "null" value',
                        code=SCHEMA_VIOLATION,
                        attributes={"table_path": path, "column": column.name},
                    )
        kinds.discard(type(None))
        values = [v for v in values if v is not None]
        if not values:
            return
    kind = column.check
    if kind == "any":
        return
    if kind == "composite":
        convert = column.converter(positional)
        try:
            for row in rows:
                value = row.get(name)
                if value is not None:
                    row[name] = convert(value)
        except YtError as error:
            error.attributes.update({"table_path": path, "column": column.name})
            raise
        return
    if kind in INT_RANGES:
        if not kinds <= _ALL_INT_KINDS:
            _raise_type(column, values, path)
        low, high = INT_RANGES[kind]
        if min(values) < low or max(values) > high:
            bad = next(v for v in values if v < low or v > high)
            raise YtError(
                f"Value {int(bad)} is out of range for column {column.name!r} of type {kind!r}",
                code=SCHEMA_VIOLATION,
                attributes={"table_path": path, "column": column.name},
            )
        if kind in UNSIGNED_TYPES:
            if kinds != {yson.YsonUint64}:
                for row in rows:
                    value = row.get(name)
                    if value is not None and type(value) is not yson.YsonUint64:
                        row[name] = yson.YsonUint64(value)
        elif yson.YsonUint64 in kinds:
            for row in rows:
                value = row.get(name)
                if type(value) is yson.YsonUint64:
                    row[name] = int(value)
        return
    if kind in ("double", "float"):
        if kinds <= {float}:
            return
        if not kinds <= (_ALL_INT_KINDS | {float, yson.YsonDouble}):
            _raise_type(column, values, path)
        for row in rows:
            value = row.get(name)
            if value is not None and type(value) is not float:
                row[name] = float(value)
        return
    if kind == "boolean":
        if not kinds <= {bool, yson.YsonBoolean}:
            _raise_type(column, values, path)
        return
    if kind in ("string", "utf8", "json", "uuid", "decimal"):
        if not kinds <= {bytes, yson.YsonString, str, yson.YsonUnicode}:
            _raise_type(column, values, path)
        if str in kinds or yson.YsonUnicode in kinds:
            for row in rows:
                value = row.get(name)
                if isinstance(value, str):
                    row[name] = value.encode("utf-8")
        if kind == "utf8":
            for value in values:
                if isinstance(value, bytes):
                    try:
                        value.decode("utf-8")
                    except UnicodeDecodeError:
                        raise YtError(
                            f"Invalid UTF-8 string in column {column.name!r}",
                            code=SCHEMA_VIOLATION,
                            attributes={"table_path": path},
                        ) from None
        elif kind != "string":
            _check_strings(column, kind, [row.get(name) for row in rows], path)
        return
    if kind in ("null", "void"):
        _raise_type(column, values, path)


# Physical ``string`` columns (EValueType::String) and v1 ``any``/``yson`` columns (EValueType::Any) are limited
# to 16 MiB per value (``MaxStringValueLength``/``MaxAnyValueLength`` in table_client/public.h, checked with ``>``
# by ``ValidateDynamicValue``); composite type_v3 values are not length-checked there.
MAX_STRING_VALUE_LENGTH = 16 * 1024 * 1024
MAX_CLIENT_ROW_DATA_WEIGHT = 128 * 1024 * 1024  # MaxClientVersionedRowDataWeight, checked with ``>=``
STRING_LIKE_VALUE_LENGTH_LIMIT_EXCEEDED = 326
ROW_WEIGHT_LIMIT_EXCEEDED = 308
_STRING_KINDS = ("string", "utf8", "json", "uuid", "decimal")


def _check_lengths(column: Column, values: list[Any], path: str) -> int:
    """Refuse a string-like value longer than 16 MiB, as ``ValidateDynamicValue`` does (error 326).

    ``values``: the column's value in every row (``None`` where absent). Returns the longest value's length (0 for
    other columns), for the row weight bound.
    """
    kind = column.check
    if kind not in _STRING_KINDS and kind != "any":
        return 0
    if kind == "any":
        physical = "any"
        longest = max(
            (len(dumps_value(v)) for v in values if v is not None and not isinstance(v, (int, float))), default=0
        )
    else:
        physical = "string"
        longest = max(map(len, filter(None, values)), default=0)  # empty and missing values cannot be the longest
    if longest > MAX_STRING_VALUE_LENGTH:
        raise YtError(
            f'Value of type "{physical}" is too long for dynamic data: length {longest}, '
            f"limit {MAX_STRING_VALUE_LENGTH}",
            code=STRING_LIKE_VALUE_LENGTH_LIMIT_EXCEEDED,
            attributes={"table_path": path, "column": column.name},
        )
    return longest


def _check_row_weights(columns: list[Column], longest: int, rows: list[dict[bytes, Any]], path: str) -> None:
    """Refuse a row whose data weight reaches 128 MiB (error 308); ``longest`` is the sum of the columns' longest
    string/any values, so rows are weighed one by one only when one of them could reach the limit."""
    if 1 + 8 * len(columns) + longest < MAX_CLIENT_ROW_DATA_WEIGHT:
        return
    names = [c.bname for c in columns]
    for row in rows:
        weight = row_data_weight(row, names)
        if weight >= MAX_CLIENT_ROW_DATA_WEIGHT:
            raise YtError(
                f"Row is too large: data weight {weight}, limit {MAX_CLIENT_ROW_DATA_WEIGHT}",
                code=ROW_WEIGHT_LIMIT_EXCEEDED,
                attributes={"table_path": path},
            )


def _check_strings(column: Column, kind: str, values: list[Any], path: str) -> None:
    try:
        for value in values:
            if value is None:
                continue
            if kind == "json":
                check_json(value, column.name)
            elif kind == "uuid":
                if len(value) != 16:
                    raise YtError(
                        f"Invalid uuid length {len(value)} in column {column.name!r}, expected 16 bytes",
                        code=SCHEMA_VIOLATION,
                    )
            else:
                precision, scale = decimal_of(column.type_v3)
                check_decimal(value, precision, scale, column.name)
    except YtError as error:
        error.attributes.update({"table_path": path, "column": column.name})
        raise


def _raise_type(column: Column, values: list[Any], path: str) -> None:
    expected = column.type
    for value in values:
        actual = _type_name(value)
        if actual != expected and not (actual in ("int64", "uint64") and expected in INT_RANGES):
            raise YtError(
                f"Invalid type of column {column.name!r}: expected {expected!r}, got {actual!r}",
                code=SCHEMA_VIOLATION,
                attributes={
                    "table_path": path,
                    "column": column.name,
                    "expected_type": expected,
                    "actual_type": actual,
                },
            )
    raise YtError(f"Invalid value in column {column.name!r}", code=SCHEMA_VIOLATION)  # pragma: no cover


# --------------------------------------------------------------------------------------------------------------
# Keys and data weight


def encode_key(values: list[Any]) -> bytes:
    """An order-preserving (memcmp) encoding of a key tuple: null sorts first, as in YT."""
    out = bytearray()
    for value in values:
        if value is None:
            out += b"\x00"
        elif isinstance(value, bool):
            out += b"\x01\x01" if value else b"\x01\x00"
        elif isinstance(value, yson.YsonUint64):
            out += b"\x01" + int(value).to_bytes(8, "big")
        elif isinstance(value, int):
            out += b"\x01" + (value + (1 << 63)).to_bytes(8, "big")
        elif isinstance(value, float):
            bits = struct.unpack(">Q", struct.pack(">d", value))[0]
            bits = bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | (1 << 63)
            out += b"\x01" + bits.to_bytes(8, "big")
        elif isinstance(value, (bytes, str)):
            raw = value.encode("utf-8") if isinstance(value, str) else value
            out += b"\x01" + raw.replace(b"\x00", b"\x00\xff") + b"\x00\x00"
        else:
            raise YtError(f"Value of type {type(value).__name__} cannot be a key")
    return bytes(out)


def value_data_weight(value: Any) -> int:
    """YT's data weight of one value: 0 for null, 8 for numbers, 1 for booleans, byte length otherwise."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return 1
    if isinstance(value, (int, float)):
        return 8
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    return len(dumps_value(value))


def row_data_weight(row: dict[bytes, Any], names: list[bytes], weighers: dict[bytes, Any] | None = None) -> int:
    """Data weight of a row over the given columns: 1 + the sum of value weights (``GetDataWeight``).

    ``weighers`` (``TableSchema.weighers``): composite columns, weighed by their positional binary YSON length.
    """
    if not weighers:
        return 1 + sum(value_data_weight(row.get(n)) for n in names)
    total = 1
    for name in names:
        value = row.get(name)
        weigh = weighers.get(name)
        total += value_data_weight(value) if weigh is None or value is None else weigh(value)
    return total


def coerce_key_value(column: Column, value: Any) -> Any:
    """Coerce one literal/key value to the column type for lookups (ints to uint64 and back)."""
    if value is None:
        return None
    if column.type in UNSIGNED_TYPES and isinstance(value, int) and not isinstance(value, bool):
        return yson.YsonUint64(value) if value >= 0 else value
    if column.type in INT_RANGES and isinstance(value, yson.YsonUint64):
        return int(value)
    if column.type in ("string", "utf8") and isinstance(value, str):
        return value.encode("utf-8")
    if column.type in ("double", "float") and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


CONSUMER_SCHEMA = TableSchema(
    [
        Column("queue_cluster", "string", True, "ascending"),
        Column("queue_path", "string", True, "ascending"),
        Column("partition_index", "uint64", True, "ascending"),
        Column("offset", "uint64", True),
        Column("meta", "any", False),
    ],
    strict=True,
    unique_keys=True,
)

CONSUMER_SCHEMA_WITHOUT_META = TableSchema(CONSUMER_SCHEMA.columns[:4], strict=True, unique_keys=True)

PRODUCER_SCHEMA = TableSchema(
    [
        Column("queue_cluster", "string", True, "ascending"),
        Column("queue_path", "string", True, "ascending"),
        Column("session_id", "string", True, "ascending"),
        Column("sequence_number", "int64", True),
        Column("epoch", "int64", True),
        Column("user_meta", "any", False),
        Column("system_meta", "any", False),
    ],
    strict=True,
    unique_keys=True,
)


def same_schema(a: TableSchema, b: TableSchema) -> bool:
    """Schema equality as ``TTableSchema::operator==`` compares them (columns, strict, unique keys)."""
    return (
        a.strict == b.strict
        and a.unique_keys == b.unique_keys
        and [(c.name, c.type_v3, c.sort_order) for c in a.columns]
        == [(c.name, c.type_v3, c.sort_order) for c in b.columns]
    )


def _flag(attributes: dict[Any, Any], name: str, default: bool) -> bool:
    value = attributes.get(name, attributes.get(name.encode(), default))
    if isinstance(value, (str, bytes)):
        return (value.decode() if isinstance(value, bytes) else value).lower() == "true"
    return bool(value)


def convert_input_types(schema: TableSchema, rows: list[dict[bytes, Any]], attributes: dict[Any, Any]) -> None:
    """The input format's type conversions (``TTypeConversionConfig``, applied by ``TValueConsumerBase``) on the
    values of simple columns, in place: ``enable_type_conversion`` turns on every conversion below;
    ``enable_string_to_all_conversion`` parses a string into an integer, double or boolean column;
    ``enable_all_to_string_conversion`` writes a number or boolean into a string column as text;
    ``enable_integral_type_conversion`` (default on) converts between int64 and uint64 columns in range, off
    refuses it; ``enable_integral_to_double_conversion`` (default on) writes an integer into a double column."""
    everything = _flag(attributes, "enable_type_conversion", False)
    string_to_all = everything or _flag(attributes, "enable_string_to_all_conversion", False)
    all_to_string = everything or _flag(attributes, "enable_all_to_string_conversion", False)
    integral = everything or _flag(attributes, "enable_integral_type_conversion", True)
    to_double = everything or _flag(attributes, "enable_integral_to_double_conversion", True)
    if not (string_to_all or all_to_string) and integral and to_double:
        return
    for column in schema.columns:
        kind = column.type
        name = column.bname
        for row in rows:
            value = row.get(name)
            if value is None:
                continue
            if isinstance(value, (bytes, str)) and string_to_all and kind in ("int64", "uint64", "double", "boolean"):
                text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
                try:
                    if kind == "boolean":
                        if text not in ("true", "false"):
                            raise ValueError(text)
                        row[name] = text == "true"
                    elif kind == "double":
                        row[name] = float(text)
                    elif kind == "uint64":
                        row[name] = yson.YsonUint64(int(text))
                    else:
                        row[name] = int(text)
                except ValueError:
                    raise YtError(
                        f"Unable to convert string {text!r} to {kind}",
                        code=SCHEMA_VIOLATION,
                        attributes={"column": column.name},
                    ) from None
            elif kind == "string" and all_to_string and isinstance(value, (int, float)):
                row[name] = (str(value).lower() if isinstance(value, bool) else str(value)).encode()
            elif not integral and not isinstance(value, bool) and isinstance(value, int):
                unsigned = isinstance(value, yson.YsonUint64)
                if (kind == "int64" and unsigned) or (kind == "uint64" and not unsigned):
                    actual = "uint64" if unsigned else "int64"
                    raise YtError(
                        f'Invalid type of column "{column.name}": expected "{kind}", actual "{actual}"',
                        code=SCHEMA_VIOLATION,
                        attributes={"column": column.name},
                    )
            elif kind == "double" and not to_double and not isinstance(value, bool) and isinstance(value, int):
                raise YtError(
                    f'Invalid type of column "{column.name}": expected "double", actual "int64"',
                    code=SCHEMA_VIOLATION,
                    attributes={"column": column.name},
                )
