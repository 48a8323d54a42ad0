"""YTsaurus table schemas as Spark schemas: the type mapping of the ``ytqueue`` source and sink.

Primitive types map to the nearest Spark type. Composite types (``list``, ``struct``, ``tuple``, ``dict``,
``variant``, ``tagged``, ``decimal``) become Spark nested types with ``parsing_type_v3=true``; otherwise they
are passed as YSON bytes (``binary``), as SPYT does. ``optional<T>`` is ``T`` made nullable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spyt_queue.errors import SchemaMismatchError
from spyt_queue.records import SERVICE_ROW_COLUMN, SERVICE_TABLET_COLUMN

SYSTEM_COLUMNS = ("$tablet_index", "$row_index")

PRIMITIVES: dict[str, DataType] = {
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "uint8": ShortType(),
    "uint16": IntegerType(),
    "uint32": LongType(),
    "uint64": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "bool": BooleanType(),
    "boolean": BooleanType(),
    "string": StringType(),
    "utf8": StringType(),
    "json": StringType(),
    "uuid": BinaryType(),
    "yson": BinaryType(),
    "any": BinaryType(),
    "date": DateType(),
    "date32": DateType(),
    "datetime": TimestampType(),
    "datetime64": TimestampType(),
    "timestamp": TimestampType(),
    "timestamp64": TimestampType(),
    "interval": LongType(),
    "interval64": LongType(),
    "null": NullType(),
    "void": NullType(),
}

# Type names of the old (v1) ``type`` field and their type_v3 equivalents.
V1_TO_V3 = {"boolean": "bool", "any": "yson"}


@dataclass(frozen=True)
class YtColumn:
    """One column of a YT schema: its name, type_v3 description, and whether it is a key column."""

    name: str
    type_v3: Any
    sort_order: str | None = None

    @property
    def required(self) -> bool:
        """A column is required unless its type is ``optional<...>`` (or a null type)."""
        return not _is_optional(self.type_v3)

    @property
    def base_type(self) -> Any:
        """The type without its outer ``optional`` wrapper."""
        return _strip_optional(self.type_v3)

    @property
    def type_text(self) -> str:
        """The column's type as YT writes it in a schema (``int64``, ``optional<int64>``): see :func:`type_text`."""
        return type_text(self.type_v3)

    @property
    def is_composite(self) -> bool:
        """Whether the column holds a composite value (YSON bytes unless ``parsing_type_v3``)."""
        return isinstance(self.base_type, Mapping) and self.base_type.get("type_name") not in ("decimal",)


@dataclass(frozen=True)
class YtSchema:
    """A parsed YT table schema."""

    columns: tuple[YtColumn, ...]
    strict: bool = True
    unique_keys: bool = False

    @property
    def sorted(self) -> bool:
        """Whether the table is sorted (has key columns)."""
        return any(c.sort_order for c in self.columns)

    @property
    def key_columns(self) -> list[str]:
        """Names of the key columns, in key order."""
        return [c.name for c in self.columns if c.sort_order]

    def column(self, name: str) -> YtColumn | None:
        """The column called ``name``, if any."""
        for c in self.columns:
            if c.name == name:
                return c
        return None

    @classmethod
    def parse(cls, raw: Any) -> YtSchema:
        """Parse ``@schema`` as ``yt.wrapper`` returns it (a list with ``strict``/``unique_keys`` attributes)."""
        attributes = getattr(raw, "attributes", {}) or {}
        columns = []
        for entry in raw:
            name = _text(entry["name"])
            type_v3 = entry.get("type_v3")
            if type_v3 is None:
                base = _text(entry.get("type", "any"))
                base = V1_TO_V3.get(base, base)
                required = bool(entry.get("required", False))
                type_v3 = base if required else {"type_name": "optional", "item": base}
            columns.append(YtColumn(name, _normalize(type_v3), _text_or_none(entry.get("sort_order"))))
        return cls(
            tuple(columns),
            strict=bool(attributes.get("strict", True)),
            unique_keys=bool(attributes.get("unique_keys", False)),
        )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else _text(value)


def _normalize(type_v3: Any) -> Any:
    """Turn YSON maps/lists into plain dicts/lists with ``str`` keys and values."""
    if isinstance(type_v3, Mapping):
        return {_text(k): _normalize(v) for k, v in type_v3.items()}
    if isinstance(type_v3, (list, tuple)):
        return [_normalize(v) for v in type_v3]
    if isinstance(type_v3, bytes):
        return type_v3.decode()
    return type_v3 if not isinstance(type_v3, str) else str(type_v3)


def type_text(type_v3: Any) -> str:
    """A type_v3 description as text, in YT's own notation for messages: ``int64``, ``optional<int64>``,
    ``list<string>``, ``struct<a:int64;b:string>``, ``dict<string,int64>``, ``decimal(10,2)`` (never the raw dict)."""
    if not isinstance(type_v3, Mapping):
        return str(type_v3)
    name = str(type_v3.get("type_name", "?"))
    if name == "decimal":
        return f"decimal({type_v3.get('precision')},{type_v3.get('scale')})"
    if name in ("optional", "list"):
        return f"{name}<{type_text(type_v3.get('item'))}>"
    if name == "tagged":
        return f"tagged<{type_text(type_v3.get('item'))},{type_v3.get('tag')!r}>"
    if name == "dict":
        return f"dict<{type_text(type_v3.get('key'))},{type_text(type_v3.get('value'))}>"
    if name in ("struct", "variant") and "members" in type_v3:
        members = ";".join(f"{m.get('name')}:{type_text(m.get('type'))}" for m in type_v3["members"])
        return f"{name}<{members}>"
    if name in ("tuple", "variant") and "elements" in type_v3:
        return f"{name}<{','.join(type_text(e.get('type')) for e in type_v3['elements'])}>"
    return name


def _is_optional(type_v3: Any) -> bool:
    if isinstance(type_v3, Mapping):
        return type_v3.get("type_name") == "optional"
    return type_v3 in ("null", "void")


def _strip_optional(type_v3: Any) -> Any:
    while isinstance(type_v3, Mapping) and type_v3.get("type_name") == "optional":
        type_v3 = type_v3["item"]
    return type_v3


def _strip_tagged(type_v3: Any) -> Any:
    while isinstance(type_v3, Mapping) and type_v3.get("type_name") == "tagged":
        type_v3 = type_v3["item"]
    return type_v3


def spark_type(type_v3: Any, parsing_type_v3: bool) -> DataType:
    """The Spark type of a YT type (``optional`` already stripped by the caller or not)."""
    t = _strip_tagged(_strip_optional(type_v3))
    if isinstance(t, str):
        if t not in PRIMITIVES:
            raise SchemaMismatchError(f"YT type {t!r} has no Spark mapping")
        return PRIMITIVES[t]
    name = t.get("type_name")
    if name == "decimal":
        if parsing_type_v3:
            return DecimalType(int(t["precision"]), int(t["scale"]))
        return BinaryType()
    if not parsing_type_v3:
        return BinaryType()
    if name == "list":
        return ArrayType(spark_type(t["item"], True), containsNull=_is_optional(t["item"]))
    if name == "struct":
        return StructType(
            [
                StructField(m["name"], spark_type(m["type"], True), nullable=_is_optional(m["type"]))
                for m in t["members"]
            ]
        )
    if name == "tuple":
        return StructType(
            [
                StructField(f"_{i + 1}", spark_type(e["type"], True), nullable=_is_optional(e["type"]))
                for i, e in enumerate(t["elements"])
            ]
        )
    if name == "dict":
        return MapType(
            spark_type(t["key"], True), spark_type(t["value"], True), valueContainsNull=_is_optional(t["value"])
        )
    if name == "variant":
        if "members" in t:
            fields = [StructField(m["name"], spark_type(m["type"], True), True) for m in t["members"]]
        else:
            fields = [StructField(f"_{i + 1}", spark_type(e["type"], True), True) for i, e in enumerate(t["elements"])]
        return StructType(fields)
    raise SchemaMismatchError(f"YT type {t!r} has no Spark mapping")


def spark_schema(
    schema: YtSchema,
    parsing_type_v3: bool = False,
    include_service_columns: bool = False,
    binary_strings: bool = False,
    extra: Sequence[StructField] = (),
) -> StructType:
    """The Spark schema of rows read from a YT queue with the given options."""
    fields: list[StructField] = []
    if include_service_columns:
        fields.append(StructField(SERVICE_TABLET_COLUMN, LongType(), False))
        fields.append(StructField(SERVICE_ROW_COLUMN, LongType(), False))
    for column in schema.columns:
        dtype = spark_type(column.type_v3, parsing_type_v3)
        if binary_strings and column.base_type == "string":
            dtype = BinaryType()
        fields.append(StructField(column.name, dtype, nullable=not column.required))
    fields.extend(extra)
    return StructType(fields)
