"""What every source and sink says about a record, independent of any technology.

The ``ytqueue`` service column names, the Spark task a record passes through, a short one-line description of a
record for error messages, where its first null is, and a record's dead-letter coordinates (its source tablet and row
index when it carries the service columns, else its Spark partition and position). Depends on pyarrow and pyspark's
``TaskContext`` only, so a Kafka, Kudu or HBase process importing it never loads ``yt.wrapper``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext

#: The service columns ``include_service_columns=true`` prepends: a row's source tablet and row index.
SERVICE_TABLET_COLUMN = "__spyt_streaming_src_tablet_index"
SERVICE_ROW_COLUMN = "__spyt_streaming_src_row_index"


def _partition_id() -> int | None:
    """The Spark partition of the running task, ``None`` outside a task."""
    try:
        context = TaskContext.get()
    except Exception:  # pragma: no cover - pyspark is always importable where this runs
        context = None
    return context.partitionId() if context is not None else None


def task_label() -> str:
    """``Spark partition N`` inside a Spark task, else ``this task`` (for messages)."""
    partition = _partition_id()
    return f"Spark partition {partition}" if partition is not None else "this task"


def task_partition() -> str:
    """``spark-partition-N`` inside a Spark task, else ``this task``: a sink record's dead-letter ``partition`` when the
    rows do not carry the source's service columns."""
    partition = _partition_id()
    return f"spark-partition-{partition}" if partition is not None else "this task"


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_record(batch: pa.RecordBatch, position: int, limit: int = 300) -> str:
    """One row of ``batch`` as a short one-line ``{column: value}`` text (long values and rows cut)."""
    row = batch.slice(position, 1).to_pylist()[0]
    text = "{" + ", ".join(f"{name!r}: {_short(value)}" for name, value in row.items()) + "}"
    return text if len(text) <= limit else text[: limit - 4] + "...}"


def source_of(batch: pa.RecordBatch, position: int) -> str:
    """`` (source tablet T, row R)`` when the batch carries the source's service columns, else ``""``."""
    names = batch.schema.names
    if SERVICE_TABLET_COLUMN not in names or SERVICE_ROW_COLUMN not in names:
        return ""
    tablet = batch.column(SERVICE_TABLET_COLUMN)[position].as_py()
    row = batch.column(SERVICE_ROW_COLUMN)[position].as_py()
    return f" (source tablet {tablet}, row {row})"


def first_null(array: pa.Array) -> int | None:
    """Position of the first null of ``array`` (``None`` if it has none; free when it has none)."""
    if array.null_count == 0:
        return None
    return int(pc.index(array.is_null(), True).as_py())


def row_coordinates(row: Mapping[str, Any], position: int, task: str | None = None) -> tuple[str, int]:
    """A sink row's dead-letter ``partition``/``offset``: its source tablet and row index when the row carries the
    ``ytqueue`` service columns (and they are set), else ``task`` (default :func:`task_partition`) and the row's
    ``position`` in the task. The row form of :func:`batch_coordinates`."""
    tablet, index = row.get(SERVICE_TABLET_COLUMN), row.get(SERVICE_ROW_COLUMN)
    if tablet is not None and index is not None:
        return str(tablet), int(index)
    return (task_partition() if task is None else task), position


def batch_coordinates(batch: Any, first_row: int) -> list[tuple[str, int]]:
    """Per row of an Arrow ``batch`` (rows ``first_row``... of this task): the source tablet and row index when the
    batch carries the ``ytqueue`` service columns (and they are set), else (:func:`task_partition`, the row's
    position in the task). The ``partition``/``offset`` of a sink's dead letters."""
    task = task_partition()
    names = batch.schema.names
    if SERVICE_TABLET_COLUMN in names and SERVICE_ROW_COLUMN in names:
        tablets = batch.column(names.index(SERVICE_TABLET_COLUMN)).to_pylist()
        rows = batch.column(names.index(SERVICE_ROW_COLUMN)).to_pylist()
        return [
            (str(t), int(r)) if t is not None and r is not None else (task, first_row + i)
            for i, (t, r) in enumerate(zip(tablets, rows, strict=True))
        ]
    return [(task, first_row + i) for i in range(batch.num_rows)]
