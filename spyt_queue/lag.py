"""Consumer lag: from a streaming query's progress, or from a backend's committed positions and bounds."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from spyt_queue.backend import QueueBackend
from spyt_queue.errors import SpytQueueError
from spyt_queue.offsets import LATEST_ENDS, StreamOffset, same_source, sorted_partitions
from spyt_queue.stores.base import OffsetStore


@dataclass(frozen=True)
class PartitionLag:
    """One partition's committed position, end, and the rows between them."""

    partition: str
    committed: int | None
    lower: int
    upper: int

    @property
    def lag(self) -> int:
        """Unread rows: from the committed position (or the first available row) to the end."""
        start = self.lower if self.committed is None else max(self.committed, self.lower)
        return max(0, self.upper - start)


def _offset(value: Any) -> Any:
    """An offset of a query progress as a mapping: Spark's JSON text, or the ``str()`` of a dict that PySpark 4.0's
    ``SourceProgress`` holds instead (``{'partitions': ...}``: Python's quotes, no JSON)."""
    if not isinstance(value, str) or not value:
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return ast.literal_eval(value)


def lag_from_progress(progress: Mapping[str, Any] | Any, source_index: int = 0) -> dict[str, int]:
    """Rows behind per partition for one source of ``query.lastProgress``: ``latestOffset - endOffset``.

    ``latestOffset`` is what the source reported with ``reportLatestOffset`` (the end of every partition at the
    last trigger) and ``endOffset`` the end of the last planned batch. With ``read_mode=driver`` PySpark reports no
    ``latestOffset``; the ends seen when the last batch was planned travel in its ``endOffset`` instead
    (:data:`~spyt_queue.offsets.LATEST_ENDS`), so the lag is the one at that batch's planning.
    """
    if not isinstance(progress, Mapping):
        progress = json.loads(progress.json) if hasattr(progress, "json") else dict(progress)
    source = progress["sources"][source_index]
    latest, end = source.get("latestOffset"), source.get("endOffset")
    latest, end = _offset(latest), _offset(end)
    if not latest and isinstance(end, Mapping) and end.get(LATEST_ENDS):
        latest = {"partitions": end[LATEST_ENDS]}
    if not latest or not end:
        return {}
    ends = end.get("partitions", {})
    return {k: max(0, int(v) - int(ends.get(k, 0))) for k, v in latest.get("partitions", {}).items()}


def offsets_behind_latest(progress: Mapping[str, Any] | Any, source_index: int = 0) -> dict[str, float]:
    """Spark's Kafka source metrics (``sources[].metrics`` of its progress) for one source of ``query.lastProgress``:
    ``minOffsetsBehindLatest``, ``maxOffsetsBehindLatest`` and ``avgOffsetsBehindLatest`` over its partitions (YT
    tablets too), from :func:`lag_from_progress`; ``{}`` when the progress has no ends. PySpark gives a Python source
    no way to put them in the progress itself (its ``PythonMicroBatchStream`` is no ``ReportsSourceMetrics``)."""
    behind = list(lag_from_progress(progress, source_index).values())
    if not behind:
        return {}
    return {
        "minOffsetsBehindLatest": float(min(behind)),
        "maxOffsetsBehindLatest": float(max(behind)),
        "avgOffsetsBehindLatest": sum(behind) / len(behind),
    }


def spark_offsets(offset: Mapping[str, Any] | str) -> dict[str, dict[str, int]]:
    """One of our offsets (``startOffset``, ``endOffset``, ``latestOffset`` of a progress, or a checkpoint's) in the
    form of Spark's Kafka source, ``{"topic": {"0": 5}}``: partition ``topic:0`` is topic ``topic``, partition 0. A YT
    queue's tablets have no topic: they come under the queue's path (``{"//home/q": {"0": 5}}``)."""
    if isinstance(offset, str):
        offset = _offset(offset)
    source = str(offset.get("source", ""))
    queue = source.partition(":")[2].partition("#")[0] if source.startswith("yt:") else source
    nested: dict[str, dict[str, int]] = {}
    for key in sorted_partitions(offset.get("partitions", {})):
        topic, _, index = key.rpartition(":")
        nested.setdefault(topic or queue, {})[index] = int(offset["partitions"][key])
    return nested


def dead_letter_counts(target: Any) -> dict[str, int]:
    """Dead letters held per partition of a dead-letter target (a :class:`~spyt_queue.deadletter.DeadLetterTarget`):
    rows of a table's tablets, or records of a topic's partitions, still retained."""
    return dict(target.count())


def backend_lag(backend: QueueBackend, store: OffsetStore | None = None) -> list[PartitionLag]:
    """Committed position (from ``store``, by default the backend's own), bounds and lag of every partition."""
    bounds = backend.bounds()
    store = backend.default_store() if store is None else store
    committed = store.committed() if store is not None else {}
    return [
        PartitionLag(key, committed.get(key), bounds[key].lower, bounds[key].upper) for key in sorted_partitions(bounds)
    ]


def checkpoint_offset(checkpoint: str | Path, source: str) -> StreamOffset | None:
    """The newest offset of ``source`` (a backend's ``source_id``) in the offset log of a query's local checkpoint
    directory (``checkpointLocation``: a path or a ``file:`` URI), ``None`` when the query logged none yet. Spark
    writes one file per batch in ``<checkpoint>/offsets/``: a version line, a metadata line, then one line per
    source of the query, its offset as JSON (``-`` for a source without one). Its
    :attr:`~spyt_queue.offsets.StreamOffset.writer` names the group of a query that names none
    (:func:`spyt_queue.stores.per_query.query_group`)."""
    text = str(checkpoint)
    root = Path(urlparse(text).path if text.startswith("file:") else text)
    log_dir = root / "offsets"
    if not log_dir.is_dir():
        what = "has no offsets/ directory: no query has started from it" if root.is_dir() else "is not a directory"
        raise SpytQueueError(f"the checkpoint {root} {what}; give the checkpointLocation of the query")
    others: set[str] = set()
    for batch in sorted((int(f.name) for f in log_dir.iterdir() if f.name.isdigit()), reverse=True):
        for line in (log_dir / str(batch)).read_text().splitlines()[2:]:
            try:
                data = json.loads(line)
            except json.JSONDecodeError:  # "-": a source with no offset in this batch
                continue
            if not isinstance(data, Mapping) or "partitions" not in data:
                continue
            if same_source(str(data.get("source", "")), source):
                return StreamOffset.from_json(data)
            others.add(str(data.get("source", "")))
    if others:
        raise SpytQueueError(
            f"the checkpoint {root} holds offsets of {', '.join(sorted(others))}, not of {source}: is it the "
            "checkpoint of a query reading this source?"
        )
    return None
