"""Resolving a starting or ending :class:`~spyt_queue.settings.Position` into per-partition offsets."""

from __future__ import annotations

from spyt_queue.backend import PartitionBounds, QueueBackend
from spyt_queue.errors import OptionError
from spyt_queue.offsets import sorted_partitions
from spyt_queue.settings import EARLIEST, LATEST, STORE_KINDS, Position


def bind(offset: int, bounds: PartitionBounds) -> int:
    """An offset from :func:`plan_positions` with ``EARLIEST``/``LATEST`` replaced by the partition's bounds."""
    if offset == EARLIEST:
        return bounds.lower
    if offset == LATEST:
        return bounds.upper
    return offset


def check_partitions_exist(
    position: Position, bounds: dict[str, PartitionBounds], backend: QueueBackend | None = None
) -> None:
    """A per-partition JSON position naming partitions (or topics) that do not exist is an error naming them."""
    named = position.named_partitions()
    unknown = sorted_partitions(named - set(bounds)) if named else []
    if unknown:
        describe = getattr(backend, "describe", None) or (lambda key: f"partition {key}")
        raise OptionError(position.option, f"names partitions that do not exist: {', '.join(map(describe, unknown))}")


def plan_positions(
    position: Position,
    bounds: dict[str, PartitionBounds],
    committed: dict[str, int | None],
    backend: QueueBackend | None = None,
    ending: bool = False,
) -> dict[str, int]:
    """Offsets for every partition in ``bounds``, keeping ``EARLIEST``/``LATEST`` (-2/-1) where the position means
    "the partition's first/next row", so that a caller can bind them later (see :func:`bind`).

    ``consumer``/``group``: the committed position, or the earliest row where none is committed;
    ``earliest``/``latest``: the bounds; explicit JSON: the given offsets (-2/-1 = earliest/latest; partitions
    left out start at the earliest row, or, for an ``ending`` position, end at the latest); timestamps: the first
    row at or after the time; where there is none, an ending is the latest offset (Spark's rule) and a starting
    follows ``startingOffsetsByTimestampStrategy``. Partitions named in JSON that do not exist are an error.
    """
    check_partitions_exist(position, bounds, backend)
    missing = LATEST if ending else EARLIEST
    stamps: dict[str, int | None] = {}
    wanted: dict[str, int] = {}
    if position.kind == "timestamp":
        if backend is None:
            raise OptionError(position.option, "this source can not look up offsets by timestamp")
        if position.timestamp is not None:
            wanted = {key: position.timestamp for key in bounds}
        else:
            wanted = dict(position.timestamps or {})
        stamps = backend.offsets_for_timestamps(wanted)
    result: dict[str, int] = {}
    for key in sorted_partitions(bounds):
        if position.kind == "earliest":
            result[key] = EARLIEST
        elif position.kind == "latest":
            result[key] = LATEST
        elif position.kind in STORE_KINDS:
            value = committed.get(key)
            result[key] = EARLIEST if value is None else value
        elif position.kind == "timestamp":
            if key not in wanted:
                result[key] = missing
                continue
            found = stamps.get(key)
            if found is None:
                if not ending and position.timestamp_strategy != "latest":
                    describe = getattr(backend, "describe", str)
                    raise OptionError(
                        position.option,
                        f"no record of {describe(key)} has a timestamp at or after {wanted[key]}; set "
                        "startingOffsetsByTimestampStrategy=latest to start at the latest offset instead",
                    )
                found = LATEST
            result[key] = found
        else:
            result[key] = (position.explicit or {}).get(key, missing)
    return result


def resolve_positions(
    position: Position,
    bounds: dict[str, PartitionBounds],
    committed: dict[str, int | None],
    backend: QueueBackend | None = None,
    ending: bool = False,
) -> dict[str, int]:
    """Offsets for every partition in ``bounds`` (:func:`plan_positions` bound to ``bounds``)."""
    planned = plan_positions(position, bounds, committed, backend, ending)
    return {key: bind(offset, bounds[key]) for key, offset in planned.items()}
