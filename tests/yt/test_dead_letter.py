"""Dead-letter targets (``deadLetter.path`` / ``deadLetter.topic``), as a user sees them in Spark queries.

For each source and sink covered: without the option a bad row stops the query naming partition, offset and reason
(and the committed offsets stay); with it the good rows arrive, the bad row is in the dead-letter target with its
coordinates, the error and the raw payload, and the offsets advance past it. A dead-letter target that can not be
written fails the batch: nothing is committed (dead letters are durable before a batch commits).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import yt.yson as yson
from confluent_kafka import Consumer, TopicPartition

from spyt_queue.deadletter import DeadLetter
from spyt_queue.kafka.deadletter import KafkaDeadLetterTarget
from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.backend import YtConnection
from spyt_queue.yt.deadletter import YtDeadLetterTarget
from tests.kafka.helpers import Topic
from tests.queries import run_to_end
from tests.yt.user_errors import query_failure

pytestmark = pytest.mark.spark

SOURCE = "__spyt_streaming_src_tablet_index", "__spyt_streaming_src_row_index"


def _queue(yt: Any, root: str, columns: list[dict[str, Any]], rows: list[dict[str, Any]]) -> tuple[str, str]:
    """A one-tablet queue holding ``rows`` and a registered consumer."""
    queue, consumer = f"{root}/queue", f"{root}/consumer"
    create_queue(yt, queue, columns)
    create_consumer(yt, consumer, queue)
    yt.insert_rows(queue, rows)
    return queue, consumer


def _offsets(yt: Any, queue: str, consumer: str) -> dict[int, int]:
    rows = yt.select_rows(f'* from [{consumer}] where queue_path = "{queue}"')
    return {int(r["partition_index"]): int(r["offset"]) for r in rows}


def _read(spark: Any, proxy: str, queue: str, consumer: str, **options: Any) -> Any:
    reader = (
        spark.readStream.format("ytqueue")
        .option("proxy", proxy)
        .option("consumer_path", consumer)
        .option("include_service_columns", "true")
    )
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load(queue)


def _stream(spark: Any, yt: Any, proxy: str, root: str, columns: list[dict[str, Any]], rows: list[dict[str, Any]],
            *exprs: str) -> tuple[Any, str, str]:  # fmt: skip
    """A one-tablet queue of ``rows`` read as a stream (with the service columns), ``selectExpr(*exprs)``; the
    DataFrame, the queue and its consumer."""
    queue, consumer = _queue(yt, root, columns, rows)
    return _read(spark, proxy, queue, consumer).selectExpr(*exprs), queue, consumer


def _start(df: Any, sink: str, checkpoint: str, *options: Mapping[str, Any]) -> Callable[[dict[str, Any]], Any]:
    """``df.writeStream.format(sink)`` with every option of ``options``, as ``start(trigger)`` for
    :func:`_finish` (to the end of the input on every PySpark line) or :func:`_failure`."""
    writer = df.writeStream.format(sink).option("checkpointLocation", checkpoint)
    for group in options:
        for key, value in group.items():
            writer = writer.option(key, str(value))
    return lambda trigger: writer.trigger(**trigger).start()


def _to_yt(df: Any, proxy: str, output: str, checkpoint: str, **options: Any) -> Any:
    return _start(df, "ytqueue", checkpoint, {"proxy": proxy, "path": output}, options)


def _finish(start: Callable[[dict[str, Any]], Any], timeout: float = 180) -> None:
    """Run the query to the end of its input (AvailableNow, or on PySpark 4.0/4.1 until idle); raise its error."""
    run_to_end(start, timeout=timeout)


def _failure(start: Callable[[dict[str, Any]], Any]) -> BaseException:
    """Start the query (AvailableNow: its first batch holds the bad records on every line); the error it stops with."""
    return query_failure(start({"availableNow": True}))


def _dead_letters(yt: Any, path: str) -> list[dict[str, Any]]:
    return sorted(yt.select_rows(f"* from [{path}]"), key=lambda r: (r["partition"], r["offset"]))


def _coordinates(letters: list[dict[str, Any]]) -> list[tuple[str, str, str, int]]:
    return [(r["source"], r["stage"], r["partition"], r["offset"]) for r in letters]


def _assert_letters(yt: Any, path: str, source: str, expected: Mapping[int, str]) -> list[dict[str, Any]]:
    """The dead letters in ``path`` are the sink records of source tablet 0 rows ``expected`` (row index -> a piece
    of the error), each with its row (whose ``id`` is the row index) as payload; returns them."""
    letters = _dead_letters(yt, path)
    assert _coordinates(letters) == [(source, "sink", "0", offset) for offset in expected]
    for letter, piece in zip(letters, expected.values(), strict=True):
        assert piece in letter["error"], (piece, letter["error"])
    assert [_payload(r)[b"id"] for r in letters] == list(expected)
    return letters


@pytest.fixture
def dead(yt_proxy: str, yt_root: str) -> tuple[str, dict[str, str]]:
    """A dead-letter table ``<yt_root>/dead`` and the options that make a query create and use it."""
    path = f"{yt_root}/dead"
    return path, {"deadLetter.path": path, "deadLetter.create": "true", "deadLetter.proxy": yt_proxy}


def _payload(letter: dict[str, Any]) -> Any:
    raw = letter["payload"]
    return yson.loads(raw if isinstance(raw, bytes) else yson.get_bytes(raw), encoding=None)


# -- the YTsaurus queue source ----------------------------------------------------------------------------------

SOURCE_COLUMNS = [column("id", "int64", required=True), column("n", "uint64"), column("s", "string")]
SOURCE_ROWS = [
    {"id": 0, "n": yson.YsonUint64(1), "s": "a"},
    {"id": 1, "n": yson.YsonUint64(2**64 - 1), "s": "b"},  # above 2^63-1: does not fit Spark's bigint
    {"id": 2, "n": yson.YsonUint64(3), "s": b"\xff\xfe"},  # invalid UTF-8 in a string column read as Spark string
    {"id": 3, "n": yson.YsonUint64(4), "s": "d"},
]
SOURCE_OUTPUT = [column("id", "int64", required=True), column("n", "int64"), column("s", "string")]


@pytest.fixture
def bad_source(yt, yt_root):
    queue, consumer = _queue(yt, yt_root, SOURCE_COLUMNS, SOURCE_ROWS)
    output = f"{yt_root}/out"
    create_queue(yt, output, SOURCE_OUTPUT)
    return queue, consumer, output


def test_yt_source_bad_row_stops_the_query_by_default(spark, yt, yt_proxy, bad_source, checkpoint) -> None:
    queue, consumer, output = bad_source
    df = _read(spark, yt_proxy, queue, consumer).select("id", "n", "s")
    error = _failure(_to_yt(df, yt_proxy, output, checkpoint))
    assert "BadRecordError: Row 1 of tablet 0 of " in str(error), error
    assert "column 'n' holds 18446744073709551615, which does not fit Spark type int64" in str(error)
    assert list(yt.select_rows(f"id from [{output}]")) == []
    assert _offsets(yt, queue, consumer) == {}  # nothing committed


def test_yt_source_bad_rows_go_to_the_dead_letter_table(spark, yt, yt_proxy, bad_source, dead, checkpoint) -> None:
    queue, consumer, output = bad_source
    df = _read(spark, yt_proxy, queue, consumer, **dead[1])
    _finish(_to_yt(df.select("id", "n", "s"), yt_proxy, output, checkpoint))
    assert sorted(r["id"] for r in yt.select_rows(f"id from [{output}]")) == [0, 3]
    letters = _dead_letters(yt, dead[0])
    assert _coordinates(letters) == [
        (f"yt:{queue}", "source", "0", 1),
        (f"yt:{queue}", "source", "0", 2),
    ]
    assert "column 'n' holds 18446744073709551615" in letters[0]["error"]
    assert "column 's' holds b'\\xff\\xfe'" in letters[1]["error"] and "binary_strings=true" in letters[1]["error"]
    first, second = _payload(letters[0]), _payload(letters[1])
    assert first[b"id"] == 1 and int(first[b"n"]) == 2**64 - 1
    assert second[b"id"] == 2 and second[b"s"] == b"\xff\xfe"  # the raw bytes, as read
    assert _offsets(yt, queue, consumer) == {0: 4}  # the stream went on past both


def test_yt_source_unwritable_dead_letter_target_fails_the_batch(
    spark, yt, yt_proxy, yt_root, bad_source, checkpoint
) -> None:
    """Dead letters are durable before the batch commits: a target that refuses them fails the task, nothing is
    written downstream and the consumer does not move (here: a table whose extra required column is never set)."""
    queue, consumer, output = bad_source
    dead = _unwritable_dead_table(yt, yt_root)
    df = _read(spark, yt_proxy, queue, consumer, **{"deadLetter.path": dead})
    error = _failure(_to_yt(df.select("id", "n", "s"), yt_proxy, output, checkpoint))
    assert "DeadLetterError: Could not write 2 dead letter(s) of yt:" in str(error), error
    assert list(yt.select_rows(f"id from [{output}]")) == []
    assert _offsets(yt, queue, consumer) == {}
    assert list(yt.select_rows(f"* from [{dead}]")) == []


_DEAD_COLUMNS = [
    column("source", "string"),
    column("stage", "string"),
    column("partition", "string"),
    column("offset", "int64"),
    column("error", "string"),
    column("payload", "string"),
    column("time_us", "int64"),
]


def _unwritable_dead_table(yt: Any, root: str) -> str:
    """A dead-letter table that refuses every dead letter: its extra required column is never set."""
    create_queue(yt, f"{root}/dead", [*_DEAD_COLUMNS, column("extra", "int64", required=True)])
    return f"{root}/dead"


def test_missing_dead_letter_table_is_refused_unless_created(spark, yt_proxy, yt_root, bad_source) -> None:
    queue, consumer, _ = bad_source
    with pytest.raises(Exception) as failure:
        _read(spark, yt_proxy, queue, consumer, **{"deadLetter.path": f"{yt_root}/none"})
    assert f"Invalid option 'deadLetter.path': {yt_root}/none does not exist" in str(failure.value)
    assert "set deadLetter.create=true" in str(failure.value)


# -- the YTsaurus table sink -----------------------------------------------------------------------------------

SINK_COLUMNS = [column("id", "int64", required=True), column("payload", "string"), column("small", "int64")]
SINK_ROWS = [
    {"id": 0, "payload": "a", "small": 1},
    {"id": 1, "payload": None, "small": 2},  # null in the target's required column
    {"id": 2, "payload": "c", "small": 300},  # outside the target's uint8
    {"id": 3, "payload": "d", "small": 4},
]
SINK_OUTPUT = [
    column("id", "int64", required=True),
    column("payload", "string", required=True),
    column("small", "uint8"),
]


def _sink_input(spark: Any, proxy: str, queue: str, consumer: str) -> Any:
    """The rows with ``small`` as smallint (what a uint8 column takes) and the source's service columns."""
    return _read(spark, proxy, queue, consumer).selectExpr("id", "payload", "CAST(small AS SMALLINT) AS small", *SOURCE)


@pytest.fixture
def bad_sink(yt, yt_root):
    queue, consumer = _queue(yt, yt_root, SINK_COLUMNS, SINK_ROWS)
    output = f"{yt_root}/out"
    create_queue(yt, output, SINK_OUTPUT)
    return queue, consumer, output


def test_yt_sink_bad_row_stops_the_query_by_default(spark, yt, yt_proxy, bad_sink, checkpoint) -> None:
    queue, consumer, output = bad_sink
    df = _sink_input(spark, yt_proxy, queue, consumer)
    error = _failure(_to_yt(df, yt_proxy, output, checkpoint))
    assert f"Null in required column 'payload' (string) of {output}: row 1 of Spark partition 0 (source tablet 0, " in (
        str(error)
    ), error
    assert list(yt.select_rows(f"id from [{output}]")) == []
    assert _offsets(yt, queue, consumer) == {}


def test_yt_sink_refused_rows_go_to_the_dead_letter_table(spark, yt, yt_proxy, bad_sink, dead, checkpoint) -> None:
    queue, consumer, output = bad_sink
    df = _sink_input(spark, yt_proxy, queue, consumer)
    _finish(_to_yt(df, yt_proxy, output, checkpoint, **dead[1]))
    assert sorted(r["id"] for r in yt.select_rows(f"id from [{output}]")) == [0, 3]
    letters = _dead_letters(yt, dead[0])
    assert _coordinates(letters) == [
        (f"yt:{output}", "sink", "0", 1),
        (f"yt:{output}", "sink", "0", 2),
    ]
    assert "Null in required column 'payload'" in letters[0]["error"]
    assert "holds 300, outside the range of YT type uint8" in letters[1]["error"]
    assert _payload(letters[0])[b"id"] == 1 and _payload(letters[1])[b"small"] == 300
    assert _offsets(yt, queue, consumer) == {0: 4}


def test_yt_sink_dead_letters_refused_with_producer_sessions(spark, yt_proxy, yt_root, bad_sink, checkpoint) -> None:
    queue, consumer, output = bad_sink
    df = _sink_input(spark, yt_proxy, queue, consumer)
    options = {"deadLetter.path": f"{yt_root}/dead", "deadLetter.create": "true", "producer_path": f"{yt_root}/p"}
    error = _failure(_to_yt(df, yt_proxy, output, checkpoint, **options))
    assert "Invalid option 'deadLetter.path': can not be combined with producer_path" in str(error), error


# -- the Kafka sink --------------------------------------------------------------------------------------------


def _topic_records(bootstrap: str, topic: str, partitions: int = 1) -> list[Any]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dl-check", "enable.auto.commit": False})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        records: list[Any] = []
        want = sum(ends.values())
        for _ in range(60):
            if len(records) >= want:
                break
            records.extend(m for m in consumer.consume(want - len(records), timeout=1) if m.error() is None)
        return records
    finally:
        consumer.close()


KAFKA_ROWS = [{"id": i, "payload": ("x" * 5000 if i == 1 else f"v{i}"), "small": 0} for i in range(4)]


def _to_kafka(df: Any, bootstrap: str, topic: str, checkpoint: str, **options: Any) -> Any:
    # kafka.message.max.bytes: the 5000-byte record is refused by produce()
    kafka = {"kafka.bootstrap.servers": bootstrap, "topic": topic, "kafka.message.max.bytes": "2000"}
    return _start(df, "ytqueue", checkpoint, kafka, options)


def test_kafka_sink_refused_record_stops_the_query_by_default(
    spark, yt, yt_proxy, yt_root, kafka_bootstrap, checkpoint
) -> None:
    df, queue, consumer = _stream(spark, yt, yt_proxy, yt_root, SINK_COLUMNS, KAFKA_ROWS, "payload as value")
    target = Topic(kafka_bootstrap, checkpoint, partitions=1)
    error = _failure(_to_kafka(df, kafka_bootstrap, target.name, checkpoint))
    assert f"BadRecordError: could not produce record to {target.name}:" in str(error), error
    assert "too large" in str(error).lower()
    assert _offsets(yt, queue, consumer) == {}


def test_kafka_sink_refused_record_goes_to_the_dead_letter_topic(
    spark, yt, yt_proxy, yt_root, kafka_bootstrap, checkpoint
) -> None:
    df, queue, consumer = _stream(spark, yt, yt_proxy, yt_root, SINK_COLUMNS, KAFKA_ROWS, "payload as value", *SOURCE)
    target = Topic(kafka_bootstrap, checkpoint, partitions=1)
    dead = Topic(kafka_bootstrap, checkpoint, partitions=1)
    _finish(_to_kafka(df, kafka_bootstrap, target.name, checkpoint, **{"deadLetter.topic": dead.name}))
    assert sorted(m.value() for m in _topic_records(kafka_bootstrap, target.name)) == [b"v0", b"v2", b"v3"]
    (letter,) = _topic_records(kafka_bootstrap, dead.name)
    headers = {k: v.decode() for k, v in letter.headers()}
    assert headers["deadletter.source"] == f"kafka:{target.name}" and headers["deadletter.stage"] == "sink"
    assert (headers["deadletter.partition"], headers["deadletter.offset"]) == ("0", "1")  # source tablet 0, row 1
    assert "too large" in headers["deadletter.error"].lower()
    assert letter.key() == f"kafka:{target.name}/0/1".encode()
    assert yson.loads(letter.value(), encoding=None)[b"value"] == b"x" * 5000
    assert _offsets(yt, queue, consumer) == {0: 4}


def test_yt_sink_unwritable_dead_letter_target_fails_the_batch(
    spark, yt, yt_proxy, yt_root, bad_sink, checkpoint
) -> None:
    """The sink's dead letters are written before the task reports success: a target refusing them fails the
    batch, so the consumer does not move (the good rows written meanwhile are replayed: at-least-once)."""
    queue, consumer, output = bad_sink
    dead = _unwritable_dead_table(yt, yt_root)
    df = _sink_input(spark, yt_proxy, queue, consumer)
    error = _failure(_to_yt(df, yt_proxy, output, checkpoint, **{"deadLetter.path": dead}))
    assert "DeadLetterError: Could not write 2 dead letter(s) of yt:" in str(error), error
    assert _offsets(yt, queue, consumer) == {}
    assert list(yt.select_rows(f"* from [{dead}]")) == []


# -- ytqueue status ----------------------------------------------------------------------------------------------


def _letters(count: int) -> list[DeadLetter]:
    return [DeadLetter("yt://q", "source", "0", i, "bad", b"{}") for i in range(count)]


def test_status_counts_the_rows_of_a_dead_letter_table(yt_proxy, yt_root) -> None:
    from typer.testing import CliRunner

    from spyt_queue.cli import app

    target = YtDeadLetterTarget(YtConnection(yt_proxy), f"{yt_root}/dead", create=True)
    target.check()
    target.write(_letters(3))
    result = CliRunner().invoke(
        app, ["status", "--dead-letter", target.path, "--proxy", yt_proxy], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = [line.replace("│", " ").split() for line in result.stdout.splitlines()]
    assert ["0", "3"] in lines and ["total", "3"] in lines, result.stdout
    assert f"dead letters in yt:{target.path}" in result.stdout


def test_status_counts_the_records_of_a_dead_letter_topic(kafka_bootstrap, checkpoint) -> None:
    from typer.testing import CliRunner

    from spyt_queue.cli import app

    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    KafkaDeadLetterTarget({"bootstrap.servers": kafka_bootstrap}, topic.name).write(_letters(2))
    result = CliRunner().invoke(
        app,
        ["status", "--dead-letter-topic", topic.name, "--bootstrap-servers", kafka_bootstrap],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = [line.replace("│", " ").split() for line in result.stdout.splitlines()]
    assert [f"{topic.name}:0", "2"] in lines and ["total", "2"] in lines, result.stdout


# -- the Kudu sink ---------------------------------------------------------------------------------------------


def _to_kudu(df: Any, kudu: Any, table: str, checkpoint: str, **options: Any) -> Any:
    append = {"create_table": "true", "planner": "append", "planner.key": "k"}
    return _start(df, "spyt_kudu", checkpoint, {"kudu.master": kudu.master_addresses, "table": table}, append, options)


def _kudu_input(spark: Any, yt: Any, proxy: str, root: str) -> tuple[Any, str, str]:
    rows = [{"id": i, "payload": f"p{i}", "small": 0} for i in range(4)]
    return _stream(spark, yt, proxy, root, SINK_COLUMNS, rows, "CASE WHEN id = 2 THEN NULL ELSE id END AS k", "id",
                   *SOURCE)  # fmt: skip


def test_kudu_sink_null_key_stops_the_query_by_default(spark, yt, yt_proxy, yt_root, kudu, checkpoint) -> None:
    df, queue, consumer = _kudu_input(spark, yt, yt_proxy, yt_root)
    error = _failure(_to_kudu(df, kudu, f"dl_{uuid.uuid4().hex[:8]}", checkpoint))
    assert "BadRecordError: Kudu sink: NULL in a key column of table" in str(error), error
    assert _offsets(yt, queue, consumer) == {}


def test_kudu_sink_null_key_goes_to_the_dead_letter_table(spark, yt, yt_proxy, yt_root, kudu, dead, checkpoint) -> None:
    from spyt_queue.sinks.kudu.client import get_client

    df, queue, consumer = _kudu_input(spark, yt, yt_proxy, yt_root)
    table = f"dl_{uuid.uuid4().hex[:8]}"
    _finish(_to_kudu(df, kudu, table, checkpoint, **dead[1]))
    assert sorted(r["id"] for r in get_client(kudu.master_addresses).table(table).read_all()) == [0, 1, 3]
    (letter,) = _dead_letters(yt, dead[0])
    assert (letter["source"], letter["stage"], letter["partition"], letter["offset"]) == (
        f"kudu:{table}",
        "sink",
        "0",
        2,
    )
    assert "NULL in a key column" in letter["error"] and _payload(letter)[b"id"] == 2
    assert _offsets(yt, queue, consumer) == {0: 4}


def test_kafka_batch_write_null_topic_goes_to_the_dead_letter_topic(spark, kafka_bootstrap, checkpoint) -> None:
    """``df.write`` too: a row with a null ``topic`` (and no ``topic`` option) is dead-lettered, the others land."""
    target = Topic(kafka_bootstrap, checkpoint, partitions=1)
    dead = Topic(kafka_bootstrap, checkpoint, partitions=1)
    rows = [(None if i == 1 else target.name, f"v{i}") for i in range(3)]
    df = spark.createDataFrame(rows, "topic string, value string").coalesce(1)
    (
        df.write.format("ytqueue")
        .mode("append")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("deadLetter.topic", dead.name)
        .save()
    )
    assert sorted(m.value() for m in _topic_records(kafka_bootstrap, target.name)) == [b"v0", b"v2"]
    (letter,) = _topic_records(kafka_bootstrap, dead.name)
    headers = {k: v.decode() for k, v in letter.headers()}
    assert (headers["deadletter.partition"], headers["deadletter.offset"]) == ("spark-partition-0", "1")
    assert headers["deadletter.error"] == "Null 'topic' and no 'topic' option"
    assert yson.loads(letter.value(), encoding=None) == {b"topic": None, b"value": b"v1"}


# -- the HBase sink ----------------------------------------------------------------------------------------------

HBASE_COLUMNS = [column("id", "int64", required=True), column("k", "string"), column("ts", "int64")]


def _hbase_input(spark: Any, yt: Any, proxy: str, root: str, rows: list[dict[str, Any]]) -> tuple[Any, str, str]:
    return _stream(spark, yt, proxy, root, HBASE_COLUMNS, rows, "k", "id", "ts", *SOURCE)


def _to_hbase(df: Any, hbase: Any, table: str, checkpoint: str, **options: Any) -> Any:
    keyed = {"create_table": "true", "row_key": "k", "timestamp_column": "ts"}
    return _start(df, "spyt_hbase", checkpoint, {"thrift": hbase.thrift_address, "table": table}, keyed, options)


def _hbase_rows(hbase: Any, table: str) -> dict[bytes, dict[bytes, bytes]]:
    conn = hbase.connection()
    try:
        return dict(conn.table(table).scan())
    finally:
        conn.close()


def test_hbase_sink_refused_put_stops_the_query_by_default(spark, yt, yt_proxy, yt_root, hbase, checkpoint) -> None:
    rows = [{"id": 0, "k": "k0", "ts": 1000}, {"id": 1, "k": "", "ts": 1000}]
    df, queue, consumer = _hbase_input(spark, yt, yt_proxy, yt_root, rows)
    error = _failure(_to_hbase(df, hbase, f"dl_{uuid.uuid4().hex[:8]}", checkpoint))
    assert "HBase refuses an empty row key" in str(error), error
    assert _offsets(yt, queue, consumer) == {}


def test_hbase_sink_bad_rows_go_to_the_dead_letter_table(spark, yt, yt_proxy, yt_root, hbase, dead, checkpoint) -> None:
    """A null row key and a null event time (the sink can not build the put) and an empty row key and a negative
    timestamp (HBase refuses the put: the refused call is sent again row by row) are dead-lettered; the rows
    around them land and the consumer moves past all of them."""
    rows = [
        {"id": 0, "k": "k0", "ts": 1000},
        {"id": 1, "k": None, "ts": 1000},
        {"id": 2, "k": "", "ts": 1000},
        {"id": 3, "k": "k3", "ts": -5},
        {"id": 4, "k": "k4", "ts": None},
        {"id": 5, "k": "k5", "ts": 1000},
    ]
    df, queue, consumer = _hbase_input(spark, yt, yt_proxy, yt_root, rows)
    table = f"dl_{uuid.uuid4().hex[:8]}"
    _finish(_to_hbase(df, hbase, table, checkpoint, **dead[1]))
    assert sorted(_hbase_rows(hbase, table)) == [b"k0", b"k5"]
    errors = {
        1: "row-key column 'k' is null",
        2: "refused the put of row key b'': HBase refuses an empty row key",
        3: "negative timestamp -5 ms",
        4: "timestamp_column 'ts' is null",
    }
    letters = _assert_letters(yt, dead[0], f"hbase:{table}", errors)
    assert _payload(letters[1])[b"k"] == b"" and _payload(letters[2])[b"ts"] == -5
    assert _offsets(yt, queue, consumer) == {0: 6}


def test_hbase_batch_write_through_thrift2_dead_letters_refused_puts(spark, yt, hbase, dead) -> None:
    """``df.write`` through the Thrift2 gateway (one ``putMultiple`` per batch): a row key longer than HBase's
    32767 bytes and a negative timestamp are refused, found row by row and dead-lettered with the Spark partition
    and the row's position in the task; the other rows land."""
    table = f"dl_{uuid.uuid4().hex[:8]}"
    rows = [("a", 1, 1000), ("x" * 40000, 2, 1000), ("c", 3, -1), ("d", 4, 2000)]
    df = spark.createDataFrame(rows, "k string, id long, ts long").coalesce(1)
    (
        df.write.format("spyt_hbase")
        .mode("append")
        .option("thrift", hbase.thrift2_address)
        .option("thrift_api", "2")
        .option("table", table)
        .option("create_table", "true")
        .option("row_key", "k")
        .option("timestamp_column", "ts")
        .options(**dead[1])
        .save()
    )
    assert sorted(_hbase_rows(hbase, table)) == [b"a", b"d"]
    letters = _dead_letters(yt, dead[0])
    assert [(r["partition"], r["offset"]) for r in letters] == [("spark-partition-0", 1), ("spark-partition-0", 2)]
    assert "is 40000 bytes, longer than HBase's limit of 32767" in letters[0]["error"]
    assert "negative timestamp -1 ms" in letters[1]["error"]
    assert [_payload(r)[b"id"] for r in letters] == [2, 3]


# -- the Kudu sink: rows Kudu refuses ------------------------------------------------------------------------------

KUDU_COLUMNS = [
    column("id", "int64", required=True),
    column("k", "int64"),
    column("n", "int64"),
    column("s", "string"),
    column("r", "string"),
]
KUDU_ROWS = [
    {"id": 0, "k": 0, "n": 1, "s": "a", "r": "x"},
    {"id": 1, "k": 1, "n": 2**40, "s": "b", "r": "x"},  # outside the table's INT32 column n
    {"id": 2, "k": 2, "n": 3, "s": "x" * 70000, "r": "x"},  # above Kudu's 64 KiB cell limit: refused at flush
    {"id": 3, "k": 3, "n": 4, "s": "d", "r": "x"},
    {"id": 4, "k": 100, "n": 5, "s": "new", "r": "x"},  # key 100 is stored with s='old': append never overwrites
    {"id": 5, "k": 5, "n": 6, "s": "f", "r": None},  # null in a NOT NULL column
]


def _kudu_table(kudu: Any) -> str:
    """A Kudu table narrower than the stream (n INT32, r NOT NULL) holding key 100, with the service columns."""
    from spyt_queue.sinks.kudu.client import ColumnSpec, get_client
    from spyt_queue.sinks.kudu.mutations import Mutation, MutationKind

    table = f"dl_{uuid.uuid4().hex[:8]}"
    specs = [
        ColumnSpec("k", "int64", key=True, nullable=False),
        ColumnSpec("id", "int64"),
        ColumnSpec("n", "int32"),
        ColumnSpec("s", "string"),
        ColumnSpec("r", "string", nullable=False),
        ColumnSpec(SOURCE[0], "int64"),
        ColumnSpec(SOURCE[1], "int64"),
    ]
    client = get_client(kudu.master_addresses)
    client.create_table(table, specs, hash_columns=["k"], hash_buckets=2)
    client.table(table).apply([Mutation(MutationKind.INSERT, {"k": 100, "id": -1, "s": "old", "r": "x"})])
    return table


def _kudu_refused_input(spark: Any, yt: Any, proxy: str, root: str, rows: list[dict[str, Any]]) -> tuple[Any, str, str]:
    return _stream(spark, yt, proxy, root, KUDU_COLUMNS, rows, "k", "id", "n", "s", "r", *SOURCE)


def test_kudu_sink_value_out_of_range_stops_the_query_by_default(
    spark, yt, yt_proxy, yt_root, kudu, checkpoint
) -> None:
    """A bigint beyond the table's INT32 column stops the query naming the column (it was stored wrapped: 2^40 as
    0), and nothing is committed."""
    from spyt_queue.sinks.kudu.client import get_client

    df, queue, consumer = _kudu_refused_input(spark, yt, yt_proxy, yt_root, KUDU_ROWS[:2])
    table = _kudu_table(kudu)
    error = _failure(_to_kudu(df, kudu, table, checkpoint))
    assert "BadRecordError: value 1099511627776 does not fit Kudu column 'n' (INT32)" in str(error), error
    assert [r["k"] for r in get_client(kudu.master_addresses).table(table).read_all() if r["k"] == 1] == []
    assert _offsets(yt, queue, consumer) == {}


def test_kudu_sink_rows_kudu_refuses_go_to_the_dead_letter_table(
    spark, yt, yt_proxy, yt_root, kudu, dead, checkpoint
) -> None:
    """Refused by the client (a value outside INT32, a null in a NOT NULL column), by the planner (another value
    under a stored key of an ``append`` table) and by Kudu at the session's flush (a cell above 64 KiB): each row
    goes to the dead-letter table with its source coordinates and the reason; the others land, the offsets move."""
    from spyt_queue.sinks.kudu.client import get_client

    df, queue, consumer = _kudu_refused_input(spark, yt, yt_proxy, yt_root, KUDU_ROWS)
    table = _kudu_table(kudu)
    _finish(_to_kudu(df, kudu, table, checkpoint, **dead[1]))
    stored = get_client(kudu.master_addresses).table(table).read_all()
    assert sorted((r["k"], r["id"], r["s"]) for r in stored) == [(0, 0, "a"), (3, 3, "d"), (100, -1, "old")]
    errors = {
        1: "value 1099511627776 does not fit Kudu column 'n' (INT32)",
        2: "value too large for column 's' (70000 bytes, maximum is 65536 bytes)",
        4: "append planner: k=100 is stored with other values; append never overwrites",
        5: "column 'r' is NOT NULL in Kudu but the row has NULL there",
    }
    _assert_letters(yt, dead[0], f"kudu:{table}", errors)
    assert _offsets(yt, queue, consumer) == {0: 6}


# -- the Kudu sink, history planner: a refused new version leaves the old one current ----------------------------

HISTORY_ROWS = [
    {"id": 0, "k": 7, "n": 2, "s": "x" * 70000, "r": "x"},  # a new version of key 7, refused at flush (64 KiB)
    {"id": 1, "k": 8, "n": 1, "s": "a", "r": "x"},  # key 8: version 1 lands...
    {"id": 2, "k": 8, "n": 2, "s": "y" * 70000, "r": "x"},  # ...version 2 is refused
    {"id": 3, "k": 9, "n": 1, "s": "c", "r": "x"},
]


def _history_table(kudu: Any) -> str:
    """A history table (key k, event time n) holding version n=1 of key 7, current until far future."""
    from spyt_queue.sinks.kudu.client import ColumnSpec, get_client
    from spyt_queue.sinks.kudu.mutations import Mutation, MutationKind

    table = f"dl_{uuid.uuid4().hex[:8]}"
    specs = [
        ColumnSpec("k", "int64", key=True, nullable=False),
        ColumnSpec("n", "int64", key=True, nullable=False),
        ColumnSpec("id", "int64"),
        ColumnSpec("s", "string"),
        ColumnSpec("effective_to", "int64"),
        ColumnSpec("is_current", "bool"),
        ColumnSpec(SOURCE[0], "int64"),
        ColumnSpec(SOURCE[1], "int64"),
    ]
    client = get_client(kudu.master_addresses)
    client.create_table(table, specs, hash_columns=["k"], hash_buckets=2)
    old = {"k": 7, "n": 1, "id": -1, "s": "old", "effective_to": 2**63 - 1, "is_current": True}
    client.table(table).apply([Mutation(MutationKind.INSERT, old)])
    return table


def _to_history(df: Any, kudu: Any, table: str, checkpoint: str, **options: Any) -> Any:
    history = {"planner": "history", "planner.key": "k", "planner.event_time": "n", "planner.last_updated": ""}
    target = {"kudu.master": kudu.master_addresses, "table": table}
    return _start(df.drop("r"), "spyt_kudu", checkpoint, target, history, options)


def _versions(kudu: Any, table: str) -> list[tuple[int, int, int, bool, str]]:
    """(k, n, effective_to, is_current, s[:3]) of every stored version."""
    from spyt_queue.sinks.kudu.client import get_client

    rows = get_client(kudu.master_addresses).table(table).read_all()
    return sorted((r["k"], r["n"], r["effective_to"], r["is_current"], r["s"][:3]) for r in rows)


def test_kudu_history_refused_version_stops_the_query_and_leaves_the_old_one_current(
    spark, yt, yt_proxy, yt_root, kudu, checkpoint
) -> None:
    """Kudu refuses the INSERT of key 7's new version at flush; the UPDATE closing version 1 went in the same flush.
    The query stops naming the refusal, and key 7 still has a current version (it had none: a half-written key)."""
    df, queue, consumer = _kudu_refused_input(spark, yt, yt_proxy, yt_root, HISTORY_ROWS[:1])
    table = _history_table(kudu)
    error = _failure(_to_history(df, kudu, table, checkpoint))
    assert "value too large for column 's'" in str(error), error
    assert _versions(kudu, table) == [(7, 1, 2**63 - 1, True, "old")]
    assert _offsets(yt, queue, consumer) == {}


def test_kudu_history_refused_versions_go_to_the_dead_letter_table_and_keys_stay_whole(
    spark, yt, yt_proxy, yt_root, kudu, dead, checkpoint
) -> None:
    """With a dead-letter target the refused versions are diverted and every key keeps one current version: key 7
    its stored version 1, key 8 the version 1 that landed beside the refused version 2."""
    df, queue, consumer = _kudu_refused_input(spark, yt, yt_proxy, yt_root, HISTORY_ROWS)
    table = _history_table(kudu)
    _finish(_to_history(df, kudu, table, checkpoint, **dead[1]))
    assert _versions(kudu, table) == [(7, 1, 2**63 - 1, True, "old"), (8, 1, 2**63 - 1, True, "a"),
                                      (9, 1, 2**63 - 1, True, "c")]  # fmt: skip
    too_large = "value too large for column 's' (70000 bytes, maximum is 65536 bytes)"
    _assert_letters(yt, dead[0], f"kudu:{table}", {0: too_large, 2: too_large})
    assert _offsets(yt, queue, consumer) == {0: 4}


# -- the Kudu sink, history planner: only the bad row of a key is diverted -----------------------------------------

HISTORY_BAD_ROWS = [
    {"id": 0, "k": 7, "n": 2, "s": "a", "r": "x"},
    {"id": 1, "k": 7, "n": None, "s": "b", "r": "x"},  # NULL event time: this row only is refused
    {"id": 2, "k": 7, "n": 3, "s": "c", "r": "x"},
    {"id": 3, "k": 8, "n": 1, "s": "toolong", "r": "x"},  # longer than VARCHAR(5): refused, never truncated
    {"id": 4, "k": 8, "n": 2, "s": "ok", "r": "x"},
]


def test_kudu_history_bad_rows_go_to_the_dead_letter_table_and_their_keys_keep_the_valid_versions(
    spark, yt, yt_proxy, yt_root, kudu, dead, checkpoint
) -> None:
    """A NULL event time diverts its own row, not every version of its key; a string longer than its VARCHAR(5)
    column is diverted, not stored truncated. The key's other versions are written, one of them current."""
    from spyt_queue.sinks.kudu.client import ColumnSpec, get_client

    table = f"dl_{uuid.uuid4().hex[:8]}"
    specs = [
        ColumnSpec("k", "int64", key=True, nullable=False),
        ColumnSpec("n", "int64", key=True, nullable=False),
        ColumnSpec("id", "int64"),
        ColumnSpec("s", "varchar", length=5),
        ColumnSpec("effective_to", "int64"),
        ColumnSpec("is_current", "bool"),
        ColumnSpec(SOURCE[0], "int64"),
        ColumnSpec(SOURCE[1], "int64"),
    ]
    get_client(kudu.master_addresses).create_table(table, specs, hash_columns=["k"], hash_buckets=2)
    df, queue, consumer = _kudu_refused_input(spark, yt, yt_proxy, yt_root, HISTORY_BAD_ROWS)
    _finish(_to_history(df, kudu, table, checkpoint, **dead[1]))
    assert _versions(kudu, table) == [(7, 2, 2, False, "a"), (7, 3, 2**63 - 1, True, "c"),
                                      (8, 2, 2**63 - 1, True, "ok")]  # fmt: skip
    _assert_letters(yt, dead[0], f"kudu:{table}", {
        1: "NULL in event-time column 'n' (k=7)",
        3: "'toolong' (7 characters) is longer than Kudu column 's' VARCHAR(5)",
    })  # fmt: skip
    assert _offsets(yt, queue, consumer) == {0: 5}
