"""Timestamps and object ids in YTsaurus formats.

* A timestamp is a uint64 ``(unix_seconds << 30) | counter`` (``TimestampCounterWidth = 30``).
* An object id prints as four hex 32-bit parts ``a-b-c-d`` = ``counter_hi-counter_lo-(cell_tag << 16 | type)-hash``;
  ``yt.wrapper`` reads the object type from the low 16 bits of the third part (``object_type_from_uuid``).
* Tablet transactions carry their start timestamp as the counter (as ``MakeTabletTransactionId`` does) and type
  ``AtomicTabletTransaction`` (2): ``yt.wrapper`` treats types 1 and 4 as master transactions and refuses
  dynamic-table commands inside them.
"""

from __future__ import annotations

import random
import threading
import time

TIMESTAMP_COUNTER_WIDTH = 30
CELL_TAG = 0x10

# EObjectType values.
TYPE_TRANSACTION = 1
TYPE_ATOMIC_TABLET_TRANSACTION = 2
TYPE_NESTED_TRANSACTION = 4
TYPE_CHUNK = 100
TYPE_LOCK = 200
TYPE_TABLE = 401
TYPE_TABLET = 700

NODE_TYPE_CODES = {
    "string_node": 300,
    "int64_node": 301,
    "double_node": 302,
    "map_node": 303,
    "list_node": 304,
    "boolean_node": 305,
    "uint64_node": 306,
    "document": 307,
    "link": 417,
    "table": TYPE_TABLE,
}


def timestamp_from_time(seconds: float) -> int:
    """The smallest timestamp of the given unix second."""
    return int(seconds) << TIMESTAMP_COUNTER_WIDTH


def timestamp_to_unix(timestamp: int) -> int:
    """Unix seconds of a timestamp."""
    return timestamp >> TIMESTAMP_COUNTER_WIDTH


class TimestampGenerator:
    """Strictly increasing timestamps that follow wall-clock seconds, persisted by the caller."""

    def __init__(self, last: int = 0) -> None:
        self._last = last
        self._lock = threading.Lock()

    def generate(self) -> int:
        """A fresh timestamp, larger than every one issued before."""
        with self._lock:
            self._last = max(self._last + 1, timestamp_from_time(time.time()))
            return self._last

    @property
    def last(self) -> int:
        """The last issued timestamp (a barrier: everything committed so far is at or below it)."""
        return self._last


def format_id(counter: int, object_type: int, hash_value: int | None = None, cell_tag: int = CELL_TAG) -> str:
    """An object id string ``a-b-c-d`` (hex, no leading zeros) as YT prints GUIDs."""
    if hash_value is None:
        hash_value = random.getrandbits(32)
    parts = (
        (counter >> 32) & 0xFFFFFFFF,
        counter & 0xFFFFFFFF,
        ((cell_tag & 0xFFFF) << 16) | (object_type & 0xFFFF),
        hash_value & 0xFFFFFFFF,
    )
    return "-".join(f"{p:x}" for p in parts)


def parse_id(text: str) -> tuple[int, int, int, int]:
    """The four 32-bit parts of an id string; raises ``ValueError`` on malformed input."""
    parts = text.split("-")
    if len(parts) != 4:
        raise ValueError(f"Error parsing GUID {text!r}")
    values = tuple(int(p, 16) for p in parts)
    if any(v < 0 or v > 0xFFFFFFFF for v in values):
        raise ValueError(f"Error parsing GUID {text!r}")
    return values  # type: ignore[return-value]


def object_type_of(text: str) -> int:
    """The object type encoded in an id (``yt.wrapper``'s ``object_type_from_uuid``)."""
    return parse_id(text)[2] & 0xFFFF


def counter_of(text: str) -> int:
    """The 64-bit counter of an id (a tablet transaction's start timestamp)."""
    a, b, _, _ = parse_id(text)
    return (a << 32) | b


class IdGenerator:
    """Object ids with a monotonically increasing counter."""

    def __init__(self, start: int = 1) -> None:
        self._counter = start
        self._lock = threading.Lock()

    def generate(self, object_type: int) -> str:
        """A new id of ``object_type``."""
        with self._lock:
            self._counter += 1
            return format_id(self._counter, object_type)
