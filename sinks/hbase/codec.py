"""Spark values to HBase bytes and back: the ``spyt_hbase`` sink's documented, reversible type mapping.

Cell values follow the conventions of HBase's Java ``org.apache.hadoop.hbase.util.Bytes`` where it has one, so a
Java or HBase-shell reader decodes them with ``Bytes.toInt``/``toLong``/``toDouble``/...:

============================  =================================================================================
Spark type                    cell bytes
============================  =================================================================================
``string``                    UTF-8
``binary``                    as is
``boolean``                   1 byte: ``0xff`` true, ``0x00`` false (``Bytes.toBytes(boolean)``)
``tinyint``/``smallint``      1 / 2 bytes, big-endian two's complement
``int`` / ``bigint``          4 / 8 bytes, big-endian two's complement (``Bytes.toBytes(int/long)``)
``float`` / ``double``        4 / 8 bytes, IEEE 754 big-endian (``Bytes.toBytes(float/double)``)
``decimal(p, s)``             the plain decimal text, UTF-8 (``"12.50"``; the scale is the column's)
``date``                      4 bytes: days since 1970-01-01, big-endian
``timestamp``                 8 bytes: microseconds since 1970-01-01T00:00Z, big-endian (the exact instant)
``timestamp_ntz``             8 bytes: the wall-clock time's microseconds since 1970-01-01T00:00 (read as UTC)
============================  =================================================================================

A null writes no cell (the previous value, if any, stays: see docs/hbase.md, "Cells"). Nested types (arrays, maps,
structs) are refused: turn them into a string or binary column first (``to_json``, ``to_avro``). :func:`decode` reverses
:func:`encode` for every type above.

Row-key parts use text instead, so that keys stay readable in the shell: strings as is, numbers in decimal,
booleans ``true``/``false``, dates ``YYYY-MM-DD``, ``timestamp`` ISO 8601 in UTC with its offset
(``2024-11-03T06:30:00+00:00``, whatever the session or host time zone), ``timestamp_ntz`` its wall-clock ISO 8601
text without offset (``2024-03-10T02:30:00``), binary as is.

A key of several columns joins the parts with the separator (:func:`join_row_key`); in each part the escape byte
``\\`` becomes ``\\\\`` and the separator's first byte ``s`` becomes ``\\s``, so no two different tuples of parts give
the same key and :func:`split_row_key` recovers them. Parts holding neither byte are written as they are. A key of
one column is that column's text unchanged.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import types as T

from spyt_queue.errors import OptionError

__all__ = [
    "ESCAPE",
    "decode",
    "encode_column",
    "encoder_for",
    "epoch_micros",
    "escape_key_part",
    "join_row_key",
    "key_column",
    "key_part",
    "physical",
    "split_row_key",
    "supported",
]

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
#: The byte that escapes, in a part of a composite row key, itself and the separator's first byte.
ESCAPE = b"\\"
_STRUCTS: dict[type, str] = {
    T.ByteType: ">b",
    T.ShortType: ">h",
    T.IntegerType: ">i",
    T.LongType: ">q",
    T.FloatType: ">f",
    T.DoubleType: ">d",
}


def physical(array: pa.Array) -> list[Any]:
    """The values of an Arrow column as :func:`encoder_for` takes them: timestamps as int microseconds since the
    epoch (UTC), dates as int days, everything else as Python values (``None`` for nulls)."""
    if pa.types.is_timestamp(array.type):
        return _with_nulls(array, epoch_micros(array).tolist())
    if pa.types.is_date32(array.type):
        return array.cast(pa.int32()).to_pylist()
    return array.to_pylist()


_NUMPY: dict[type, str] = {T.ByteType: ">i1", T.ShortType: ">i2", T.IntegerType: ">i4", T.LongType: ">i8"}
_NUMPY_FLOAT: dict[type, str] = {T.FloatType: ">f4", T.DoubleType: ">f8"}
_MICROS = {"s": 1_000_000, "ms": 1000, "us": 1}


def epoch_micros(array: pa.Array) -> np.ndarray:
    """Int64 microseconds since the epoch of a timestamp column (nulls as 0; nanoseconds rounded down)."""
    values = array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    unit = array.type.unit
    return values // 1000 if unit == "ns" else values * _MICROS[unit]


def _big_endian(values: np.ndarray, dtype: str) -> list[bytes]:
    """Each value as its fixed-width big-endian bytes (``struct.pack(dtype, v)`` for all of them at once)."""
    packed = np.ascontiguousarray(values.astype(dtype, copy=False))
    return packed.view(f"V{packed.dtype.itemsize}").tolist()


def _with_nulls(array: pa.Array, encoded: list[Any]) -> list[Any]:
    if array.null_count:
        for i, valid in enumerate(array.is_valid().to_pylist()):
            if not valid:
                encoded[i] = None
    return encoded


def encode_column(array: pa.Array, data_type: T.DataType) -> list[bytes | None]:
    """Every value of an Arrow column as its cell bytes (``None`` for nulls): the bytes :func:`encoder_for` gives
    value by value, computed per column (numpy for fixed-width types) instead of per row."""
    kind = type(data_type)
    if isinstance(data_type, (T.StringType, T.BinaryType)):
        target = pa.large_binary() if pa.types.is_large_string(array.type) else pa.binary()
        return array.cast(target).to_pylist() if not pa.types.is_binary(array.type) else array.to_pylist()
    if kind in _NUMPY or kind in _NUMPY_FLOAT:
        filler = 0 if kind in _NUMPY else 0.0
        values = array.fill_null(filler).to_numpy(zero_copy_only=False)
        return _with_nulls(array, _big_endian(values, {**_NUMPY, **_NUMPY_FLOAT}[kind]))
    if isinstance(data_type, T.DateType):
        days = array.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False)
        return _with_nulls(array, _big_endian(days, ">i4"))
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return _with_nulls(array, _big_endian(epoch_micros(array), ">i8"))
    encode = encoder_for("column", data_type)
    return [None if v is None else encode(v) for v in physical(array)]


def key_column(array: pa.Array) -> list[bytes] | None:
    """The row-key part bytes (:func:`key_part`) of a whole column when they can be computed per column (strings,
    binary, integers, timestamps), else None (the caller uses :func:`key_part` value by value).

    Timestamps are taken from their microseconds, not from Python datetimes in the column's time zone (Spark hands
    ``timestamp`` columns over in the session time zone): ``timestamp`` keys are the instant in UTC, ``timestamp_ntz``
    keys the wall-clock time, whatever the session's, the JVM's or the Python worker's time zone."""
    if pa.types.is_timestamp(array.type):
        micros = epoch_micros(array).tolist()
        epoch = _EPOCH_NAIVE if array.type.tz is None else _EPOCH
        return [key_part(epoch + dt.timedelta(microseconds=m)) for m in micros]
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return array.cast(pa.large_binary() if pa.types.is_large_string(array.type) else pa.binary()).to_pylist()
    if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
        return array.to_pylist()
    if pa.types.is_integer(array.type):
        return array.cast(pa.string()).cast(pa.binary()).to_pylist()
    return None


def supported(data_type: T.DataType) -> bool:
    """Whether a column of ``data_type`` can be written."""
    return (
        isinstance(
            data_type,
            (T.StringType, T.BinaryType, T.BooleanType, T.DecimalType, T.DateType, T.TimestampType, T.TimestampNTZType),
        )
        or type(data_type) in _STRUCTS
    )


def encoder_for(name: str, data_type: T.DataType, option: str = "column") -> Callable[[Any], bytes]:
    """The function turning a non-null value of column ``name`` (as :func:`physical` gives it) into cell bytes."""
    if type(data_type) in _STRUCTS:
        packer = struct.Struct(_STRUCTS[type(data_type)]).pack
        return lambda v: packer(v)
    if isinstance(data_type, T.StringType):
        return lambda v: v.encode("utf-8")
    if isinstance(data_type, T.BinaryType):
        return bytes
    if isinstance(data_type, T.BooleanType):
        return lambda v: b"\xff" if v else b"\x00"
    if isinstance(data_type, T.DecimalType):
        return lambda v: format(v, "f").encode("ascii")
    if isinstance(data_type, T.DateType):
        return lambda v: struct.pack(">i", v)  # int days (see physical)
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return lambda v: struct.pack(">q", v)  # int microseconds (see physical)
    raise OptionError(
        option,
        f"column {name!r} has type {data_type.simpleString()}, which the HBase sink does not map to bytes; "
        "convert it to a string or binary column first (to_json, to_avro)",
    )


def decode(data: bytes, data_type: T.DataType) -> Any:
    """The Spark value :func:`encoder_for` turned into ``data`` (``timestamp`` as a UTC-aware datetime,
    ``timestamp_ntz`` as a naive wall-clock datetime)."""
    if type(data_type) in _STRUCTS:
        return struct.unpack(_STRUCTS[type(data_type)], data)[0]
    if isinstance(data_type, T.StringType):
        return data.decode("utf-8")
    if isinstance(data_type, T.BinaryType):
        return bytes(data)
    if isinstance(data_type, T.BooleanType):
        return data != b"\x00"
    if isinstance(data_type, T.DecimalType):
        return decimal.Decimal(data.decode("ascii"))
    if isinstance(data_type, T.DateType):
        return _EPOCH_DATE + dt.timedelta(days=struct.unpack(">i", data)[0])
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        epoch = _EPOCH if isinstance(data_type, T.TimestampType) else _EPOCH_NAIVE
        return epoch + dt.timedelta(microseconds=struct.unpack(">q", data)[0])
    raise TypeError(f"no HBase decoding for {data_type.simpleString()}")


def key_part(value: Any) -> bytes:
    """One row-key part as readable text bytes (see the module docstring)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, bool):
        return b"true" if value else b"false"
    if isinstance(value, dt.datetime):  # an instant in UTC; a naive (timestamp_ntz) one as its wall-clock text
        return (value if value.tzinfo is None else value.astimezone(dt.timezone.utc)).isoformat().encode("ascii")
    if isinstance(value, dt.date):
        return value.isoformat().encode("ascii")
    if isinstance(value, decimal.Decimal):
        return format(value, "f").encode("ascii")
    return str(value).encode("utf-8")


def escape_key_part(part: bytes, separator: bytes) -> bytes:
    """``part`` as it appears in a composite row key: :data:`ESCAPE` doubled, the separator's first byte preceded by
    :data:`ESCAPE`; a part holding neither is returned as is."""
    first = separator[:1]
    if ESCAPE in part:
        part = part.replace(ESCAPE, ESCAPE + ESCAPE)
    if first in part:
        part = part.replace(first, ESCAPE + first)
    return part


def join_row_key(parts: Sequence[bytes], separator: bytes) -> bytes:
    """The row key of the key-column texts ``parts``: one part as it is, several escaped
    (:func:`escape_key_part`) and joined with ``separator``, which must not start with :data:`ESCAPE`.

    Different tuples of parts give different keys, :func:`split_row_key` reverses it, and the keys of all rows
    sharing their first k parts share the prefix ``join_row_key([*first_k, b""])`` that no other key has."""
    if len(parts) == 1:
        return parts[0]
    return separator.join([escape_key_part(p, separator) for p in parts])


def split_row_key(key: bytes, separator: bytes, parts: int) -> list[bytes]:
    """The ``parts`` key-column texts :func:`join_row_key` joined into ``key`` (without a ``row_key_prefix``: strip
    the prefix and the separator after it first). ValueError for a key it can not have written."""
    if parts == 1:
        return [key]
    first, escape = separator[0], ESCAPE[0]
    out: list[bytes] = []
    current = bytearray()
    i = 0
    while i < len(key):
        byte = key[i]
        if byte == escape:
            if i + 1 == len(key):
                raise ValueError(f"row key {key!r} ends with an unpaired escape byte {ESCAPE!r}")
            current.append(key[i + 1])
            i += 2
        elif byte == first:
            if not key.startswith(separator, i):
                raise ValueError(f"row key {key!r} has an unescaped {bytes([first])!r} at byte {i} that does not "
                                 f"start the separator {separator!r}")  # fmt: skip
            out.append(bytes(current))
            current = bytearray()
            i += len(separator)
        else:
            current.append(byte)
            i += 1
    out.append(bytes(current))
    if len(out) != parts:
        raise ValueError(f"row key {key!r} has {len(out)} part(s) separated by {separator!r}, expected {parts}")
    return out
