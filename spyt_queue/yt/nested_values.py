"""Spark values nested in YT composite columns (structs, lists, tuples, dicts, optionals) as YT expects them.

Arrow hands nested ``timestamp``/``date`` values to Python as ``datetime``/``date`` objects, which YSON can not carry.
Each is written as YT's integer form of the member type it lands in, by the same rules as a top-level column:
``timestamp``/``timestamp64`` microseconds and ``datetime``/``datetime64`` seconds (rounded down) since the epoch,
``date``/``date32`` days. An aware value (Spark ``timestamp``) keeps its instant whatever the worker's time zone; a
naive one (``timestamp_ntz``) is its wall-clock time read as UTC.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import yt.yson as yson

from spyt_queue.errors import BadRecordError

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MICRO = dt.timedelta(microseconds=1)
_SECONDS = {"datetime", "datetime64"}
_MICROS = {"timestamp", "timestamp64"}
_DAYS = {"date", "date32"}
#: Types whose YSON wire form is unsigned (the 64-bit variants are signed and reach before 1970).
_UNSIGNED = {"timestamp", "datetime", "date"}


def _instant_micros(value: dt.datetime) -> int:
    """Microseconds since the epoch: the instant of an aware value, the wall clock as UTC of a naive one."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
    return (aware - _EPOCH) // _MICRO


def _scalar(value: Any, yt_type: str) -> Any:
    converted = _temporal(value, yt_type)
    if converted is value or yt_type not in _UNSIGNED:
        return converted
    if converted < 0:
        raise BadRecordError(
            f"{value!r} is before 1970-01-01, which YT type {yt_type} can not hold: use {yt_type}"
            f"{'32' if yt_type == 'date' else '64'} in the table's schema"
        )
    return yson.YsonUint64(converted)


def _temporal(value: Any, yt_type: str) -> Any:
    if isinstance(value, dt.datetime):
        micros = _instant_micros(value)
        if yt_type in _SECONDS:
            return micros // 1_000_000
        if yt_type in _DAYS:
            return micros // 86_400_000_000
        return micros
    if isinstance(value, dt.date):
        days = (value - _EPOCH.date()).days
        if yt_type in _MICROS:
            return days * 86_400_000_000
        if yt_type in _SECONDS:
            return days * 86_400
        return days
    return value


def to_yt_value(value: Any, yt_type: Any) -> Any:
    """``value`` (from ``pyarrow``'s ``to_pylist``) with every nested date and time in YT's form for ``yt_type``."""
    if value is None:
        return None
    if isinstance(yt_type, str):
        return _scalar(value, yt_type)
    if not isinstance(yt_type, Mapping):
        return value
    name = yt_type.get("type_name")
    if name in ("optional", "tagged"):
        return to_yt_value(value, yt_type.get("item"))
    if name == "list":
        return [to_yt_value(item, yt_type.get("item")) for item in value]
    if name == "struct":
        members = yt_type.get("members") or []
        if isinstance(value, Mapping):
            return {
                key: to_yt_value(item, next((m["type"] for m in members if m.get("name") == key), None))
                for key, item in value.items()
            }
        return [to_yt_value(item, member.get("type")) for item, member in zip(value, members, strict=False)]
    if name == "tuple":
        elements = yt_type.get("elements") or []
        return [to_yt_value(item, element.get("type")) for item, element in zip(value, elements, strict=False)]
    if name == "dict":
        pairs = value.items() if isinstance(value, Mapping) else value
        key_type, value_type = yt_type.get("key"), yt_type.get("value")
        return [[to_yt_value(k, key_type), to_yt_value(v, value_type)] for k, v in pairs]
    return value


def has_temporal(yt_type: Any) -> bool:
    """Whether a date or time type occurs anywhere in ``yt_type`` (only then do values need :func:`to_yt_value`)."""
    if isinstance(yt_type, str):
        return yt_type in _SECONDS | _MICROS | _DAYS
    if not isinstance(yt_type, Mapping):
        return False
    nested = [yt_type.get("item"), yt_type.get("key"), yt_type.get("value")]
    nested += [m.get("type") for m in yt_type.get("members") or []]
    nested += [e.get("type") for e in yt_type.get("elements") or []]
    return any(has_temporal(t) for t in nested if t is not None)
