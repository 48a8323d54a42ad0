"""The YT sink's pure rules: the producer-mode check of source tablets split across tasks, and the table writer's
conversions of unsigned integers and of binary decimals read without type v3 (no server)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from spyt_queue.errors import BadRecordError, SchemaMismatchError
from spyt_queue.yt.backend import YtConnection
from spyt_queue.yt.schema import YtColumn, YtSchema
from spyt_queue.yt.sink import YtWriteCommit, check_one_task_per_source_tablet
from spyt_queue.yt.table_writer import YtTableWriter, check_schema


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
