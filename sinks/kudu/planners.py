"""Planners of the Kudu sink: pure functions from the rows of ONE key to the :class:`Mutation` s that store them.

A planner never reads or writes Kudu and never reads a clock: the sink fetches the existing rows of the keys of a
batch (one scan per task), calls :func:`plan_batch`, and applies the mutations. The value of the ``last_updated``
column comes from the caller (``now``, e.g. the batch time), so planning is deterministic.

Every planner makes a replayed batch write nothing, or write the same rows again (``upsert``): planning a batch
again against the table state after it was applied yields no mutation (see each class for its exact guarantee).
Arrival order within a key is the order of ``arriving``; it only decides between two versions with the same event
time and different values (the later arrival wins, as a correction).

Planners: ``append`` (:class:`AppendPlanner`), ``upsert`` (:class:`UpsertPlanner`), ``latest`` (Type I,
:class:`LatestPlanner`), ``history`` (Type II, :class:`HistoryPlanner`). :func:`planner_from_options` builds one
from the sink's string options.
"""

from __future__ import annotations

import abc
import bisect
import copy
import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from spyt_queue.errors import BadRecordError, OptionError

from .mutations import Key, KeyConflictError, Mutation, MutationKind, Row, format_key, key_of, same_value

__all__ = [
    "AppendPlanner",
    "HistoryPlanner",
    "LatestPlanner",
    "Planner",
    "UpsertPlanner",
    "group_rows",
    "plan_batch",
    "plan_groups",
    "planner_from_options",
]

INT64_MAX = 2**63 - 1


class Planner(abc.ABC):
    """Plans the mutations of one key. Subclasses are immutable after construction and safe to share."""

    name: str = ""
    needs_existing: bool = True
    """False when :meth:`plan` ignores ``existing``, so the sink can skip the scan."""

    def __init__(self, key: Sequence[str], last_updated: str | None) -> None:
        if isinstance(key, str) or not key:
            raise OptionError("planner.key", f"the {self.name} planner needs a non-empty list of key columns")
        self.key: tuple[str, ...] = tuple(key)
        self.last_updated = last_updated

    @property
    def primary_key(self) -> tuple[str, ...]:
        """The primary key of the Kudu table this planner writes (the natural key, plus effective-from for
        ``history``)."""
        return self.key

    def plan(self, arriving: Sequence[Row], existing: Sequence[Row], now: Any = None) -> list[Mutation]:
        """The mutations that store ``arriving`` (rows of one key, in arrival order) over ``existing`` (the stored
        rows of that key). ``now`` is the ``last_updated`` value, required when that column is configured."""
        if not arriving:
            return []
        return self.plan_key(self._one_key(arriving), arriving, existing, now)

    @abc.abstractmethod
    def plan_key(self, key: Key, arriving: Sequence[Row], existing: Sequence[Row], now: Any = None) -> list[Mutation]:
        """:meth:`plan` for rows already known to be of ``key`` (not NULL), at least one (what
        :func:`plan_groups` calls: the rows were grouped once for the whole batch)."""

    def plan_all(
        self, groups: Mapping[Key, Sequence[Row]], stored: Mapping[Key, Sequence[Row]], now: Any = None
    ) -> list[Mutation]:
        """:meth:`plan_key` of every group over its stored rows, concatenated in the order of ``groups``."""
        out: list[Mutation] = []
        plan_key = self.plan_key
        for k, rows in groups.items():
            out.extend(plan_key(k, rows, stored.get(k, ()), now))
        return out

    def repair(self, key: Key, existing: Sequence[Row], now: Any = None) -> list[Mutation]:
        """The mutations that make ``key``'s stored rows (``existing``, maybe left half-written by a flush that
        refused some of the key's mutations and applied the others) consistent again. Only planners with
        :attr:`repairs` set write more than one row per key; the others write nothing here."""
        return []

    repairs: bool = False
    """True when a refused mutation can leave a key half-written, so the sink calls :meth:`repair` after one."""

    def check_row(self, key: Key, row: Row) -> None:
        """Raise :class:`BadRecordError` naming the fault when ``row`` (of ``key``) can never be planned whatever the
        other rows (a NULL event time...). The sink diverts such a row alone to a dead-letter target and plans the
        key's other rows; without a target, planning the key raises the same error."""
        return None

    # helpers shared by the planners

    def _stamp(self, row: dict[str, Any], now: Any) -> dict[str, Any]:
        if self.last_updated is not None:
            if now is None:
                raise OptionError(
                    "planner.last_updated",
                    f"column {self.last_updated!r} is maintained, so the caller must pass now= (the batch time)",
                )
            row[self.last_updated] = now
        return row

    def _one_key(self, arriving: Sequence[Row]) -> Key:
        keys = {key_of(r, self.key) for r in arriving}
        if len(keys) != 1:
            raise BadRecordError(f"{self.name} planner: plan() takes the rows of one key, got keys {sorted(keys)!r}")
        k = next(iter(keys))
        if any(v is None for v in k):
            raise BadRecordError(f"{self.name} planner: NULL in a key column ({format_key(self.key, k)})")
        return k

    def _differs(self, arriving: Row, stored: Row, values: Iterable[str]) -> bool:
        return any(not same_value(arriving.get(c), stored.get(c)) for c in values)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key={list(self.key)!r})"


class AppendPlanner(Planner):
    """``append``: INSERT every row; the key is the table's whole primary key.

    Replay guarantee: a row whose key is already stored (or already planned in this batch) with the same values
    writes nothing, so a replayed batch is a no-op. The guarantee holds when the key identifies a source record
    (e.g. it includes the source coordinates, partition and offset). A different value under an existing key is a
    :class:`KeyConflictError` naming the key: ``append`` never overwrites.
    """

    name = "append"

    def __init__(self, key: Sequence[str], *, last_updated: str | None = None) -> None:
        super().__init__(key, last_updated)

    def plan_key(self, k: Key, arriving: Sequence[Row], existing: Sequence[Row], now: Any = None) -> list[Mutation]:
        """One INSERT for a new key, nothing for a replayed one; a conflicting value raises."""
        if len(existing) > 1:
            raise KeyConflictError(f"append planner: {len(existing)} stored rows for {format_key(self.key, k)}")
        first = arriving[0]
        values = [c for c in first if c != self.last_updated]
        for other in arriving[1:]:
            if self._differs(other, first, {*values, *(c for c in other if c != self.last_updated)}):
                raise KeyConflictError(f"append planner: two different rows in one batch for {format_key(self.key, k)}")
        if existing:
            if self._differs(first, existing[0], values):
                raise KeyConflictError(
                    f"append planner: {format_key(self.key, k)} is stored with other values; append never "
                    "overwrites (use the upsert, latest or history planner)"
                )
            return []
        return [Mutation.owned(MutationKind.INSERT, self._stamp(dict(first), now))]


class UpsertPlanner(Planner):
    """``upsert``: one UPSERT per key with the last arriving row (arrival order); ignores the stored rows.

    Replay guarantee: a replayed batch writes the same rows again, so the state is the same (``last_updated``
    aside, when ``now`` differs). No event time: an out-of-order arrival overwrites a newer stored row (use
    ``latest`` for that).
    """

    name = "upsert"
    needs_existing = False

    def __init__(self, key: Sequence[str], *, last_updated: str | None = None) -> None:
        super().__init__(key, last_updated)

    def plan_key(
        self, k: Key, arriving: Sequence[Row], existing: Sequence[Row] = (), now: Any = None
    ) -> list[Mutation]:
        """An UPSERT of the last arriving row."""
        return [Mutation.owned(MutationKind.UPSERT, self._stamp(dict(arriving[-1]), now))]

    def plan_all(
        self, groups: Mapping[Key, Sequence[Row]], stored: Mapping[Key, Sequence[Row]], now: Any = None
    ) -> list[Mutation]:
        """One UPSERT per key (:meth:`plan_key` without a list per key: this planner does no other work)."""
        upsert, owned, stamp = MutationKind.UPSERT, Mutation.owned, self._stamp
        return [owned(upsert, stamp(dict(rows[-1]), now)) for rows in groups.values()]


class _EventTimePlanner(Planner):
    """Shared configuration of ``latest`` and ``history``: an event-time column and the value columns."""

    def __init__(
        self, key: Sequence[str], event_time: str, values: Sequence[str] | None, last_updated: str | None
    ) -> None:
        super().__init__(key, last_updated)
        if not event_time:
            raise OptionError("planner.event_time", f"the {self.name} planner needs an event-time column")
        if event_time in self.key:
            raise OptionError("planner.event_time", f"{event_time!r} is a key column")
        self.event_time = event_time
        self.values: tuple[str, ...] | None = None if values is None else tuple(values)

    def _maintained(self) -> set[str]:
        return {*self.key, *([self.last_updated] if self.last_updated else [])}

    def _value_columns(self, row: Row) -> Iterable[str]:
        if self.values is not None:
            return self.values
        maintained = self._maintained()
        return [c for c in row if c not in maintained]

    def check_row(self, key: Key, row: Row) -> None:
        """A row needs an integer, date or timestamp event time (not NULL)."""
        self._time(row, key)

    def _time(self, row: Row, k: Key, column: str | None = None) -> Any:
        column = column or self.event_time
        if column not in row:
            raise BadRecordError(f"{self.name} planner: row of {format_key(self.key, k)} has no column {column!r}")
        t = row[column]
        if t is None:
            raise BadRecordError(
                f"{self.name} planner: NULL in event-time column {column!r} ({format_key(self.key, k)})"
            )
        if isinstance(t, bool) or not isinstance(t, (int, dt.date)):
            raise BadRecordError(
                f"{self.name} planner: event time {column!r}={t!r} of {format_key(self.key, k)} is not an integer, "
                "date or timestamp"
            )
        return t


class LatestPlanner(_EventTimePlanner):
    """``latest`` (Type I, event-time upsert): one row per key holding its newest version by event time.

    * The newest arriving row of the key wins (on equal event times, the later arrival); no stored row → INSERT.
    * Stored event time newer than the arrival → nothing (a stale arrival). A stored NULL event time counts as
      older than any arrival.
    * Same or newer and any value column differs → UPDATE with the arriving columns; same values → nothing.
    * ``last_updated`` (if configured) is set to ``now`` on every written row.

    Value columns default to every arriving column except the key and ``last_updated``, the event time included: a
    newer version with the same payload moves the stored event time forward, so a version that arrives later but
    happened in between stays stale (state independent of arrival order). Listing ``values`` without the event
    time restores the nrtkudu rule (a newer identical version writes nothing).

    Replay guarantee: a replayed batch writes nothing.
    """

    name = "latest"

    def __init__(
        self,
        key: Sequence[str],
        *,
        event_time: str = "event_time",
        values: Sequence[str] | None = None,
        last_updated: str | None = "last_updated",
    ) -> None:
        super().__init__(key, event_time, values, last_updated)

    def plan_key(self, k: Key, arriving: Sequence[Row], existing: Sequence[Row], now: Any = None) -> list[Mutation]:
        """At most one INSERT or UPDATE for the key."""
        if len(existing) > 1:
            raise KeyConflictError(f"latest planner: {len(existing)} stored rows for {format_key(self.key, k)}")
        newest, newest_t = arriving[0], self._time(arriving[0], k)
        for row in arriving[1:]:
            t = self._time(row, k)
            if _later_or_same(t, newest_t, self, k):
                newest, newest_t = row, t
        if not existing:
            return [Mutation.owned(MutationKind.INSERT, self._stamp(dict(newest), now))]
        stored = existing[0]
        stored_t = stored.get(self.event_time)
        if stored_t is not None and not _later_or_same(newest_t, stored_t, self, k):
            return []
        if not self._differs(newest, stored, self._value_columns(newest)):
            return []
        row = {c: stored[c] for c in self.key}
        row.update(newest)
        return [Mutation.owned(MutationKind.UPDATE, self._stamp(row, now))]


class HistoryPlanner(_EventTimePlanner):
    """``history`` (Type II): every version of a key as a row effective from its event time until just before the
    next version, the last one flagged current.

    Table primary key: the natural key plus ``effective_from`` (by default the event-time column itself).
    Maintained columns: ``effective_to`` (the preceding time of the next version, or ``far_future``), the current
    flag (``current_true`` on the last version, ``current_false`` on the others) and ``last_updated`` (``now``,
    on every inserted or updated row). Any of these three can be switched off with ``None``.

    Each arriving row, in arrival order, against the versions stored or planned so far:

    * same event time as a version and a value column differs → that version's values are replaced in place
      (a correction; compared by value, not by identity);
    * same event time and same values → nothing (a replay);
    * otherwise, if the version in force at that time (the latest one before it) has the same values → nothing
      (an identical later version adds nothing);
    * otherwise a new version (earlier than all, between two, or after all: cases 2-4 of the 5-case walk).

    After each arriving row the versions it changed are merged with equal neighbours: a version whose values equal
    the version before it is part of that one (a new version equal to the next one takes the next one's place;
    the stored row of a merged version is DELETEd). The stored history is thus always in merged form: no two
    consecutive versions with the same values. Effective-to and the current flag are then recomputed over the
    sorted versions and only rows that changed are written: at most one INSERT, UPDATE or DELETE per row. Stored
    versions that no arriving row changed are never merged (a table written with other ``values`` keeps its rows).

    Value columns default to every arriving column except the key, the event time and the maintained columns. The
    final state is the merged form of the version set, whatever the arrival order and batch boundaries (10:A, 20:A,
    30:B in any order: 10..29 A, 30.. B), as long as a key's values never come back to an earlier value after
    another one (A, B, A): merging forgets the merged version's time, so A at 10 and 20 stored as one row, then B at
    15, gives 10..14 A, 15.. B, where arriving in time order keeps 20..  A. List the event-time column in ``values``
    to keep every version and make the state order-independent for any input.

    Preceding time: ``t - 1`` for integers, ``t - 1 µs`` for timestamps (Kudu's precision), ``t - 1 day`` for
    dates, unless ``preceding`` is given. ``far_future`` defaults to ``2**63 - 1`` for integers (Kudu's INT64 max;
    the sink sets the max of the effective-to column's type, e.g. ``2**31 - 1`` for INT32, see
    :meth:`with_far_future`), 9999-12-31 for dates and timestamps (same time zone as the event time).

    Replay guarantee: a replayed batch writes nothing.
    """

    name = "history"

    def __init__(
        self,
        key: Sequence[str],
        *,
        event_time: str = "event_time",
        values: Sequence[str] | None = None,
        effective_from: str | None = None,
        effective_to: str | None = "effective_to",
        current_flag: str | None = "is_current",
        current_true: Any = True,
        current_false: Any = False,
        last_updated: str | None = "last_updated",
        far_future: Any = None,
        preceding: Callable[[Any], Any] | None = None,
    ) -> None:
        super().__init__(key, event_time, values, last_updated)
        self.effective_from = effective_from or event_time
        self.effective_to = effective_to
        self.current_flag = current_flag
        self.current_true = current_true
        self.current_false = current_false
        self.far_future = far_future
        self.preceding = preceding
        if current_flag is not None and same_value(current_true, current_false):
            raise OptionError("planner.current_flag.true", "the current flag needs two different values")
        names = [c for c in (self.effective_from, effective_to, current_flag, last_updated) if c]
        for c in names:
            if c in self.key:
                raise OptionError("planner.key", f"{c!r} is maintained by the history planner, not a key column")
        if len(set(names)) != len(names):
            raise OptionError("planner.effective_to", f"maintained columns must differ, got {names!r}")

    @property
    def primary_key(self) -> tuple[str, ...]:
        """The natural key plus the effective-from column."""
        return (*self.key, self.effective_from)

    def _maintained(self) -> set[str]:
        return {
            *self.key,
            self.event_time,
            *(c for c in (self.effective_from, self.effective_to, self.current_flag, self.last_updated) if c),
        }

    def _preceding(self, t: Any) -> Any:
        if self.preceding is not None:
            return self.preceding(t)
        if isinstance(t, dt.datetime):
            return t - dt.timedelta(microseconds=1)
        if isinstance(t, dt.date):
            return t - dt.timedelta(days=1)
        return t - 1

    def with_far_future(self, far_future: Any) -> HistoryPlanner:
        """A copy of this planner whose current versions end at ``far_future`` (this one is unchanged)."""
        other = copy.copy(self)
        other.far_future = far_future
        return other

    def _far_future(self, t: Any) -> Any:
        if self.far_future is not None:
            if _time_kind(self.far_future) != _time_kind(t):
                raise OptionError(
                    "planner.far_future",
                    f"{self.far_future!r} is a {type(self.far_future).__name__}, event time {self.event_time!r} "
                    f"a {type(t).__name__}",
                )
            return self.far_future
        if isinstance(t, dt.datetime):
            return dt.datetime(9999, 12, 31, tzinfo=t.tzinfo)
        if isinstance(t, dt.date):
            return dt.date(9999, 12, 31)
        return INT64_MAX

    def plan_key(self, k: Key, arriving: Sequence[Row], existing: Sequence[Row], now: Any = None) -> list[Mutation]:
        """INSERTs of new versions and UPDATEs of corrected or re-bounded ones."""
        return self._plan(k, arriving, existing, now)

    repairs = True

    def repair(self, key: Key, existing: Sequence[Row], now: Any = None) -> list[Mutation]:
        """The effective-to and current flag of every stored version of ``key``, recomputed. A flush that applied
        the UPDATE closing the current version and refused the INSERT of the new one left the key without a
        current version; this reopens the last stored one. The versions that were written stay."""
        return self._plan(key, [], existing, now)

    def _plan(self, k: Key, arriving: Sequence[Row], existing: Sequence[Row], now: Any) -> list[Mutation]:
        versions: dict[Any, dict[str, Any]] = {}
        stored: dict[Any, Row] = {}
        for row in existing:
            t = self._time(row, k, self.effective_from)
            if t in stored:
                raise KeyConflictError(f"history planner: two stored versions at {t!r} for {format_key(self.key, k)}")
            stored[t] = row
            versions[t] = dict(row)
        times = _sorted_times(versions, self, k)
        for row in arriving:
            t = self._time(row, k)
            values = self._value_columns(row)
            if t in versions:
                if self._differs(row, versions[t], values):
                    versions[t].update(row)
                    self._merge_around(times, versions, bisect.bisect_left(times, t), values)
                continue
            i = _bisect(times, t, self, k)
            if i > 0 and not self._differs(row, versions[times[i - 1]], values):
                continue
            version = dict(row)
            version[self.effective_from] = t
            versions[t] = version
            times.insert(i, t)
            self._merge_around(times, versions, i, values)
        out: list[Mutation] = []
        for i, t in enumerate(times):
            version = versions[t]
            last = i == len(times) - 1
            if self.effective_to is not None:
                version[self.effective_to] = self._far_future(t) if last else self._preceding(times[i + 1])
            if self.current_flag is not None:
                version[self.current_flag] = self.current_true if last else self.current_false
            old = stored.get(t)
            if old is None:
                out.append(Mutation(MutationKind.INSERT, self._stamp(version, now)))
            elif self._differs(version, old, [c for c in version if c != self.last_updated]):
                out.append(Mutation(MutationKind.UPDATE, self._stamp(version, now)))
        for t, old in stored.items():  # merged into the version before them
            if t not in versions:
                row = {c: old[c] for c in self.key}
                row[self.effective_from] = t
                out.append(Mutation.owned(MutationKind.DELETE, row))
        return out

    def _merge_around(
        self, times: list[Any], versions: dict[Any, dict[str, Any]], i: int, values: Iterable[str]
    ) -> None:
        """Merge the version at ``times[i]`` (just added or corrected) with equal neighbours: it goes when it equals
        the one before it, the one after it goes when equal to it (and so on while they are equal)."""
        values = list(values)
        j, end = max(i, 1), i + 1
        while j < len(times) and j <= end:
            if self._differs(versions[times[j]], versions[times[j - 1]], values):
                j += 1
            else:
                del versions[times.pop(j)]
                end = max(end - 1, j)


def _time_kind(v: Any) -> str:
    if isinstance(v, dt.datetime):
        return "timestamp"
    if isinstance(v, dt.date):
        return "date"
    return "other" if isinstance(v, bool) or not isinstance(v, int) else "integer"


def _later_or_same(a: Any, b: Any, planner: Planner, k: Key) -> bool:
    try:
        return bool(a >= b)
    except TypeError:
        raise BadRecordError(
            f"{planner.name} planner: event times {a!r} and {b!r} of {format_key(planner.key, k)} do not compare"
        ) from None


def _sorted_times(versions: Mapping[Any, Any], planner: Planner, k: Key) -> list[Any]:
    try:
        return sorted(versions)
    except TypeError:
        raise BadRecordError(
            f"{planner.name} planner: stored event times of {format_key(planner.key, k)} do not compare"
        ) from None


def _bisect(times: list[Any], t: Any, planner: Planner, k: Key) -> int:
    try:
        return bisect.bisect_left(times, t)
    except TypeError:
        raise BadRecordError(
            f"{planner.name} planner: event time {t!r} of {format_key(planner.key, k)} does not compare with the "
            "stored ones"
        ) from None


def plan_batch(
    planner: Planner, arriving: Iterable[Row], existing: Iterable[Row] = (), now: Any = None
) -> list[Mutation]:
    """Plan a whole batch: group ``arriving`` by the planner's key (keeping arrival order within a key), pair each
    group with the stored rows of its key (``existing`` may hold rows of other keys, e.g. from an over-fetching
    scan; they are ignored) and concatenate the mutations, keys in order of first arrival.

    All the rows of a key must be planned in one call: planning one key in two tasks would let both write it.
    """
    return plan_groups(planner, group_rows(planner, arriving), existing, now)


def group_rows(planner: Planner, arriving: Iterable[Row], null_key: str | None = None) -> dict[Key, list[Row]]:
    """``arriving`` grouped by the planner's key, keys in order of first arrival and rows in arrival order; a NULL
    in a key column is a :class:`BadRecordError` naming the key after ``null_key`` (default: the planner's words)."""
    groups: dict[Key, list[Row]] = {}
    columns = planner.key
    single = columns[0] if len(columns) == 1 else None
    for row in arriving:
        if single is not None and single in row and type(row[single]) is not bytearray:
            k = (row[single],)  # key_of's result, without its call (the common case)
        else:
            k = key_of(row, columns)
        group = groups.get(k)
        if group is None:
            if any(v is None for v in k):
                what = null_key or f"{planner.name} planner: NULL in a key column"
                raise BadRecordError(f"{what} ({format_key(columns, k)})")
            groups[k] = [row]
        else:
            group.append(row)
    return groups


def plan_groups(
    planner: Planner, groups: Mapping[Key, Sequence[Row]], existing: Iterable[Row] = (), now: Any = None
) -> list[Mutation]:
    """:func:`plan_batch` for rows already grouped by :func:`group_rows`."""
    stored: dict[Key, list[Row]] = {}
    if planner.needs_existing:
        for row in existing:
            k = key_of(row, planner.key)
            if k in groups:
                stored.setdefault(k, []).append(row)
    return planner.plan_all(groups, stored, now)


PLANNERS: dict[str, type[Planner]] = {
    "append": AppendPlanner,
    "upsert": UpsertPlanner,
    "latest": LatestPlanner,
    "history": HistoryPlanner,
}

_OPTIONS: dict[str, tuple[str, ...]] = {
    "append": ("key", "last_updated"),
    "upsert": ("key", "last_updated"),
    "latest": ("key", "event_time", "values", "last_updated"),
    "history": (
        "key",
        "event_time",
        "values",
        "effective_from",
        "effective_to",
        "current_flag",
        "current_flag.true",
        "current_flag.false",
        "last_updated",
        "far_future",
    ),
}


def planner_from_options(options: Mapping[str, str]) -> Planner:
    """Build a planner from the sink's string options: ``planner`` (``append``, ``upsert``, ``latest`` or
    ``history``; default ``upsert``) and ``planner.<name>`` options (docs/kudu.md, "Planners"). Column lists
    are comma-separated; an empty value switches an optional maintained column off; ``current_flag.true``/``false``
    values ``true``/``false`` are booleans, others strings; ``far_future`` is an integer or an ISO date/timestamp.
    An unknown ``planner.*`` option is an :class:`OptionError` naming it.
    """
    name = (options.get("planner") or "upsert").strip().lower()
    if name not in PLANNERS:
        raise OptionError("planner", f"unknown planner {name!r}; expected one of {', '.join(PLANNERS)}")
    allowed = _OPTIONS[name]
    given = {k[len("planner.") :]: v for k, v in options.items() if k.startswith("planner.")}
    for opt in given:
        if opt not in allowed:
            raise OptionError(
                f"planner.{opt}", f"not an option of the {name} planner (options: planner.{', planner.'.join(allowed)})"
            )
    if not given.get("key", "").strip():
        raise OptionError("planner.key", f"the {name} planner needs its key columns (comma-separated)")
    kwargs: dict[str, Any] = {}
    for opt, raw in given.items():
        if opt in ("key", "values"):
            cols = [c.strip() for c in raw.split(",") if c.strip()]
            if not cols:
                raise OptionError(f"planner.{opt}", "expected comma-separated column names")
            kwargs[opt] = cols
        elif opt in ("current_flag.true", "current_flag.false"):
            v = raw.strip()
            kwargs["current_" + opt.rsplit(".", 1)[1]] = {"true": True, "false": False}.get(v.lower(), v)
        elif opt == "far_future":
            kwargs[opt] = _parse_time(raw)
        elif opt == "event_time":
            if not raw.strip():
                raise OptionError("planner.event_time", "expected a column name")
            kwargs[opt] = raw.strip()
        else:
            kwargs[opt] = raw.strip() or None
    key = kwargs.pop("key")
    return PLANNERS[name](key, **kwargs)


def _parse_time(raw: str) -> Any:
    v = raw.strip()
    try:
        return int(v)
    except ValueError:
        pass
    try:
        if len(v) == 10:
            return dt.date.fromisoformat(v)
        t = dt.datetime.fromisoformat(v)
        return t if t.tzinfo is not None else t.replace(tzinfo=dt.timezone.utc)  # a timestamp without zone is UTC
    except ValueError:
        raise OptionError("planner.far_future", f"{raw!r} is neither an integer nor an ISO date or timestamp") from None
