"""Resolving a starting or ending :class:`~spyt_queue.settings.Position` into per-partition offsets."""

from __future__ import annotations

from spyt_queue.backend import PartitionBounds, QueueBackend
from spyt_queue.errors import OptionError
from spyt_queue.offsets import sorted_partitions
from spyt_queue.settings import EARLIEST, LATEST, Position


def resolve_positions(
    position: Position,
    bounds: dict[str, PartitionBounds],
    committed: dict[str, int | None],
    backend: QueueBackend | None = None,
    ending: bool = False,
) -> dict[str, int]:
    """Offsets for every partition in ``bounds``.

    ``consumer``/``group``: the committed position, or the first available row where none is committed;
    ``earliest``/``latest``: the bounds; explicit JSON: the given offsets (-2/-1 = earliest/latest; partitions
    left out start at the earliest row, or, for an ``ending`` position, end at the latest); timestamps: the first
    row at or after the time, per the strategy.
    """
    which = "ending" if ending else "starting"
    missing = LATEST if ending else EARLIEST
    stamps: dict[str, int | None] = {}
    if position.kind == "timestamp":
        if backend is None:
            raise OptionError(f"{which}Timestamp", "this source can not look up offsets by timestamp")
        wanted = (
            {key: position.timestamp for key in bounds}
            if position.timestamp is not None
            else {key: ts for key, ts in (position.timestamps or {}).items()}
        )
        stamps = backend.offsets_for_timestamps({k: v for k, v in wanted.items() if v is not None})
    result: dict[str, int] = {}
    for key in sorted_partitions(bounds):
        b = bounds[key]
        if position.kind == "earliest":
            result[key] = b.lower
        elif position.kind == "latest":
            result[key] = b.upper
        elif position.kind in ("consumer", "group"):
            value = committed.get(key)
            result[key] = b.lower if value is None else value
        elif position.kind == "timestamp":
            if key not in stamps:
                result[key] = b.upper if ending else b.lower
                continue
            found = stamps[key]
            if found is None:
                if position.timestamp_strategy == "latest":
                    found = b.upper
                else:
                    raise OptionError(
                        f"{which}Timestamp",
                        f"no record of {key} has a timestamp at or after the one given; set "
                        f"{which}OffsetsByTimestampStrategy=latest to use the end instead",
                    )
            result[key] = found
        else:
            value = (position.explicit or {}).get(key, missing)
            result[key] = b.lower if value == EARLIEST else b.upper if value == LATEST else value
    return result
