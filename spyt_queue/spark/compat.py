"""What differs between the PySpark 4 lines, decided once, here; the rest of the adapter tests no version.

PySpark 4.2 gave Python stream readers admission control and AvailableNow (SPARK-55304): ``latestOffset(start,
limit)``, ``getDefaultReadLimit``, the ``ReadLimit`` classes and ``SupportsTriggerAvailableNow`` in
``pyspark.sql.streaming.datasource``. PySpark 4.0 and 4.1 have none of them: their streaming runner
(``pyspark/sql/streaming/python_streaming_source_runner.py``) calls ``latestOffset()`` with no start and no limit.

* :data:`ReadAllAvailable`, :data:`ReadMaxRows`, :data:`ReadLimit` and :data:`SupportsTriggerAvailableNow` are
  PySpark's classes where they exist, else stand-ins with the same names and fields, so the reader's planning code
  is the same on every line.
* :data:`DataSourceStreamArrowWriter` is PySpark's (4.1+) or, on 4.0, a stream writer that is also a
  ``DataSourceArrowWriter``, which is how 4.0's write worker decides to pass Arrow batches.
* :func:`arrow_schema`: the schema Spark wants of yielded Arrow batches (``to_arrow_schema`` changed its keywords).
* :func:`register_data_source` keeps the discovered source where 4.0 refuses to replace it.
* :func:`stream_reader` is the one place that picks the reader Spark talks to: the reader itself on 4.2+, or on
  4.0/4.1 a :class:`StartTrackingReader` that knows where the next batch starts the way PySpark 4.0's own
  ``_SimpleStreamReaderWrapper`` (``pyspark/sql/datasource_internal.py``) does, and plans it with the reader's
  default limit, so the caps hold on every line. :func:`simple_stream_reader` is the same choice for
  ``read_mode=driver`` (Spark passes that path its start on every line; 4.0/4.1 get the note below).

Trigger.AvailableNow on 4.0/4.1: the JVM's ``PythonMicroBatchStream`` is not ``SupportsTriggerAvailableNow``, so
``MicroBatchExecution.getTrigger`` runs the query as a single batch (logging "does not support
Trigger.AvailableNow. Falling back to single batch execution"), or, with the internal
``spark.sql.streaming.triggerAvailableNowWrapper.enabled``, wraps the source in ``AvailableNowMicroBatchStreamWrapper``,
whose ``prepareForTriggerAvailableNow`` keeps the first ``latestOffset()`` answer as the whole run's target. Spark
tells a Python source neither, so a capped first answer would end such a run early: :class:`StartTrackingReader`
and :class:`CapNotingDriverReader` say so in one line (:data:`AVAILABLE_NOW_NOTE`, once per run) when they plan a
batch that leaves rows behind.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyspark
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    SimpleDataSourceStreamReader,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

#: A :class:`~spyt_queue.spark.stream_reader.QueueStreamReader` (not imported: that module imports this one).
QueueStreamReader = Any
#: A :class:`~spyt_queue.spark.driver_reader.DriverStreamReader` (not imported, for the same reason).
DriverReader = Any

log = logging.getLogger("spyt_queue.compat")

#: The installed PySpark's version, as ``(major, minor)``.
PYSPARK_VERSION: tuple[int, int] = tuple(int(part) for part in pyspark.__version__.split(".")[:2])  # type: ignore[assignment]

try:  # PySpark >= 4.2
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    #: Whether Spark passes the start and a read limit to ``latestOffset`` and runs AvailableNow for Python readers.
    HAS_READ_LIMITS = True
except ImportError:  # PySpark 4.0, 4.1: stand-ins with PySpark 4.2's names and fields
    HAS_READ_LIMITS = False

    class ReadLimit:  # type: ignore[no-redef]
        """Stand-in for PySpark 4.2's ``ReadLimit`` (4.0/4.1 have no read limits)."""

    @dataclasses.dataclass(frozen=True)
    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        """Stand-in for PySpark 4.2's ``ReadAllAvailable``: no limit."""

    @dataclasses.dataclass(frozen=True)
    class ReadMaxRows(ReadLimit):  # type: ignore[no-redef]
        """Stand-in for PySpark 4.2's ``ReadMaxRows``: at most ``max_rows`` rows."""

        max_rows: int

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in for PySpark 4.2's mixin; 4.0/4.1 never call :meth:`prepareForTriggerAvailableNow`."""

        def prepareForTriggerAvailableNow(self) -> None:
            """Freeze the run's target (called by PySpark 4.2+ only)."""
            raise NotImplementedError


try:  # PySpark >= 4.1
    from pyspark.sql.datasource import DataSourceStreamArrowWriter
except ImportError:  # PySpark 4.0: its write worker hands Arrow batches to any DataSourceArrowWriter, streams included

    class DataSourceStreamArrowWriter(DataSourceStreamWriter, DataSourceArrowWriter):  # type: ignore[no-redef]
        """Stand-in for PySpark 4.1's stream Arrow writer: PySpark 4.0's ``write_into_data_source.py`` passes
        ``pyarrow.RecordBatch``es to a stream writer that is a ``DataSourceArrowWriter``."""


if "timezone" in inspect.signature(to_arrow_schema).parameters:  # PySpark >= 4.1

    def arrow_schema(schema: StructType) -> pa.Schema:
        """The Arrow schema Spark expects of yielded batches: ``to_arrow_schema(schema, timezone="UTC")``."""
        return to_arrow_schema(schema, timezone="UTC")

else:  # PySpark 4.0: timestamps are UTC by default (``timestamp_utc=True``)

    def arrow_schema(schema: StructType) -> pa.Schema:
        """The Arrow schema Spark expects of yielded batches (PySpark 4.0's ``to_arrow_schema``: UTC timestamps)."""
        return to_arrow_schema(schema, timestamp_utc=True)


#: Said once per run, on 4.0/4.1, when a planned batch leaves rows behind (a cap applied).
AVAILABLE_NOW_NOTE = (
    "PySpark {version} tells a Python source neither its trigger nor a read limit: under Trigger.AvailableNow or "
    "Trigger.Once Spark runs this source as ONE batch, which the caps ({caps}) limit, so such a run stops with "
    "{left} rows left for the next run. To read everything in capped batches use PySpark >= 4.2, or "
    "trigger(processingTime=...) and stop the query once it is idle; to read everything in one batch, drop the caps."
)


def stream_reader(reader: QueueStreamReader) -> DataSourceStreamReader:
    """The reader Spark talks to: ``reader`` itself on PySpark 4.2+, a :class:`StartTrackingReader` on 4.0/4.1."""
    return reader if HAS_READ_LIMITS else StartTrackingReader(reader)


def simple_stream_reader(reader: DriverReader) -> SimpleDataSourceStreamReader:
    """The ``read_mode=driver`` reader Spark talks to: ``reader`` itself on PySpark 4.2+, on 4.0/4.1 a
    :class:`CapNotingDriverReader` (Spark gives that path its start on every line, but runs AvailableNow as one
    batch on 4.0/4.1 as it does on the other path)."""
    return reader if HAS_READ_LIMITS else CapNotingDriverReader(reader)


def _same(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Offsets compared as Spark compares them: as JSON text."""
    return json.dumps(a) == json.dumps(b)


class CapNote:
    """:data:`AVAILABLE_NOW_NOTE`, logged at most once per run, for the first planned batch that leaves rows."""

    def __init__(self) -> None:
        self.noted = False

    def __call__(self, planner: QueueStreamReader, end: dict[str, Any]) -> None:
        """Log the note if the batch ending at ``end`` (just planned by ``planner``) left rows behind."""
        if self.noted:
            return
        bounds = planner._last_bounds or {}
        planned = planner._parse(end).positions
        left = sum(max(0, b.upper - planned.get(key, b.upper)) for key, b in bounds.items())
        if left <= 0:
            return
        settings = planner.settings
        caps = ", ".join(
            f"{name}={value}"
            for name, value in (
                ("max_rows_per_partition", settings.max_rows_per_partition),
                ("maxOffsetsPerTrigger", settings.max_rows_per_trigger),
            )
            if value
        )
        self.noted = True
        log.warning(AVAILABLE_NOW_NOTE.format(version=pyspark.__version__, caps=caps or "none", left=left))


class StartTrackingReader(DataSourceStreamReader):
    """A :class:`~spyt_queue.spark.stream_reader.QueueStreamReader` for PySpark 4.0/4.1's ``latestOffset()``.

    Where the next batch starts (``current``), as ``_SimpleStreamReaderWrapper`` of PySpark 4.0 keeps it: the initial
    offset on a fresh query, this reader's own previous answer otherwise, and after a restart the ``end`` of the
    first ``partitions(start, end)`` call (Spark 4.0's ``PythonMicroBatchStream.setLatestSeenOffset`` plans the
    last logged batch's end as an empty range before anything else) or of ``commit(end)``. With the start known,
    ``latestOffset()`` is the reader's ``latestOffset(start, getDefaultReadLimit())``: the same planning, caps,
    ``minOffsetsPerTrigger`` delay and commit of ``start`` after the sink as on 4.2+. Spark 4.0's synchronous
    micro-batch engine asks for batch N+1 only after batch N's sink commit, so ``start`` is then exactly the end of
    the last committed batch, as on 4.2+.
    """

    def __init__(self, reader: QueueStreamReader) -> None:
        self.reader = reader
        self.current: dict[str, Any] | None = None
        self._note = CapNote()

    def initialOffset(self) -> dict[str, Any]:
        """:meth:`QueueStreamReader.initialOffset`."""
        return self.reader.initialOffset()

    def latestOffset(self) -> dict[str, Any]:  # type: ignore[override]  # PySpark 4.0/4.1's signature
        """Plan the batch after :attr:`current` within the reader's default limit; remember its end."""
        if self.current is None:
            self.current = self.initialOffset()
        start = self.current
        end = self.reader.latestOffset(start, self.reader.getDefaultReadLimit())
        if not _same(end, start):
            self._note(self.reader, end)
        self.current = end
        return end

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """:meth:`QueueStreamReader.partitions`; after a restart, the first call's ``end`` is where reading resumes."""
        if self.current is None:
            self.current = end
        return self.reader.partitions(start, end)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """:meth:`QueueStreamReader.read` (on an executor)."""
        return self.reader.read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        """:meth:`QueueStreamReader.commit`; a restart's first commit also tells where reading resumes."""
        if self.current is None:
            self.current = end
        self.reader.commit(end)

    def stop(self) -> None:
        """:meth:`QueueStreamReader.stop`."""
        self.reader.stop()


class CapNotingDriverReader(SimpleDataSourceStreamReader):
    """A ``read_mode=driver`` :class:`~spyt_queue.spark.driver_reader.DriverStreamReader` on PySpark 4.0/4.1: the
    same reads and commits, plus :class:`CapNote` for a batch that leaves rows behind (AvailableNow is one batch
    there too)."""

    def __init__(self, reader: DriverReader) -> None:
        self.reader = reader
        self._note = CapNote()

    def initialOffset(self) -> dict[str, Any]:
        """:meth:`DriverStreamReader.initialOffset`."""
        return self.reader.initialOffset()

    def read(self, start: dict[str, Any]) -> tuple[Iterator[Any], dict[str, Any]]:
        """:meth:`DriverStreamReader.read`, noting a batch that leaves rows behind."""
        rows, end = self.reader.read(start)
        if not _same(end, start):
            self._note(self.reader.planner, end)
        return rows, end

    def readBetweenOffsets(self, start: dict[str, Any], end: dict[str, Any]) -> Iterator[Any]:
        """:meth:`DriverStreamReader.readBetweenOffsets`."""
        return self.reader.readBetweenOffsets(start, end)

    def commit(self, end: dict[str, Any]) -> None:
        """:meth:`DriverStreamReader.commit`."""
        self.reader.commit(end)

    def stop(self) -> None:
        """:meth:`DriverStreamReader.stop`."""
        self.reader.stop()


def register_data_source(spark: Any, source: type) -> bool:
    """``spark.dataSource.register(source)``; ``False`` when this line keeps the installed source of that name.

    PySpark 4.0 refuses to register a source under the name of one it discovered (``pyspark_*`` modules:
    ``DATA_SOURCE_ALREADY_EXISTS``), where 4.2+ lets the registered one win with a warning.
    """
    try:
        spark.dataSource.register(source)
    except Exception as error:
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(error):
            raise
        log.info("PySpark %s keeps the discovered data source %r", pyspark.__version__, source.name())
        return False
    return True
