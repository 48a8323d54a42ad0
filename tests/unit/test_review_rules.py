"""Rules fixed after review, each pinned by a test that fails if the rule breaks (pure logic, no server)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from spyt_queue.backend import PartitionBounds
from spyt_queue.errors import BadRecordError, SchemaMismatchError
from spyt_queue.options import Options
from spyt_queue.positions import resolve_positions
from spyt_queue.settings import Position
from spyt_queue.yt.backend import YtConnection
from spyt_queue.yt.schema import YtColumn, YtSchema
from spyt_queue.yt.sink import YtWriteCommit, check_one_task_per_source_tablet
from spyt_queue.yt.table_writer import YtTableWriter, check_schema


def test_explicit_options_win_over_session_defaults_under_any_alias() -> None:
    options = Options({"dynBatchSize": "10"}, defaults={"dyn_batch_size": "1000"})
    assert options.get_int("dyn_batch_size", None, "dynBatchSize") == 10
    assert Options({}, defaults={"dyn_batch_size": "1000"}).get_int("dyn_batch_size", None) == 1000


def test_ending_offsets_leave_unlisted_partitions_at_their_end() -> None:
    bounds = {"t:0": PartitionBounds(0, 100), "t:1": PartitionBounds(5, 50)}
    ending = Position("explicit", explicit={"t:0": 60})
    assert resolve_positions(ending, bounds, {}, ending=True) == {"t:0": 60, "t:1": 50}
    starting = Position("explicit", explicit={"t:0": 60})
    assert resolve_positions(starting, bounds, {}) == {"t:0": 60, "t:1": 5}


def test_producer_mode_reports_one_source_tablet_in_two_tasks_without_failing_replays() -> None:
    """Tasks check their rows against the session before pushing: a batch whose tasks succeeded lost nothing, so
    the driver only reports the split (failing would fail every replay of the batch too)."""
    ok = [YtWriteCommit(1, 0, 1, {0: (0, 9)}), YtWriteCommit(1, 0, 1, {1: (0, 9)}), None]
    assert check_one_task_per_source_tablet(ok) == []
    split = [YtWriteCommit(1, 0, 1, {0: (0, 49)}), YtWriteCommit(1, 0, 1, {0: (50, 99)})]
    assert check_one_task_per_source_tablet(split) == [0]


def _writer(column_type: str) -> YtTableWriter:
    table = YtSchema((YtColumn("v", {"type_name": "optional", "item": column_type}),))
    return YtTableWriter(YtConnection("127.0.0.1:1"), "//t", table)


def test_unsigned_columns_accept_what_the_reader_produces_and_range_check_it() -> None:
    from pyspark.sql.types import IntegerType, LongType, ShortType, StructField, StructType

    for yt_type, spark_type in (("uint8", ShortType()), ("uint16", IntegerType()), ("uint32", LongType())):
        check_schema(StructType([StructField("v", spark_type)]), _writer(yt_type).table, "//t")
    with pytest.raises(SchemaMismatchError):
        check_schema(StructType([StructField("v", LongType())]), _writer("uint16").table, "//t")
    writer = _writer("uint8")
    assert writer._convert(pa.array([0, 255, None], pa.int16()), writer.table.column("v")) == [0, 255, None]
    with pytest.raises(BadRecordError, match=r"row 1 .* 256, outside the range of YT type uint8"):
        writer._convert(pa.array([1, 256], pa.int16()), writer.table.column("v"))


def test_binary_decimals_read_without_type_v3_are_written_back_unchanged() -> None:
    writer = YtTableWriter(
        YtConnection("127.0.0.1:1"),
        "//t",
        YtSchema((YtColumn("d", {"type_name": "decimal", "precision": 10, "scale": 2}),)),
    )
    raw = b"\x80\x00\x00\x00\x00\x00\x01\x3a"
    assert writer._convert(pa.array([raw], pa.binary()), writer.table.column("d")) == [raw]
