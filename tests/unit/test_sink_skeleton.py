"""The sink skeleton (:mod:`spyt_queue.spark.sink_skeleton`) holds for every sink, without servers: each of the four
sinks (YTsaurus tables, Kafka, Kudu, HBase) is a :class:`WriteTask` shipped inside the same Spark writers, logs a
committed batch and its dead letters, says what a failed batch left, reports a refused commit in one line, and
(YTsaurus, Kudu, HBase) refuses to replace its target with the same one-line error."""

from __future__ import annotations

import logging
import pickle
import re
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import LongType, StringType, StructField, StructType

from spyt_queue.datasource import YtQueueDataSource
from spyt_queue.deadletter import BoundDeadLetters
from spyt_queue.errors import BadRecordError, OptionError
from spyt_queue.kafka.sink import KafkaWriteCommit, KafkaWriteTask
from spyt_queue.options import Options
from spyt_queue.sinks.hbase.sink import HBaseWriteCommit, settings_from_options
from spyt_queue.sinks.hbase.source import HBaseDataSource
from spyt_queue.sinks.kudu.planners import planner_from_options
from spyt_queue.sinks.kudu.sink import KuduWriteCommit, KuduWriteTask
from spyt_queue.sinks.kudu.source import KuduDataSource
from spyt_queue.spark.sink_skeleton import SINK_STAGE, SinkBatchWriter, SinkStreamWriter, WriteTask
from spyt_queue.yt.backend import YtConnection
from spyt_queue.yt.schema import YtSchema
from spyt_queue.yt.sink import YtWriteCommit, YtWriteTask
from spyt_queue.yt.table_writer import YtTableWriter

SCHEMA = StructType([StructField("k", LongType()), StructField("v", StringType())])
KAFKA_SCHEMA = StructType([StructField("value", StringType())])


class _Target:
    """A dead-letter target that only describes itself (the skeleton never writes letters on the driver)."""

    def describe(self) -> str:
        return "dl-target"


def _dead() -> BoundDeadLetters:
    return BoundDeadLetters(_Target(), "test", SINK_STAGE)  # type: ignore[arg-type]


def _yt(dead: BoundDeadLetters) -> WriteTask:
    writer = YtTableWriter(YtConnection("p"), "//out", YtSchema.parse([{"name": "k", "type": "int64"}]))
    writer.dead_letters = dead
    return YtWriteTask(writer)


def _kafka(dead: BoundDeadLetters) -> WriteTask:
    return KafkaWriteTask({"bootstrap.servers": "localhost:1"}, "out", dead)


def _kudu(dead: BoundDeadLetters) -> WriteTask:
    return KuduWriteTask("m:7051", "out", planner_from_options({"planner.key": "k"}), dead_letters=dead)


def _hbase(dead: BoundDeadLetters) -> WriteTask:
    settings = settings_from_options(Options({"thrift": "h:9090", "table": "out", "row_key": "k"}), SCHEMA)
    return settings.__class__(**{**settings.__dict__, "dead_letters": dead})


#: Each sink: its task built around a dead-letter target, and the commit message of one task that wrote 3 rows and
#: dead-lettered 2.
SINKS: dict[str, tuple[Callable[[BoundDeadLetters], WriteTask], WriterCommitMessage]] = {
    "ytqueue": (_yt, YtWriteCommit(rows=3, skipped=0, requests=1, dead_letters=2)),
    "kafka": (_kafka, KafkaWriteCommit(records=3, dead_letters=2)),
    "spyt_kudu": (_kudu, KuduWriteCommit(rows=3, keys=3, dead_letters=2)),
    "spyt_hbase": (_hbase, HBaseWriteCommit(rows=3, cells=3, dead_letters=2)),
}


@pytest.fixture(autouse=True)
def _restore_hide_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """One-line errors set SPARK_HIDE_TRACEBACK in this process: restored after each test."""
    monkeypatch.delenv("SPARK_HIDE_TRACEBACK", raising=False)


@pytest.mark.parametrize("sink", sorted(SINKS))
def test_every_sink_is_a_write_task_shipped_in_the_skeleton_writers(sink: str) -> None:
    build, _ = SINKS[sink]
    task = build(_dead())
    assert isinstance(task, WriteTask)
    shipped = pickle.loads(pickle.dumps(SinkStreamWriter(task)))
    assert shipped.task.describe() == task.describe() and shipped.task.dead_letters is not None
    assert shipped.task.dead_letters.stage == SINK_STAGE


@pytest.mark.parametrize("sink", sorted(SINKS))
def test_every_sink_logs_its_committed_batch_and_its_dead_letters(sink: str, caplog: pytest.LogCaptureFixture) -> None:
    build, message = SINKS[sink]
    task = build(_dead())
    with caplog.at_level(logging.INFO, logger="spyt_queue"):
        SinkStreamWriter(task).commit([message], 7)
        SinkBatchWriter(task).commit([message])
    lines = [record.getMessage() for record in caplog.records]
    assert "micro-batch 7: 2 row(s) dead-lettered to dl-target" in lines
    assert "write: 2 row(s) dead-lettered to dl-target" in lines
    committed = [line for line in lines if " committed: " in line]
    assert [line.split(": ", 2)[:2] for line in committed] == [
        [task.describe(), "micro-batch 7 committed"],
        [task.describe(), "write committed"],
    ]
    assert all("3" in line for line in committed), committed


@pytest.mark.parametrize("sink", sorted(SINKS))
def test_every_sink_says_what_a_failed_batch_left(sink: str, caplog: pytest.LogCaptureFixture) -> None:
    build, message = SINKS[sink]
    task = build(None)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="spyt_queue.sink"):
        SinkStreamWriter(task).abort([message, None], 7)
        SinkBatchWriter(task).abort([message, None])
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{task.describe()}: micro-batch 7 failed: ") and "3" in lines[0]
    assert lines[1].startswith(f"{task.describe()}: write failed: ")


def test_a_refused_commit_reaches_the_user_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    """The Kudu sink refuses a batch whose key two tasks planned: one line, nothing logged as committed."""
    import os

    task = _kudu(_dead())
    planned = [KuduWriteCommit(rows=1, keys=1, planned_keys=["(1,)"]) for _ in range(2)]
    with caplog.at_level(logging.INFO, logger="spyt_queue.sink"), pytest.raises(BadRecordError) as refused:
        SinkStreamWriter(task).commit(planned, 3)
    assert "planned by tasks 0 and 1" in str(refused.value) and "\n" not in str(refused.value)
    assert os.environ.get("SPARK_HIDE_TRACEBACK") == "1"
    assert not [r for r in caplog.records if "committed" in r.getMessage()]


def _yt_source(options: dict[str, str]) -> Any:
    return YtQueueDataSource({"path": "//out", **options})


#: The write-only data sources and ``ytqueue`` (YTsaurus tables): each refuses to replace its target.
REPLACING = {
    "ytqueue": lambda: _yt_source({}),
    "spyt_kudu": lambda: KuduDataSource({"kudu.master": "m:7051", "table": "out"}),
    "spyt_hbase": lambda: HBaseDataSource({"thrift": "h:9090", "table": "out", "row_key": "k"}),
}


def test_the_kafka_sink_refuses_a_batch_overwrite_and_takes_complete_mode_as_spark_does() -> None:
    """Spark's Kafka sink refuses ``mode("overwrite")`` (records can not be taken back) and produces every row again
    in complete mode: so does ours (the batch refusal comes before any broker is asked)."""
    source = _yt_source({"kafka.bootstrap.servers": "127.0.0.1:9", "topic": "t"})
    with pytest.raises(OptionError) as batch:
        source.writer(KAFKA_SCHEMA, True)
    assert str(batch.value) == (
        "Invalid option 'mode': ytqueue produces records to Kafka and can not replace the target (overwrite): "
        "use mode('append') (Spark itself refuses the default mode, errorifexists, for every Python data source)"
    )


@pytest.mark.parametrize("sink", sorted(REPLACING))
def test_every_sink_refuses_to_replace_its_target_in_the_same_one_line_error(sink: str) -> None:
    source = REPLACING[sink]()
    with pytest.raises(OptionError) as stream:
        source.streamWriter(SCHEMA, True)
    with pytest.raises(OptionError) as batch:
        source.writer(SCHEMA, True)
    assert re.fullmatch(
        rf"Invalid option 'outputMode': {sink} [a-z ]+ each micro-batch and can not replace the target \(complete "
        r"mode\): use outputMode [a-z ]+",
        str(stream.value),
    ), str(stream.value)
    assert re.fullmatch(
        rf"Invalid option 'mode': {sink} [a-z ]+ and can not replace the target \(overwrite\): use mode\('append'\) "
        r"\(Spark itself refuses the default mode, errorifexists, for every Python data source\)",
        str(batch.value),
    ), str(batch.value)
