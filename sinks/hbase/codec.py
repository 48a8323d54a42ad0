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
``timestamp``(``_ntz``)       8 bytes: microseconds since 1970-01-01 UTC, big-endian (Spark's own precision)
============================  =================================================================================

A null writes no cell (the previous value, if any, stays: see the README). Nested types (arrays, maps, structs)
are refused: turn them into a string or binary column first (``to_json``, ``to_avro``). :func:`decode` reverses
:func:`encode` for every type above.

Row-key parts use text instead, so that keys stay readable in the shell: strings as is, numbers in decimal,
booleans ``true``/``false``, dates ``YYYY-MM-DD``, timestamps ISO 8601 in UTC, binary as is.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from spyt_queue.errors import OptionError

__all__ = ["decode", "encoder_for", "key_part", "physical", "supported"]

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
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
        unit = array.type.unit
        micros = array.cast(pa.int64())
        if unit != "us":
            factor = {"s": 1_000_000, "ms": 1000, "ns": 1}[unit]
            micros = pc.multiply(micros, factor) if unit != "ns" else pc.divide(micros, 1000)
        return micros.to_pylist()
    if pa.types.is_date32(array.type):
        return array.cast(pa.int32()).to_pylist()
    return array.to_pylist()


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
    """The Spark value :func:`encoder_for` turned into ``data`` (timestamps come back as UTC-aware datetimes)."""
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
        return _EPOCH + dt.timedelta(microseconds=struct.unpack(">q", data)[0])
    raise TypeError(f"no HBase decoding for {data_type.simpleString()}")


def key_part(value: Any) -> bytes:
    """One row-key part as readable text bytes (see the module docstring)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, bool):
        return b"true" if value else b"false"
    if isinstance(value, dt.datetime):
        return value.isoformat().encode("ascii")
    if isinstance(value, dt.date):
        return value.isoformat().encode("ascii")
    if isinstance(value, decimal.Decimal):
        return format(value, "f").encode("ascii")
    return str(value).encode("utf-8")
