"""Dead-letter options and helpers without Spark: option checks, the targets' own rules, the sink's row-by-row
fallback after a refused ``insert_rows``, and the per-batch counter."""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa
import pytest
import yt.yson as yson

from spyt_queue.connect import check_source_options
from spyt_queue.deadletter import DeadLetterError, log_batch, yson_payload
from spyt_queue.deadletter_targets import dead_letter_target
from spyt_queue.errors import BadRecordError, OptionError
from spyt_queue.kafka.deadletter import KafkaDeadLetterTarget
from spyt_queue.kafka.sink import KAFKA_SINK_OPTIONS
from spyt_queue.options import Options
from spyt_queue.sink_options import check_sink_options
from spyt_queue.yt.backend import YtConnection
from spyt_queue.yt.deadletter import YtDeadLetterTarget
from spyt_queue.yt.schema import YtSchema
from spyt_queue.yt.sink import YT_SINK_OPTIONS, YtWriteCommit
from spyt_queue.yt.table_writer import YtTableWriter


def refused(raw: dict[str, str]) -> str:
    with pytest.raises(OptionError) as caught:
        dead_letter_target(Options(raw))
    return str(caught.value)


def test_dead_letter_options_are_known_to_yt_sources_and_every_sink() -> None:
    options = {"deadLetter.path": "//dl", "deadLetter.create": "true", "deadLetter.proxy": "p", "deadLetter.token": "t"}
    check_source_options(Options({"path": "//q", **options}))
    check_sink_options(Options({"path": "//o", **options}), YT_SINK_OPTIONS, "the YTsaurus table sink", "yt.")
    kafka = {"deadLetter.topic": "dl", "deadLetter.kafka.bootstrap.servers": "b:9092", "deadLetter.kafka.acks": "all"}
    check_sink_options(Options({"topic": "t", **kafka}), KAFKA_SINK_OPTIONS, "the Kafka sink", "kafka.")
    with pytest.raises(OptionError) as caught:
        check_source_options(Options({"path": "//q", "deadLetter.pth": "//dl"}))
    assert "did you mean 'deadLetter.path'?" in str(caught.value)


def test_kafka_source_refuses_dead_letter_options_saying_why() -> None:
    with pytest.raises(OptionError) as caught:
        check_source_options(Options({"kafka.bootstrap.servers": "b:9092", "subscribe": "t", "deadLetter.topic": "d"}))
    assert "the Kafka source returns key and value as bytes and never rejects a record" in str(caught.value)


def test_without_a_target_bad_rows_stop_the_query() -> None:
    assert dead_letter_target(Options({"path": "//q", "proxy": "p"})) is None


def test_bad_dead_letter_option_values_are_refused_in_one_line() -> None:
    assert "give either deadLetter.path (a YT table) or deadLetter.topic" in refused(
        {"deadLetter.path": "//a", "deadLetter.topic": "t", "proxy": "p"}
    )
    assert "Invalid option 'deadLetter.create': needs deadLetter.path or deadLetter.topic" in refused(
        {"deadLetter.create": "true"}
    )
    assert "Invalid option 'deadLetter.create': expected true or false, got 'maybe'" in refused(
        {"deadLetter.path": "//a", "deadLetter.create": "maybe", "proxy": "p"}
    )
    assert "Invalid option 'deadLetter.path': expected an absolute Cypress path" in refused(
        {"deadLetter.path": "home/a", "proxy": "p"}
    )
    assert "Invalid option 'deadLetter.kafka.bootstrap.servers': applies to deadLetter.topic" in refused(
        {"deadLetter.path": "//a", "proxy": "p", "deadLetter.kafka.bootstrap.servers": "b"}
    )
    no_brokers = refused({"deadLetter.topic": "t"})
    assert "deadLetter.topic needs brokers: set deadLetter.kafka.bootstrap.servers" in no_brokers
    assert "Invalid option 'deadLetter.topic': not a valid topic name" in refused(
        {"deadLetter.topic": "a b", "kafka.bootstrap.servers": "b"}
    )
    assert "Invalid option 'deadLetter.proxy': applies to deadLetter.path" in refused(
        {"deadLetter.topic": "t", "deadLetter.proxy": "p", "kafka.bootstrap.servers": "b"}
    )


def test_targets_take_the_query_connection_unless_told_otherwise(monkeypatch) -> None:
    monkeypatch.delenv("YT_PROXY", raising=False)
    target = dead_letter_target(Options({"deadLetter.path": "//dl", "proxy": "q:1", "yt.proxy.retries.count": "2"}))
    assert isinstance(target, YtDeadLetterTarget)
    assert target.connection.proxy == "q:1" and target.connection.config == {"proxy": {"retries": {"count": 2}}}
    other = dead_letter_target(Options({"deadLetter.path": "//dl", "proxy": "q:1", "deadLetter.proxy": "d:2"}))
    assert isinstance(other, YtDeadLetterTarget) and other.connection.proxy == "d:2"
    assert "deadLetter.path needs a YT proxy" in refused({"deadLetter.path": "//dl"})  # a Kafka query, no YT_PROXY
    kafka = dead_letter_target(Options({"deadLetter.topic": "dl", "kafka.bootstrap.servers": "k:9"}))
    assert isinstance(kafka, KafkaDeadLetterTarget) and kafka.config["bootstrap.servers"] == "k:9"
    assert kafka.config["enable.idempotence"] is True and kafka.config["acks"] == "all"


def test_payload_is_yson_even_for_values_yson_has_no_type_for() -> None:
    import datetime as dt
    from decimal import Decimal

    row = {"n": yson.YsonUint64(2**64 - 1), "raw": b"\xff", "when": dt.date(2024, 1, 2), "d": Decimal("1.5")}
    back = yson.loads(yson_payload(row), encoding=None)
    assert int(back[b"n"]) == 2**64 - 1 and back[b"raw"] == b"\xff"
    assert back[b"when"] == b"2024-01-02" and back[b"d"] == b"1.5"


class _RefusingClient:
    """``insert_rows`` refuses any request holding a row whose ``id`` is 13 (as YT refuses a whole request)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def insert_rows(self, path: str, rows: list[dict[str, Any]], update: Any = None) -> None:
        if any(row.get("id") == 13 for row in rows):
            raise RuntimeError("Error 1: the row is refused by the table")
        self.rows.extend(rows)


class _Letters:
    def __init__(self) -> None:
        from spyt_queue.deadletter import BoundDeadLetters

        self.written: list[Any] = []
        self.bound = BoundDeadLetters(self, "yt://out", "sink")  # type: ignore[arg-type]

    def describe(self) -> str:
        return "test"

    def write(self, letters: list[Any]) -> None:
        self.written.extend(letters)


def _writer(client: _RefusingClient) -> YtTableWriter:
    schema = YtSchema.parse([{"name": "id", "type": "int64", "required": True}, {"name": "payload", "type": "string"}])
    writer = YtTableWriter(YtConnection("p"), "//out", schema)
    writer.connection = type("C", (), {"client": lambda self: client})()  # type: ignore[assignment]
    return writer


def test_a_row_the_table_refuses_is_found_row_by_row_and_dead_lettered() -> None:
    client, letters = _RefusingClient(), _Letters()
    writer = _writer(client)
    writer.dead_letters = letters.bound
    batch = pa.RecordBatch.from_pydict(
        {
            "__spyt_streaming_src_tablet_index": pa.array([1, 1, 1], pa.int64()),
            "__spyt_streaming_src_row_index": pa.array([7, 8, 9], pa.int64()),
            "id": pa.array([12, 13, 14], pa.int64()),
            "payload": ["a", "b", "c"],
        }
    )
    stats = writer.write(iter([batch]))
    assert [r["id"] for r in client.rows] == [12, 14] and stats.rows == 2 and stats.dead_letters == 1
    (letter,) = letters.written
    assert letter.stage == "sink" and letter.source == "yt://out"
    assert letter.error == "insert_rows into //out refused the row: Error 1: the row is refused by the table"
    assert (letter.partition, letter.offset) == ("1", 8)  # the source tablet and row of the refused row
    assert yson.loads(letter.payload, encoding=None)[b"id"] == 13


def test_without_dead_letters_a_refused_insert_still_fails_the_task() -> None:
    writer = _writer(_RefusingClient())
    batch = pa.RecordBatch.from_pydict({"id": pa.array([13], pa.int64()), "payload": ["b"]})
    with pytest.raises(BadRecordError, match="insert_rows of 1 rows into //out failed"):
        writer.write(iter([batch]))


def test_a_dead_letter_target_that_fails_fails_the_task() -> None:
    class Broken(_Letters):
        def write(self, letters: list[Any]) -> None:
            raise RuntimeError("table unmounted")

    client, broken = _RefusingClient(), Broken()
    writer = _writer(client)
    writer.dead_letters = broken.bound
    batch = pa.RecordBatch.from_pydict({"id": pa.array([1, 2], pa.int64()), "payload": pa.array([None, "x"])})
    writer.table = YtSchema.parse(
        [{"name": "id", "type": "int64", "required": True}, {"name": "payload", "type": "string", "required": True}]
    )
    with pytest.raises(DeadLetterError, match=r"Could not write 1 dead letter.*table unmounted.*not committed"):
        writer.write(iter([batch]))


def test_commit_logs_the_batch_dead_letter_count(caplog) -> None:
    letters = _Letters()
    messages = [YtWriteCommit(rows=3, skipped=0, requests=1, dead_letters=2), None, YtWriteCommit(1, 0, 1)]
    with caplog.at_level(logging.WARNING, logger="spyt_queue.deadletter"):
        assert log_batch(messages, 7, letters.bound) == 2
    assert "micro-batch 7: 2 row(s) dead-lettered to test" in caplog.text


def test_sink_coordinates_are_the_source_row_else_the_task_position() -> None:
    """A sink's dead letter names the source tablet and row when the batch carries the service columns (and they
    are set), else the task and the row's position in it."""
    from spyt_queue.records import batch_coordinates

    with_service = pa.RecordBatch.from_pydict(
        {"v": [1, 2], "__spyt_streaming_src_tablet_index": [3, None], "__spyt_streaming_src_row_index": [7, None]}
    )
    assert batch_coordinates(with_service, 10) == [("3", 7), ("this task", 11)]
    assert batch_coordinates(pa.RecordBatch.from_pydict({"v": [1, 2]}), 5) == [("this task", 5), ("this task", 6)]


def test_hbase_sink_tells_a_refused_put_from_a_failed_call() -> None:
    """Only a refusal of the mutations (a RuntimeException in the gateway's handler, IllegalArgument, or an IOError
    naming a non-retriable cause) is sent again row by row and dead-lettered; a transport error, a timeout or an
    unavailable region fails the task (Spark retries it)."""
    import happybase  # noqa: F401 - loads the Thrift1 IDL as the module Hbase_thrift
    import Hbase_thrift
    from thriftpy2.thrift import TApplicationException
    from thriftpy2.transport import TTransportException

    from spyt_queue.sinks.hbase.sink import is_refusal

    assert is_refusal(TApplicationException(TApplicationException.INTERNAL_ERROR, "Internal error processing x"))
    assert is_refusal(Hbase_thrift.IllegalArgument(message="bad"))
    assert is_refusal(Hbase_thrift.IOError(message="Failed 1 action: NoSuchColumnFamilyException: Column family zz"))
    assert not is_refusal(Hbase_thrift.IOError(message="RetriesExhaustedException: callTimeout=60000"))
    assert not is_refusal(TTransportException(message="TSocket read 0 bytes"))
    assert not is_refusal(TApplicationException(TApplicationException.UNKNOWN_METHOD, "Invalid method name"))
    assert not is_refusal(OSError("connection reset"))


def test_the_collector_keeps_each_bad_record_with_its_coordinates_and_writes_them_once() -> None:
    """The one collector every sink's dead-letter path uses: a row's coordinates are the source row it carries,
    else the task and its position; a batch row is kept as the row it was; ``flush`` writes every letter once
    (nothing for none) and returns the count the commit message reports."""
    from spyt_queue.deadletter import DeadLetterCollector

    letters = _Letters()
    collector = DeadLetterCollector(letters.bound)
    assert collector.flush() == 0 and letters.written == []
    collector.add_row({"v": 1, "__spyt_streaming_src_tablet_index": 2, "__spyt_streaming_src_row_index": 9}, 0, "bad")
    collector.add_row({"v": 2}, 4, ValueError("too   large"))
    collector.add_batch_row(("t", 5), "refused", pa.RecordBatch.from_pydict({"v": [7, 8]}), 1)
    collector.add(("t", 6), "raw", b"\x01")
    assert len(collector) == 4
    assert collector.flush() == 4 and collector.flush() == 0
    assert [(x.partition, x.offset, x.error) for x in letters.written] == [
        ("2", 9, "bad"),
        ("this task", 4, "ValueError: too large"),
        ("t", 5, "refused"),
        ("t", 6, "raw"),
    ]
    assert yson.loads(letters.written[2].payload, encoding=None) == {b"v": 8} and letters.written[3].payload == b"\x01"
