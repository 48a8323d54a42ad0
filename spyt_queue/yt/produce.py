"""JSON lines into a YT queue (``ytqueue produce``): each line one row, checked against the queue's schema, then
inserted in batches (one tablet transaction per batch).

A line is a JSON object whose keys are the queue's columns (and optionally ``$tablet_index``). Values are checked
before anything of their batch is sent, so a bad line stops the run naming its line number and the column at fault;
the batches before it are written, the one holding it is not. Value rules per YT type:

* integers (``int8`` ... ``uint64``, ``interval``): JSON integers in the type's range;
* ``float``/``double``: JSON numbers; ``bool``/``boolean``: ``true``/``false``;
* ``string``/``utf8``: JSON strings; ``json``: any JSON value (stored as its JSON text);
* ``date`` (days), ``datetime`` (seconds), ``timestamp`` (microseconds) and their ``64`` variants: the integer YT
  stores, or an ISO 8601 text (``2026-01-31``, ``2026-01-31T12:00:00Z``; an instant needs its UTC offset);
* ``yson``/``any`` and composite types (``list``, ``struct``, ``decimal``, ...): passed to YT as they are;
* a missing key or ``null`` is a null, refused for a required column.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from spyt_queue.yt.schema import YtColumn, YtSchema

TABLET_INDEX = "$tablet_index"
#: Rows per ``insert_rows`` call (one tablet transaction; YT's default ``max_rows_per_transaction`` is 100,000).
DEFAULT_BATCH_ROWS = 10_000

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
    "interval": (-(2**63), 2**63 - 1),
    "interval64": (-(2**63), 2**63 - 1),
}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_TEMPORAL = {"date", "date32", "datetime", "datetime64", "timestamp", "timestamp64"}


class ProduceError(ValueError):
    """A line of the input that cannot become a row of the queue; the message names the line and the column."""


class BatchInsertError(Exception):
    """YT refused the insert of lines ``first_line``..``last_line`` (none of them was written); ``written`` says
    what earlier batches wrote and how to resume. The cause is YT's error."""

    def __init__(self, first_line: int, last_line: int, written: str) -> None:
        self.first_line, self.last_line, self.written = first_line, last_line, written
        super().__init__(f"lines {first_line}-{last_line} were not written; {written}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _shown(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _temporal(value: Any, type_name: str) -> int:
    """The integer YT stores for a ``date``/``datetime``/``timestamp`` value given as an integer or ISO 8601 text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected an integer or ISO 8601 text, got {_kind(value)} {_shown(value)}")
    if type_name.startswith("date") and not type_name.startswith("datetime"):
        try:
            return (dt.date.fromisoformat(value) - dt.date(1970, 1, 1)).days
        except ValueError:
            raise ValueError(f"expected a date YYYY-MM-DD or days since 1970-01-01, got {_shown(value)}") from None
    try:
        instant = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"expected an ISO 8601 instant such as 2026-01-31T12:00:00Z, got {_shown(value)}") from None
    if instant.tzinfo is None:
        raise ValueError(f"{_shown(value)} has no UTC offset: add Z or +hh:mm (an instant must say its zone)")
    micros = (instant - _EPOCH) // dt.timedelta(microseconds=1)
    return micros if type_name.startswith("timestamp") else micros // 1_000_000


def convert_value(value: Any, column: YtColumn) -> Any:
    """``value`` (decoded JSON) as the value to insert into ``column``; ``ValueError`` says what was expected."""
    if value is None:
        if column.required:
            raise ValueError("is required (the schema says required=true) but the line has null or no value")
        return None
    base = column.base_type
    while isinstance(base, dict) and base.get("type_name") == "tagged":
        base = base["item"]
    if not isinstance(base, str):
        return value  # composite and decimal types: YT checks them
    if base in _INT_RANGES:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"expected an integer ({base}), got {_kind(value)} {_shown(value)}")
        low, high = _INT_RANGES[base]
        if not low <= value <= high:
            raise ValueError(f"{value} is out of the range of {base} [{low}, {high}]")
        if base.startswith("uint"):
            from yt.yson import YsonUint64

            return YsonUint64(value)
        return value
    if base in ("float", "double"):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError(f"expected a number ({base}), got {_kind(value)} {_shown(value)}")
        return float(value)
    if base in ("bool", "boolean"):
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {_kind(value)} {_shown(value)}")
        return value
    if base in ("string", "utf8"):
        if not isinstance(value, str):
            raise ValueError(
                f"expected a string ({base}), got {_kind(value)} {_shown(value)}; quote it to store its text"
            )
        return value
    if base == "json":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if base in _TEMPORAL:
        return _temporal(value, base)
    if base in ("null", "void"):
        raise ValueError(f"a {base} column holds only null, got {_shown(value)}")
    return value  # yson/any, uuid: YT checks them


@dataclass
class RowMaker:
    """Turns JSON lines into rows for one queue: its schema, its tablet count and where rows without a
    ``$tablet_index`` go (``tablet``, or round-robin over the tablets when ``None``)."""

    path: str
    schema: YtSchema
    tablet_count: int
    tablet: int | None = None
    _next: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.tablet is not None and not 0 <= self.tablet < self.tablet_count:
            raise ProduceError(
                f"--tablet {self.tablet} is out of range: {self.path} has {self.tablet_count} tablet(s), "
                f"0..{self.tablet_count - 1}"
            )

    def row(self, text: str, number: int) -> dict[str, Any]:
        """The row of line ``number`` (``text``), checked against the schema."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ProduceError(f"line {number}, character {error.colno}: not valid JSON ({error.msg})") from None
        if not isinstance(data, dict):
            raise ProduceError(f'line {number}: expected a JSON object {{"column": value, ...}}, got {_kind(data)}')
        columns = {c.name: c for c in self.schema.columns}
        unknown = [key for key in data if key not in columns and key != TABLET_INDEX]
        if unknown:
            raise ProduceError(
                f"line {number}, column {unknown[0]!r}: not a column of {self.path} (its columns: {', '.join(columns)})"
            )
        row: dict[str, Any] = {}
        for name, column in columns.items():
            try:
                value = convert_value(data.get(name), column)
            except ValueError as error:
                raise ProduceError(f"line {number}, column {name!r}: {error}") from None
            if value is not None:
                row[name] = value
        row[TABLET_INDEX] = self._tablet_of(data.get(TABLET_INDEX, self.tablet), number)
        return row

    def _tablet_of(self, given: Any, number: int) -> int:
        if given is None:
            index = self._next
            self._next = (self._next + 1) % self.tablet_count
            return index
        if not isinstance(given, int) or isinstance(given, bool) or not 0 <= given < self.tablet_count:
            raise ProduceError(
                f"line {number}, column '{TABLET_INDEX}': expected a tablet index 0..{self.tablet_count - 1} "
                f"({self.path} has {self.tablet_count} tablet(s)), got {_shown(given)}"
            )
        return given


@dataclass
class ProduceReport:
    """What a run wrote: rows per tablet, and the last line read."""

    rows: int = 0
    lines: int = 0
    per_tablet: dict[int, int] = field(default_factory=dict)


def produce(
    lines: Iterable[str | bytes],
    maker: RowMaker,
    insert: Callable[[list[dict[str, Any]]], None],
    batch_rows: int = DEFAULT_BATCH_ROWS,
    progress: Callable[[ProduceReport], None] | None = None,
    progress_interval_s: float = 2.0,
) -> ProduceReport:
    """Insert the rows of ``lines`` (text or UTF-8 bytes; blank lines skipped) with ``insert``, ``batch_rows`` at
    a time.

    A bad line raises :class:`ProduceError` saying which lines were written before it (the batches before the one
    holding it) and how to resume. ``progress`` is called at most every ``progress_interval_s`` seconds.
    """
    report = ProduceReport()
    batch: list[dict[str, Any]] = []
    batch_first = 1
    last_progress = time.monotonic()

    def flush(last: bool = False) -> None:
        nonlocal last_progress
        if not batch:
            return
        try:
            insert(batch)
        except Exception as error:
            raise BatchInsertError(batch_first, report.lines, _written(report, batch_first)) from error
        report.rows += len(batch)
        for row in batch:
            report.per_tablet[row[TABLET_INDEX]] = report.per_tablet.get(row[TABLET_INDEX], 0) + 1
        batch.clear()
        if progress is not None and not last and time.monotonic() - last_progress >= progress_interval_s:
            progress(report)
            last_progress = time.monotonic()

    for number, raw in enumerate(lines, 1):
        report.lines = number
        if not batch:
            batch_first = number
        try:
            text = _text(raw, number)
            if not text.strip():
                continue
            batch.append(maker.row(text, number))
        except ProduceError as error:
            raise ProduceError(f"{error}; {_written(report, batch_first)}") from None
        if len(batch) >= batch_rows:
            flush()
    flush(last=True)  # the caller reports the total
    return report


def _text(line: str | bytes, number: int) -> str:
    """Line ``number`` as text without its line end."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ProduceError(f"line {number}, byte {error.start + 1}: not UTF-8 text") from None
    return line.rstrip("\r\n")


def _written(report: ProduceReport, first_unwritten: int) -> str:
    """What was written before a failure and how to go on from the first line that was not."""
    if not report.rows:
        return "nothing was written"
    return (
        f"{report.rows} row(s) from the lines before line {first_unwritten} were written; "
        f"resume from line {first_unwritten} (e.g. tail -n +{first_unwritten} FILE)"
    )
