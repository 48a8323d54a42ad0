"""Offsets as small value objects with one canonical JSON form.

Spark compares offsets as JSON strings, so the same content must always serialize the same way: keys in a
fixed order, partition keys as strings, and a version field so the format can evolve. Every value is the
**next unread row** of its partition (the YTsaurus consumer convention and Kafka's ``position()``), so
``[start, end)`` is exactly the rows of a batch and no ``+1``/``-1`` juggling happens anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from spyt_queue.errors import SpytQueueError

OFFSET_VERSION = 1


def partition_sort_key(key: str) -> tuple[str, int]:
    """Order partition keys by name, then numerically by index: ``"0" < "2" < "10"``, ``"t:1" < "t:10"``."""
    name, _, index = key.rpartition(":")
    try:
        return (name, int(index))
    except ValueError:
        return (key, -1)


def sorted_partitions(keys: Iterable[str]) -> list[str]:
    """Partition keys in canonical order."""
    return sorted(keys, key=partition_sort_key)


@dataclass(frozen=True)
class StreamOffset:
    """Where a source stands: for each partition key, the index of the next unread row."""

    source: str
    positions: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The canonical dict handed to Spark (insertion order is the serialization order)."""
        return {
            "version": OFFSET_VERSION,
            "source": self.source,
            "partitions": {key: int(self.positions[key]) for key in sorted_partitions(self.positions)},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], expected_source: str | None = None) -> StreamOffset:
        """Parse an offset written by :meth:`to_json`, checking its version and (optionally) its source."""
        if not isinstance(data, Mapping) or "partitions" not in data:
            raise SpytQueueError(f"Not a spyt-queue offset: {data!r}")
        version = data.get("version")
        if version != OFFSET_VERSION:
            raise SpytQueueError(
                f"Unsupported offset version {version!r} (this spyt-queue writes version {OFFSET_VERSION}); "
                "the checkpoint was written by another version of spyt-queue"
            )
        source = str(data.get("source", ""))
        if expected_source is not None and source != expected_source:
            raise SpytQueueError(
                f"The checkpoint belongs to source {source!r}, but this query reads {expected_source!r}; "
                "use a new checkpointLocation for a different queue"
            )
        positions = {str(k): int(v) for k, v in dict(data["partitions"]).items()}
        return cls(source=source, positions=positions)
