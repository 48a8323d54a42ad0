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
from uuid import uuid4

from spyt_queue.errors import SpytQueueError

OFFSET_VERSION = 1
#: Key of the end of every partition when a batch was planned, added to the batch's end offset by
#: ``read_mode=driver`` (:class:`~spyt_queue.spark.driver_reader.DriverStreamReader`): PySpark never asks a simple
#: reader for ``reportLatestOffset``, so the progress has no ``latestOffset`` in that mode and
#: :func:`spyt_queue.lag.lag_from_progress` reads the ends here. :meth:`StreamOffset.from_json` ignores it.
LATEST_ENDS = "latest"


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


def _canonical(positions: Mapping[str, int]) -> dict[str, int]:
    return {key: int(positions[key]) for key in sorted_partitions(positions)}


def same_source(stored: str, current: str) -> bool:
    """Whether a checkpoint's source id names the current source.

    Ids may end in ``#<object id>`` (a YT queue's table id): an id written without one (older checkpoints)
    matches any object at the same path; two different object ids mean the source was deleted and re-created.
    """
    if stored == current:
        return True
    return "#" not in stored and current.partition("#")[0] == stored


@dataclass(frozen=True)
class StreamOffset:
    """Where a source stands: for each partition key, the index of the next unread row.

    Optional fields travel with the positions through Spark's offset log, so that they are durable:

    * ``batch_start``: the start of the batch this offset ends. Only the end of the query's first batch carries
      it, because Spark logs batch ends only and re-asks ``initialOffset()`` when it replays batch 0; with the
      start journaled here a replay reads exactly the rows of the first run.
    * ``baseline``: committed positions the store held when the query started, for partitions where the query
      starts *below* them (``startingOffsets=earliest`` under an existing consumer). Finding the store at such a
      value after a restart is this query's own starting point, not another query's progress. An entry is dropped
      once the query's position reaches it.
    * ``initial`` marks the un-journaled initial offset (never logged by Spark; a restart recomputes it).
    * ``writer``: the query's writer token, drawn once when the query starts (its initial offset) and carried in
      every offset after it, so it survives restarts of the same checkpoint. Stores keep it beside the positions
      it commits, which is how a committer proves that positions it finds already at its target were written by
      this query (a lost reply) and not by another query on the same consumer or group.
    """

    source: str
    positions: Mapping[str, int] = field(default_factory=dict)
    batch_start: Mapping[str, int] | None = None
    baseline: Mapping[str, int] = field(default_factory=dict)
    initial: bool = False
    writer: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The canonical dict handed to Spark (insertion order is the serialization order)."""
        data: dict[str, Any] = {
            "version": OFFSET_VERSION,
            "source": self.source,
            "partitions": _canonical(self.positions),
        }
        if self.batch_start is not None:
            data["batch_start"] = _canonical(self.batch_start)
        if self.baseline:
            data["baseline"] = _canonical(self.baseline)
        if self.initial:
            data["initial"] = True
        if self.writer:
            data["writer"] = self.writer
        return data

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
        if expected_source is not None and not same_source(source, expected_source):
            if source.partition("#")[0] == expected_source.partition("#")[0]:
                raise SpytQueueError(
                    f"The checkpoint was written for {source!r}, but that source was deleted and re-created since "
                    f"(it is now {expected_source!r}); its offsets do not apply to the new one. Use a new "
                    "checkpointLocation (and startingOffsets) for the re-created source"
                )
            raise SpytQueueError(
                f"The checkpoint belongs to source {source!r}, but this query reads {expected_source!r}; "
                "use a new checkpointLocation for a different queue"
            )

        def ints(name: str) -> dict[str, int]:
            return {str(k): int(v) for k, v in dict(data.get(name) or {}).items()}

        return cls(
            source=source,
            positions=ints("partitions"),
            batch_start=ints("batch_start") if "batch_start" in data else None,
            baseline=ints("baseline"),
            initial=bool(data.get("initial", False)),
            writer=str(data["writer"]) if data.get("writer") else None,
        )


def new_writer_token() -> str:
    """A fresh writer token for a query's offsets (see :attr:`StreamOffset.writer`)."""
    return uuid4().hex
