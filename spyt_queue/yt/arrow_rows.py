"""Convert rows pulled from YT (binary YSON parsed with ``encoding=None``) into Arrow record batches.

Columns are converted whole (one ``pyarrow.array`` call per column), so the per-row Python cost is one
dictionary lookup per column. Composite values take a recursive path only when ``parsing_type_v3`` asks
for Spark nested types; otherwise they are re-encoded as binary YSON, as SPYT does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import yt.yson as yson
from pyspark.sql.types import StructType

from spyt_queue.deadletter import BoundDeadLetters, yson_payload
from spyt_queue.errors import BadRecordError
from spyt_queue.spark.compat import arrow_schema
from spyt_queue.yt.schema import YtColumn, YtSchema

_EPOCH = dt.date(1970, 1, 1)
_TS = pa.timestamp("us", tz="UTC")


def _key(name: str) -> bytes:
    return name.encode("utf-8")


def _text(value: Any) -> Any:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def decode_yt_decimal(raw: bytes, precision: int, scale: int) -> Decimal:
    """Decode YT's binary decimal: big-endian two's complement with the sign bit inverted."""
    number = int.from_bytes(raw, "big") - (1 << (8 * len(raw) - 1))
    return Decimal(number).scaleb(-scale)


def _strip(type_v3: Any) -> tuple[Any, bool]:
    optional = False
    while isinstance(type_v3, Mapping) and type_v3.get("type_name") in ("optional", "tagged"):
        optional = optional or type_v3["type_name"] == "optional"
        type_v3 = type_v3["item"]
    return type_v3, optional


def nested_converter(type_v3: Any) -> Callable[[Any], Any]:
    """A function turning a parsed YSON value of ``type_v3`` into what ``pyarrow.array`` expects for it."""
    t, _ = _strip(type_v3)
    if isinstance(t, str):
        if t in ("string", "utf8", "json"):
            return _text
        if t in ("date", "date32"):
            return lambda v: None if v is None else _EPOCH + dt.timedelta(days=int(v))
        if t in ("datetime", "datetime64"):
            return lambda v: None if v is None else dt.datetime.fromtimestamp(int(v), dt.timezone.utc)
        if t in ("timestamp", "timestamp64"):
            return lambda v: (
                None
                if v is None
                else dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(v))
            )
        if t in ("yson", "any"):
            return lambda v: None if v is None else yson.dumps(v, yson_format="binary")
        if t in ("float", "double"):
            return lambda v: None if v is None else float(v)
        if t in ("bool",):
            return lambda v: None if v is None else bool(v)
        return lambda v: None if v is None else (int(v) if not isinstance(v, bytes) else v)
    name = t["type_name"]
    if name == "decimal":
        precision, scale = int(t["precision"]), int(t["scale"])
        return lambda v: None if v is None else decode_yt_decimal(v, precision, scale)
    if name == "list":
        item = nested_converter(t["item"])
        return lambda v: None if v is None else [item(x) for x in v]
    if name in ("struct", "tuple"):
        members = t["members"] if name == "struct" else t["elements"]
        names = [m["name"] if name == "struct" else f"_{i + 1}" for i, m in enumerate(members)]
        keys = [_key(m["name"]) if name == "struct" else None for m in members]
        convs = [nested_converter(m["type"]) for m in members]

        def convert_struct(v: Any) -> Any:
            if v is None:
                return None
            if isinstance(v, Mapping):  # named representation
                return {n: c(v.get(k)) for n, k, c in zip(names, keys, convs, strict=True)}
            values = list(v) + [None] * (len(names) - len(v))  # positional representation
            return {n: c(x) for n, c, x in zip(names, convs, values, strict=False)}

        return convert_struct
    if name == "dict":
        kc, vc = nested_converter(t["key"]), nested_converter(t["value"])
        return lambda v: None if v is None else [(kc(k), vc(x)) for k, x in v]
    if name == "variant":
        members = t.get("members") or t.get("elements")
        names = [m.get("name", f"_{i + 1}") for i, m in enumerate(members)]
        convs = [nested_converter(m["type"]) for m in members]
        by_name = {_key(n): i for i, n in enumerate(names)}

        def convert_variant(v: Any) -> Any:
            if v is None:
                return None
            tag, value = v[0], v[1]
            index = by_name[tag] if isinstance(tag, bytes) else int(tag)
            return {n: (convs[i](value) if i == index else None) for i, n in enumerate(names)}

        return convert_variant
    raise BadRecordError(f"Unsupported YT type {t!r}")


class RowConverter:
    """Builds record batches of one fixed Spark schema from parsed YT rows."""

    def __init__(
        self,
        yt_schema: YtSchema,
        schema: StructType,
        parsing_type_v3: bool,
        include_service_columns: bool,
        describe_source: str = "",
        dead_letters: BoundDeadLetters | None = None,
    ) -> None:
        """``dead_letters``: where rows that do not convert go (``deadLetter.*``); without it they stop the query."""
        self.schema = schema
        self.dead_letters = dead_letters
        self.arrow_schema = arrow_schema(schema)
        self.include_service_columns = include_service_columns
        self.parsing_type_v3 = parsing_type_v3
        self.describe_source = describe_source
        self._columns: list[tuple[YtColumn, bytes, pa.Field, Callable[[list[Any]], pa.Array]]] = []
        for column in yt_schema.columns:
            field = self.arrow_schema.field(column.name)
            self._columns.append(
                (column, _key(column.name), field, self._column_builder(column, field, parsing_type_v3))
            )

    def _column_builder(
        self, column: YtColumn, field: pa.Field, parsing_type_v3: bool
    ) -> Callable[[list[Any]], pa.Array]:
        t, _ = _strip(column.type_v3)
        target = field.type
        if isinstance(t, str):
            if t in ("date", "date32"):
                return lambda values: pa.array(values, pa.int32()).cast(target)
            if t in ("timestamp", "timestamp64"):
                return lambda values: pa.array(values, pa.int64()).cast(target)
            if t in ("datetime", "datetime64"):
                return lambda values: pa.array([None if v is None else v * 1_000_000 for v in values], pa.int64()).cast(
                    target
                )
            if t in ("yson", "any"):
                return lambda values: pa.array(
                    [None if v is None else yson.dumps(v, yson_format="binary") for v in values], target
                )
            return lambda values: pa.array(values, target)
        if not parsing_type_v3:
            return lambda values: pa.array(
                [
                    None
                    if v is None
                    else (
                        v
                        if isinstance(v, bytes) and t.get("type_name") == "decimal"
                        else yson.dumps(v, yson_format="binary")
                    )
                    for v in values
                ],
                target,
            )
        convert = nested_converter(column.type_v3)
        return lambda values: pa.array([convert(v) for v in values], target)

    def convert(
        self, rows: Sequence[Mapping[bytes, Any]], tablet: int, row_indexes: Sequence[int]
    ) -> pa.RecordBatch:
        """One record batch for ``rows`` of ``tablet`` whose row indexes are ``row_indexes``.

        A row that does not convert raises :class:`BadRecordError` naming tablet, row and reason; with a dead-letter
        target it is written there (durably, before this returns) and left out of the batch instead."""
        if self.dead_letters is None:
            return self._convert(rows, tablet, row_indexes)
        try:
            return self._convert(rows, tablet, row_indexes)
        except BadRecordError:
            pass
        good: list[int] = []
        letters = []
        for position, (row, index) in enumerate(zip(rows, row_indexes, strict=True)):
            try:
                self._convert([row], tablet, [index])
            except BadRecordError as error:
                letters.append(self.dead_letters.letter(tablet, index, error, yson_payload(row)))
                continue
            good.append(position)
        self.dead_letters.write(letters, f" (tablet {tablet})")
        return self._convert([rows[i] for i in good], tablet, [row_indexes[i] for i in good])

    def _convert(
        self, rows: Sequence[Mapping[bytes, Any]], tablet: int, row_indexes: Sequence[int]
    ) -> pa.RecordBatch:
        arrays: list[pa.Array] = []
        if self.include_service_columns:
            arrays.append(pa.repeat(pa.scalar(tablet, pa.int64()), len(rows)))
            arrays.append(pa.array(row_indexes, pa.int64()))  # a range when the pull had no gap
        for column, key, field, build in self._columns:
            values = [row.get(key) for row in rows]
            try:
                array = build(values)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError) as error:
                raise self._bad_value(column, values, tablet, row_indexes, error) from error
            if not field.nullable and array.null_count:
                position = next(i for i, v in enumerate(values) if v is None)
                raise BadRecordError(
                    f"Row {row_indexes[position]} of tablet {tablet}{self.describe_source} has no value in "
                    f"required column {column.name!r}"
                )
            arrays.append(array)
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)

    def _bad_value(
        self, column: YtColumn, values: list[Any], tablet: int, row_indexes: Sequence[int], error: Exception
    ) -> BadRecordError:
        field = self.arrow_schema.field(column.name)
        build = self._column_builder(column, field, self.parsing_type_v3)
        for value, row in zip(values, row_indexes, strict=True):
            try:
                build([value])
            except Exception:
                hint = (
                    " Use binary_strings=true for non-UTF-8 'string' columns." if column.base_type == "string" else ""
                )
                return BadRecordError(
                    f"Row {row} of tablet {tablet}{self.describe_source}: column {column.name!r} holds "
                    f"{value!r}, which does not fit Spark type {field.type} ({error}).{hint}"
                )
        return BadRecordError(f"Column {column.name!r} of tablet {tablet}{self.describe_source}: {error}")
