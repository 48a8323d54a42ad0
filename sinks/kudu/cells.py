"""Kudu cells from and to Python values: one Python type per Kudu column type, both ways, exact (decimals to 38
digits, VARCHAR lengths in code points, UNIXTIME_MICROS as UTC microseconds whatever the process's time zone), NULL
in any nullable column; a value a column can not hold is a one-line error naming the column and the value."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spyt_queue.errors import BadRecordError

from .jvm import JavaTypes, java_error

_EPOCH = dt.date(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICRO = dt.timedelta(microseconds=1)


def timestamp_micros(value: Any) -> int:
    """UTC microseconds since the epoch of an ``int`` (already micros) or a ``datetime``: an aware one is its
    instant, a naive one its wall clock taken as UTC. Exact integer arithmetic; the process's time zone is never
    consulted (a local-time conversion shifts values at DST changes and depends on the host)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
        return (aware - _EPOCH_UTC) // _MICRO
    raise TypeError(f"expected a datetime or microseconds, got {type(value).__name__}")


def datetime_from_micros(micros: int) -> dt.datetime:
    """The aware UTC ``datetime`` of UTC microseconds since the epoch (exact, any process time zone)."""
    return _EPOCH_UTC + dt.timedelta(microseconds=micros)


@dataclass
class Column:
    name: str
    index: int
    type: str  # Kudu type name, upper case: INT64, STRING, ...
    nullable: bool
    key: bool
    scale: int = 0
    schema: Any = field(default=None, repr=False)
    precision: int = 38  # DECIMAL
    length: int | None = None  # VARCHAR: the most characters (code points) a value may have


# ----------------------------------------------------------------------------------------- cells


#: Widths of Kudu's integer types: a value outside their range is refused, never wrapped.
_INT_BITS = {"INT8": 8, "INT16": 16, "INT32": 32, "INT64": 64}


def set_cell(t: JavaTypes, row: Any, col: Column, value: Any) -> None:
    """Write ``value`` into column ``col`` of a Java ``PartialRow`` (None = NULL)."""
    i = col.index
    if value is None:
        if not col.nullable:
            raise BadRecordError(f"column {col.name!r} is NOT NULL in Kudu but the row has NULL there")
        row.setNull(i)
        return
    ty = col.type
    bits = _INT_BITS.get(ty)
    if bits is not None and not isinstance(value, bool) and isinstance(value, int):
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if not low <= value <= high:  # JPype would wrap it silently (2**40 into an INT32 stores 0)
            raise BadRecordError(
                f"value {value!r} does not fit Kudu column {col.name!r} ({ty}): outside [{low}, {high}]"
            )
    try:
        if ty == "INT64":
            row.addLong(i, t.JLong(value))
        elif ty == "STRING":
            row.addString(i, str(value))
        elif ty == "INT32":
            row.addInt(i, t.JInt(value))
        elif ty == "DOUBLE":
            row.addDouble(i, t.JDouble(value))
        elif ty == "UNIXTIME_MICROS":
            row.addLong(i, t.JLong(timestamp_micros(value)))
        elif ty == "BOOL":
            row.addBoolean(i, t.JBoolean(bool(value)))
        elif ty == "INT16":
            row.addShort(i, t.JShort(value))
        elif ty == "INT8":
            row.addByte(i, t.JByte(value))
        elif ty == "FLOAT":
            row.addFloat(i, t.JFloat(value))
        elif ty == "BINARY":
            row.addBinary(i, t.ByteArray(bytes(value)))
        elif ty == "DECIMAL":
            row.addDecimal(i, t.BigDecimal(str(_decimal(value, col))))
        elif ty == "VARCHAR":
            text = value if isinstance(value, str) else str(value)
            if col.length is not None and len(text) > col.length:  # Kudu would truncate it, without a word
                raise BadRecordError(
                    f"value {_shown(text)} ({len(text)} characters) is longer than Kudu column {col.name!r} "
                    f"VARCHAR({col.length}) allows: shorten it, or widen the column"
                )
            if col.length is None or len(text.encode("utf-16-le")) <= 2 * col.length:
                row.addVarchar(i, text)
            else:  # addVarchar cuts at n UTF-16 units, splitting surrogate pairs: n characters above U+FFFF do not
                # pass it whole. The length was checked above in code points, as Kudu counts it.
                t.add_var_length_data(row, t.JInt(i), t.ByteArray(text.encode("utf-8")))
        elif ty == "DATE":
            days = (value - _EPOCH).days if isinstance(value, dt.date) else int(value)
            row.addDate(i, t.SqlDate.valueOf(t.LocalDate.ofEpochDay(days)))
        else:  # pragma: no cover - a type added to Kudu after 1.18
            raise BadRecordError(f"column {col.name!r} has Kudu type {ty}, which spyt-queue does not map")
    except (TypeError, OverflowError, ValueError, decimal.InvalidOperation) as exc:
        raise BadRecordError(
            f"value {_shown(value)} does not fit Kudu column {col.name!r} ({_type_name(col)}): {exc}"
        ) from None
    except t.jpype.JException as exc:
        raise BadRecordError(
            f"value {_shown(value)} does not fit Kudu column {col.name!r} ({_type_name(col)}): {java_error(exc)}"
        ) from None


def _shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` for an error message, cut after ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} characters of repr)"


def _type_name(col: Column) -> str:
    """``INT32``, ``DECIMAL(38, 2)``, ``VARCHAR(5)``: a column's type for messages."""
    if col.type == "DECIMAL":
        return f"DECIMAL({col.precision}, {col.scale})"
    if col.type == "VARCHAR" and col.length is not None:
        return f"VARCHAR({col.length})"
    return col.type


def cell_writer(t: JavaTypes, col: Column) -> Callable[[Any, Any], None]:
    """A writer of column ``col``'s cells into a Java ``PartialRow``: the column's common Python type (``int`` for
    INT64/INT32 within range, ``str`` for STRING, ``float`` for DOUBLE, ``bool`` for BOOL) goes straight to Kudu;
    anything else (None, another type, a value out of range, a failed call) goes through :func:`set_cell`, which
    checks it and names the fault. The sink writes every cell through one of these."""
    i, ty = col.index, col.type

    def checked(row: Any, value: Any) -> None:
        set_cell(t, row, col, value)

    if ty == "INT64" or ty == "INT32":
        box, low, high = (t.JLong, -(1 << 63), (1 << 63) - 1) if ty == "INT64" else (t.JInt, -(1 << 31), (1 << 31) - 1)
        add = t.PartialRow.addLong if ty == "INT64" else t.PartialRow.addInt  # unbound: no method lookup per cell

        def write_int(row: Any, value: Any) -> None:
            if type(value) is int and low <= value <= high:
                try:
                    add(row, i, box(value))
                    return
                except Exception:  # the checked path below names the fault
                    pass
            checked(row, value)

        return write_int
    p = t.PartialRow
    fast = {"STRING": (str, p.addString, None), "DOUBLE": (float, p.addDouble, t.JDouble),
            "BOOL": (bool, p.addBoolean, t.JBoolean)}.get(ty)  # fmt: skip
    if fast is None:
        return checked
    kind, method, boxer = fast

    def write(row: Any, value: Any) -> None:
        if type(value) is kind:
            try:
                method(row, i, value if boxer is None else boxer(value))
                return
            except Exception:  # the checked path below names the fault
                pass
        checked(row, value)

    return write


def _decimal(value: Any, col: Column) -> decimal.Decimal:
    """``value`` as a Decimal with exactly the column's scale; a value the column cannot hold exactly (more decimal
    places than its scale, more integer digits than precision - scale) is a ValueError. Computed in a local context
    wide enough for any value that fits (the process's context, 28 digits by default, is neither used nor changed)."""
    d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
    if not d.is_finite():
        raise ValueError("not a finite number")
    integer_digits = max(d.adjusted() + 1, 0)
    if integer_digits > col.precision - col.scale:
        raise ValueError(
            f"{integer_digits} digits before the point, the column holds {col.precision - col.scale} "
            f"(DECIMAL({col.precision}, {col.scale}))"
        )
    context = decimal.Context(prec=col.precision + 2, traps=[decimal.InvalidOperation])
    q = d.quantize(decimal.Decimal(1).scaleb(-col.scale, context=context), context=context)
    if q != d:  # Decimal comparison is exact
        raise ValueError(f"more than {col.scale} decimal places")
    return q


def get_cell(t: JavaTypes, res: Any, col: Column) -> Any:
    """Read column ``col`` of a Java ``RowResult`` (None for NULL)."""
    i = col.index
    if col.nullable and res.isNull(i):
        return None
    ty = col.type
    if ty in ("INT64", "INT32", "INT16", "INT8"):
        return int({"INT64": res.getLong, "INT32": res.getInt, "INT16": res.getShort, "INT8": res.getByte}[ty](i))
    if ty == "STRING":
        return str(res.getString(i))
    if ty == "UNIXTIME_MICROS":
        return datetime_from_micros(int(res.getLong(i)))
    if ty in ("DOUBLE", "FLOAT"):
        return float(res.getDouble(i) if ty == "DOUBLE" else res.getFloat(i))
    if ty == "BOOL":
        return bool(res.getBoolean(i))
    if ty == "BINARY":
        return bytes(res.getBinaryCopy(i))
    if ty == "DECIMAL":
        return decimal.Decimal(str(res.getDecimal(i).toPlainString()))
    if ty == "VARCHAR":
        return str(res.getVarchar(i))
    if ty == "DATE":
        return _EPOCH + dt.timedelta(days=int(res.getDate(i).toLocalDate().toEpochDay()))
    raise BadRecordError(f"column {col.name!r} has Kudu type {ty}, which spyt-queue does not map")  # pragma: no cover


def boxed(t: JavaTypes, col: Column, value: Any) -> Any:
    """A boxed Java value for a predicate on ``col`` (the Java client's in-list takes boxed values)."""
    ty = col.type
    if ty in ("INT64", "UNIXTIME_MICROS"):
        return t.Long(t.JLong(timestamp_micros(value) if ty == "UNIXTIME_MICROS" else value))
    if ty == "INT32":
        return t.Integer(t.JInt(value))
    if ty == "INT16":
        return t.Short(t.JShort(value))
    if ty == "INT8":
        return t.Byte(t.JByte(value))
    if ty in ("STRING", "VARCHAR"):
        return t.String(str(value))
    if ty == "BOOL":
        return t.Boolean(t.JBoolean(bool(value)))
    if ty == "DOUBLE":
        return t.Double(t.JDouble(value))
    if ty == "FLOAT":
        return t.Float(t.JFloat(value))
    if ty == "BINARY":
        return t.ByteArray(bytes(value))
    if ty == "DECIMAL":
        return t.BigDecimal(str(_decimal(value, col)))
    if ty == "DATE":
        days = (value - _EPOCH).days if isinstance(value, dt.date) else int(value)
        return t.SqlDate.valueOf(t.LocalDate.ofEpochDay(days))
    raise BadRecordError(f"no predicate for Kudu type {ty} (column {col.name!r})")  # pragma: no cover
