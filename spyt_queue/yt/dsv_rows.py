"""Rows pulled from YT in ``schemaful_dsv``, parsed by ``pyarrow.csv`` into the record batches the YSON path builds.

YTsaurus writes ``schemaful_dsv`` (``yt/yt/library/formats/schemaful_dsv_writer.cpp``) one line per row: the
configured ``columns`` separated by ``\\t``, integers in decimal, booleans ``true``/``false``, doubles as
``FloatToString`` prints them (``42.``, ``1e+300``, ``inf.``, ``nan.``), strings with only ``\\n``, ``\\t`` and ``\\``
escaped (as ``\\n``, ``\\t``, ``\\\\``; ``\\r``, NUL and non-UTF-8 bytes pass unchanged) and nulls as the
``missing_value_sentinel``. We ask for ``$row_index`` first, then the data columns, with the sentinel ``\\N``: the
writer never prints a backslash followed by ``N`` for a value (a backslash in a string is always doubled), so a
field equal to the sentinel is a null and nothing else.

The parse is exact or it is not used: :meth:`DsvDecoder.decode` returns ``None`` (the caller re-reads the pull in
YSON, whose converter also reports bad rows) when the text holds a raw ``\\r`` (``pyarrow.csv`` ends a line there),
an escape the writer does not produce, a double it cannot parse (``inf.``, ``nan.``), a NaN, invalid UTF-8 in a
column read as Spark ``string``, a value out of its Spark type's range, or a null in a required column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as csv
from yt.wrapper import SchemafulDsvFormat

from spyt_queue.yt.schema import YtColumn, YtSchema

#: The ``missing_value_sentinel`` we ask for: never the text of a value (see the module docstring).
NULL_SENTINEL = "\\N"
ROW_INDEX_COLUMN = "$row_index"
_BACKSLASH = pa.scalar(b"\\", pa.binary())
#: YT base types (``optional`` and ``tagged`` stripped) the DSV path carries exactly, and how ``pyarrow.csv`` reads
#: them before they take their Spark type: integers (dates and times as their integer counts), booleans, doubles,
#: strings. ``any``/``yson``, composite types, decimals, ``uuid`` and the null types stay on YSON.
_INTEGER_TYPES = {
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "interval",
    "interval64",
    "date",
    "date32",
    "datetime",
    "datetime64",
    "timestamp",
    "timestamp64",
}
_FLOAT_TYPES = {"float", "double"}
_BOOL_TYPES = {"bool", "boolean"}
_STRING_TYPES = {"string", "utf8", "json"}
DSV_TYPES = frozenset(_INTEGER_TYPES | _FLOAT_TYPES | _BOOL_TYPES | _STRING_TYPES)


def _base(type_v3: Any) -> Any:
    while isinstance(type_v3, Mapping) and type_v3.get("type_name") in ("optional", "tagged"):
        type_v3 = type_v3["item"]
    return type_v3


def dsv_unsupported_columns(schema: YtSchema) -> list[str]:
    """Names of the columns of ``schema`` that ``schemaful_dsv`` cannot carry exactly (they need YSON)."""
    return [c.name for c in schema.columns if not (isinstance(_base(c.type_v3), str) and _base(c.type_v3) in DSV_TYPES)]


def dsv_format(schema: YtSchema) -> SchemafulDsvFormat:
    """The ``schemaful_dsv`` output format of a pull: ``$row_index`` then the data columns, nulls as the sentinel."""
    return SchemafulDsvFormat(
        columns=[ROW_INDEX_COLUMN, *(c.name for c in schema.columns)],
        enable_escaping=True,
        attributes={"missing_value_mode": "print_sentinel", "missing_value_sentinel": NULL_SENTINEL},
    )


class _NotExact(Exception):
    """The DSV text cannot be turned into exactly the values YSON carries: read the pull in YSON instead."""


@dataclass(frozen=True)
class _Column:
    """How one data column is read (``read``: the type ``pyarrow.csv`` parses into) and finished into ``field``."""

    column: YtColumn
    field: pa.Field
    read: pa.DataType
    finish: Callable[[pa.Array, bool], pa.Array]


def _unescape(values: pa.Array) -> pa.Array:
    """Undo the writer's escaping of a binary column: ``\\\\`` -> ``\\``, ``\\t`` -> tab, ``\\n`` -> newline.

    Escape pairs are taken from the left (a run of backslashes pairs up from its start), so splitting on ``\\\\``
    leaves pieces whose backslashes all start a ``\\t``/``\\n``; any other backslash is not the writer's output.
    Only the values holding a backslash are rebuilt."""
    _, offsets_buffer, data = values.buffers()
    if data is None or not len(values):
        return values
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[values.offset : values.offset + len(values) + 1]
    text = np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]]
    positions = np.flatnonzero(text == ord("\\")) + offsets[0]
    if not len(positions):
        return values
    owners = np.searchsorted(offsets, positions, side="right") - 1  # ascending, as the positions are
    hits = owners[np.concatenate(([True], owners[1:] != owners[:-1]))]  # the values holding a backslash
    subset = values.take(pa.array(hits))
    pieces = pc.split_pattern(subset, "\\\\")
    flat = pc.replace_substring(pc.replace_substring(pieces.values, "\\t", "\t"), "\\n", "\n")
    if pc.any(pc.match_substring(flat, "\\")).as_py():
        raise _NotExact("an escape sequence the schemaful_dsv writer does not produce")
    rebuilt = pc.binary_join(pa.ListArray.from_arrays(pieces.offsets, flat), _BACKSLASH)
    order = np.arange(len(values))
    order[hits] = len(values) + np.arange(len(hits))
    return pa.concat_arrays([values, rebuilt.cast(values.type)]).take(pa.array(order))


def _finisher(yt_type: str, target: pa.DataType) -> tuple[pa.DataType, Callable[[pa.Array, bool], pa.Array]]:
    """(type ``pyarrow.csv`` reads, function making the Spark column from it and whether the text may hold escapes)
    for a YT base type, as the YSON path builds it (``arrow_rows.RowConverter``: dates as int32 days, datetimes as
    seconds * 10^6, timestamps as microseconds)."""
    if yt_type in _STRING_TYPES:
        # to a Spark string the cast checks UTF-8
        return pa.binary(), lambda a, escapes: (_unescape(a) if escapes else a).cast(target)
    if yt_type in _FLOAT_TYPES:

        def finish_float(a: pa.Array, escapes: bool) -> pa.Array:
            if pc.any(pc.is_nan(a)).as_py():  # the text loses a NaN's sign and payload
                raise _NotExact("NaN")
            return a.cast(target)

        return pa.float64(), finish_float
    if yt_type in _BOOL_TYPES:
        return pa.bool_(), lambda a, escapes: a
    if yt_type in ("date", "date32"):
        return pa.int32(), lambda a, escapes: a.cast(target)
    if yt_type in ("datetime", "datetime64"):
        return pa.int64(), lambda a, escapes: pc.multiply_checked(a, 1_000_000).cast(target)
    if yt_type in ("timestamp", "timestamp64"):
        return pa.int64(), lambda a, escapes: a.cast(target)
    return target, lambda a, escapes: a  # integers: parsed straight into the Spark type (out of range: a parse error)


class DsvDecoder:
    """Turns the bytes of one ``schemaful_dsv`` pull (format :func:`dsv_format`) into row indexes and a record batch
    of the data columns, or ``None`` when only YSON carries the pull's values exactly."""

    def __init__(self, yt_schema: YtSchema, arrow_schema: pa.Schema) -> None:
        """``arrow_schema``: the reader's Arrow schema (service columns, if any, are left to the caller)."""
        self.columns: list[_Column] = []
        for column in yt_schema.columns:
            field = arrow_schema.field(column.name)
            read, finish = _finisher(_base(column.type_v3), field.type)
            self.columns.append(_Column(column, field, read, finish))
        names = ["r", *(f"c{i}" for i in range(len(self.columns)))]
        self._read_options = csv.ReadOptions(column_names=names, use_threads=False, block_size=1 << 24)
        self._parse_options = csv.ParseOptions(
            delimiter="\t", quote_char=False, escape_char=False, newlines_in_values=False, ignore_empty_lines=False
        )
        self._convert_options = csv.ConvertOptions(
            column_types={"r": pa.int64(), **{f"c{i}": c.read for i, c in enumerate(self.columns)}},
            null_values=[NULL_SENTINEL],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
            true_values=["true"],
            false_values=["false"],
            check_utf8=False,
        )
        self.data_schema = pa.schema([c.field for c in self.columns])

    def decode(self, data: bytes) -> tuple[np.ndarray, pa.RecordBatch] | None:
        """(row indexes as int64, data columns) of the rows in ``data``; ``None``: read this pull in YSON."""
        if not data:
            empty = [pa.array([], f.type) for f in self.data_schema]
            return np.empty(0, dtype=np.int64), pa.RecordBatch.from_arrays(empty, schema=self.data_schema)
        if b"\r" in data:  # pyarrow.csv would end a line at a raw carriage return
            return None
        escapes = b"\\" in data  # without a backslash there is no escape (nor a null) to look for
        try:
            table = csv.read_csv(
                pa.py_buffer(data),
                read_options=self._read_options,
                parse_options=self._parse_options,
                convert_options=self._convert_options,
            )
            row_index = table.column(0).combine_chunks()
            if row_index.null_count:
                raise _NotExact("a row without $row_index")
            arrays: list[pa.Array] = []
            for position, spec in enumerate(self.columns, start=1):
                array = spec.finish(table.column(position).combine_chunks(), escapes)
                if not spec.field.nullable and array.null_count:
                    raise _NotExact(f"a null in required column {spec.column.name!r}")
                arrays.append(array)
        except (_NotExact, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        return row_index.to_numpy(), pa.RecordBatch.from_arrays(arrays, schema=self.data_schema)


def row_index_sequence(indexes: np.ndarray) -> Sequence[int]:
    """The row indexes of a pull as the reader checks them: a ``range`` when they are consecutive, else a list."""
    first, last = int(indexes[0]), int(indexes[-1])
    if last - first + 1 == len(indexes):
        return range(first, last + 1)
    return [int(i) for i in indexes]
