"""The PySpark-line shims of :mod:`spyt_queue.spark.compat`, without servers or Spark: :class:`StartTrackingReader`
driven the way PySpark 4.0/4.1's streaming runner drives a reader (``latestOffset()`` with no start and no limit,
``partitions(start, end)`` and ``commit(end)``), and :func:`register_data_source` against a stand-in session.

They run on every line: the wrapper is only *chosen* on 4.0/4.1 (:func:`compat.stream_reader`), and its code is the
same everywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StructField, StructType

from spyt_queue.backend import DataLossHandler, PartitionBounds, QueueBackend
from spyt_queue.options import Options
from spyt_queue.settings import ReaderSettings
from spyt_queue.spark import compat
from spyt_queue.spark.compat import AVAILABLE_NOW_NOTE, CapNotingDriverReader, StartTrackingReader, register_data_source
from spyt_queue.spark.driver_reader import DriverStreamReader
from spyt_queue.spark.stream_reader import QueueStreamReader
from spyt_queue.stores.memory import MemoryStore

SCHEMA = StructType([StructField("id", LongType())])


class ListLog(QueueBackend):
    """Two partitions of ``rows`` rows each, in memory; ``append`` adds rows to both."""

    def __init__(self, rows: int) -> None:
        self.upper = {"0": rows, "1": rows}

    @property
    def source_id(self) -> str:
        return "list-log"

    def schema(self) -> StructType:
        return SCHEMA

    def bounds(self) -> dict[str, PartitionBounds]:
        return {key: PartitionBounds(0, upper) for key, upper in self.upper.items()}

    def is_transient(self, error: BaseException) -> bool:
        return False

    def read_range(
        self, partition: str, start: int, end: int, on_data_loss: DataLossHandler
    ) -> Iterator[pa.RecordBatch]:
        yield pa.RecordBatch.from_pydict({"id": list(range(start, end))}, schema=pa.schema([("id", pa.int64())]))

    def append(self, rows: int) -> None:
        self.upper = {key: upper + rows for key, upper in self.upper.items()}


def tracking(log: ListLog, store: MemoryStore, **options: str) -> StartTrackingReader:
    """A fresh query's reader as PySpark 4.0/4.1 sees it (the wrapper is built on every line here)."""
    settings = ReaderSettings.parse(Options({"startingOffsets": "earliest", **options}))
    return StartTrackingReader(QueueStreamReader(log, settings, store))


def positions(offset: dict[str, Any]) -> dict[str, int]:
    return dict(offset["partitions"])


def read_ids(reader: StartTrackingReader, start: dict[str, Any], end: dict[str, Any]) -> list[int]:
    """What an executor reads of the batch ``[start, end)``."""
    return [
        i
        for partition in reader.partitions(start, end)
        for batch in reader.read(partition)
        for i in batch.column("id").to_pylist()
    ]


def test_the_wrapper_is_chosen_only_where_spark_passes_no_start() -> None:
    """PySpark 4.2+ talks to the reader itself; 4.0/4.1 to the wrapper that tracks the start."""
    reader = tracking(ListLog(1), MemoryStore("list-log")).reader
    chosen = compat.stream_reader(reader)
    assert (chosen is reader) == compat.HAS_READ_LIMITS
    assert isinstance(chosen, StartTrackingReader) == (not compat.HAS_READ_LIMITS)


def test_each_answer_starts_where_the_previous_one_ended_within_the_caps() -> None:
    """``latestOffset()`` has no start on 4.0/4.1: the wrapper plans from its own previous answer, so batches
    follow one another within ``max_rows_per_partition``; the next call commits the batch before it (the sink has
    it by then), and a call with nothing new keeps the offset (no batch) after committing the last one."""
    log, store = ListLog(12), MemoryStore("list-log")
    reader = tracking(log, store, max_rows_per_partition="5")
    start = reader.initialOffset()
    ends, seen = [], []
    for _ in range(4):
        end = reader.latestOffset()
        if end == start:
            break
        seen += read_ids(reader, start, end)
        ends.append(positions(end))
        start = end
    assert ends == [{"0": 5, "1": 5}, {"0": 10, "1": 10}, {"0": 12, "1": 12}]
    assert sorted(seen) == sorted(list(range(12)) * 2), "every row once"
    assert store.committed() == {"0": 12, "1": 12}, "the call that found nothing new committed the last batch"
    log.append(3)
    assert positions(reader.latestOffset()) == {"0": 15, "1": 15}


def test_max_offsets_per_trigger_holds_without_a_read_limit_from_spark() -> None:
    """``maxOffsetsPerTrigger`` is the reader's default limit: applied by the wrapper, split over partitions."""
    reader = tracking(ListLog(10), MemoryStore("list-log"), maxOffsetsPerTrigger="6")
    first = reader.latestOffset()
    assert sum(positions(first).values()) == 6
    second = reader.latestOffset()
    assert sum(positions(second).values()) == 12


def test_min_offsets_per_trigger_delays_without_moving_the_start() -> None:
    """A trigger delayed by ``minOffsetsPerTrigger`` answers the start itself; the next one plans from there."""
    log = ListLog(2)
    reader = tracking(log, MemoryStore("list-log"), minOffsetsPerTrigger="10", maxTriggerDelay="1h")
    reader.initialOffset()
    first = reader.latestOffset()
    assert positions(first) == {"0": 2, "1": 2}, "the first trigger of a run is never delayed (as in Spark)"
    log.append(2)  # 4 new rows
    assert reader.latestOffset() == first
    log.append(4)  # 12 new rows now
    assert positions(reader.latestOffset()) == {"0": 8, "1": 8}


def test_a_restart_resumes_at_the_end_spark_replans_first() -> None:
    """After a restart Spark 4.0/4.1 first plans the last logged batch (``partitions(start, end)``, an empty range
    at its end, ``PythonMicroBatchStream.setLatestSeenOffset``, its partitions discarded): that end is where the new
    run's first batch starts, not the initial offset."""
    log, store = ListLog(20), MemoryStore("list-log")
    first_run = tracking(log, store, max_rows_per_partition="5")
    logged = first_run.latestOffset()
    read_ids(first_run, first_run.initialOffset(), logged)
    restarted = tracking(log, store, max_rows_per_partition="5")
    restarted.partitions(logged, logged)
    after = restarted.latestOffset()
    assert positions(after) == {"0": 10, "1": 10}
    assert store.committed() == {"0": 5, "1": 5}, "the batch before it was committed first"


def test_a_restart_whose_first_call_is_a_commit_resumes_there() -> None:
    log, store = ListLog(20), MemoryStore("list-log")
    logged = tracking(log, store, max_rows_per_partition="5").latestOffset()
    restarted = tracking(log, store, max_rows_per_partition="5")
    restarted.commit(logged)
    assert store.committed() == {"0": 5, "1": 5}
    assert positions(restarted.latestOffset()) == {"0": 10, "1": 10}


def test_a_capped_batch_that_leaves_rows_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    """The one line that tells a 4.0/4.1 user that an AvailableNow or Once run (one batch there) leaves rows for
    the next run: logged once per run, naming the caps, the rows left and the ways out."""
    reader = tracking(ListLog(10), MemoryStore("list-log"), max_rows_per_partition="4", maxOffsetsPerTrigger="100")
    with caplog.at_level(logging.WARNING, logger="spyt_queue.compat"):
        reader.latestOffset()
        reader.latestOffset()
    notes = [r.getMessage() for r in caplog.records if r.name == "spyt_queue.compat"]
    assert len(notes) == 1, notes
    (note,) = notes
    assert "max_rows_per_partition=4, maxOffsetsPerTrigger=100" in note
    assert "with 12 rows left for the next run" in note
    assert "PySpark >= 4.2" in note and "processingTime" in note
    assert note == AVAILABLE_NOW_NOTE.format(
        version=__import__("pyspark").__version__, caps="max_rows_per_partition=4, maxOffsetsPerTrigger=100", left=12
    )


def test_a_batch_that_reads_everything_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    """Without caps, or with caps the backlog fits in, the single batch reads everything: no warning."""
    with caplog.at_level(logging.WARNING, logger="spyt_queue.compat"):
        tracking(ListLog(10), MemoryStore("list-log")).latestOffset()
        tracking(ListLog(10), MemoryStore("list-log"), max_rows_per_partition="10").latestOffset()
    assert [r for r in caplog.records if r.name == "spyt_queue.compat"] == []


def test_driver_reads_note_a_capped_batch_too(caplog: pytest.LogCaptureFixture) -> None:
    """``read_mode=driver`` gets its start from Spark on every line; on 4.0/4.1 its wrapper adds the same note."""
    planner = tracking(ListLog(10), MemoryStore("list-log"), max_rows_per_partition="4").reader
    driver = DriverStreamReader(planner)
    chosen = compat.simple_stream_reader(driver)
    assert (chosen is driver) == compat.HAS_READ_LIMITS
    reader = CapNotingDriverReader(driver)
    with caplog.at_level(logging.WARNING, logger="spyt_queue.compat"):
        rows, end = reader.read(reader.initialOffset())
        assert positions(end) == {"0": 4, "1": 4}
        assert sum(batch.num_rows for batch in rows) == 8
        reader.read(end)
    notes = [r.getMessage() for r in caplog.records if r.name == "spyt_queue.compat"]
    assert len(notes) == 1 and "max_rows_per_partition=4" in notes[0] and "12 rows left" in notes[0], notes


class Registry:
    """``spark.dataSource`` of a session: records what is registered, or raises ``error``."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.registered: list[type] = []

    def register(self, source: type) -> None:
        if self.error is not None:
            raise self.error
        self.registered.append(source)


class Session:
    def __init__(self, error: Exception | None = None) -> None:
        self.dataSource = Registry(error)


class Source:
    @classmethod
    def name(cls) -> str:
        return "ytqueue"


def test_register_data_source_registers_where_the_line_allows() -> None:
    session = Session()
    assert register_data_source(session, Source) is True
    assert session.dataSource.registered == [Source]


def test_register_data_source_keeps_a_discovered_source_where_the_line_refuses_to_replace_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """PySpark 4.0's refusal (``DATA_SOURCE_ALREADY_EXISTS``) is an answer, not an error: the installed source
    stays (``False``), said at INFO."""
    refusal = Exception("[DATA_SOURCE_ALREADY_EXISTS] Data source 'ytqueue' already exists. SQLSTATE: 42710")
    with caplog.at_level(logging.INFO, logger="spyt_queue.compat"):
        assert register_data_source(Session(refusal), Source) is False
    assert any("keeps the discovered data source 'ytqueue'" in r.getMessage() for r in caplog.records)


def test_register_data_source_raises_any_other_error() -> None:
    with pytest.raises(RuntimeError, match="session stopped"):
        register_data_source(Session(RuntimeError("session stopped")), Source)
