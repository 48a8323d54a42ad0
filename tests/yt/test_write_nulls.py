"""Nulls in required columns: refused before anything of the Arrow batch holding them is sent, and what a failed
batch leaves behind in each mode (ordered append, sorted upsert, producer sessions, Kafka), as a user sees it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, TopicPartition
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

from spyt_queue.errors import BadRecordError
from spyt_queue.yt.admin import column, create_producer, create_queue, create_table
from spyt_queue.yt.backend import YtConnection
from spyt_queue.yt.schema import YtSchema
from spyt_queue.yt.sink import YtWriteCommit, describe_abort
from spyt_queue.yt.table_writer import YtTableWriter
from tests.kafka.helpers import Topic
from tests.yt.helpers import make_pipeline

pytestmark = pytest.mark.spark

TAB, ROW = "__spyt_streaming_src_tablet_index", "__spyt_streaming_src_row_index"
REQUIRED = [column("id", "int64", required=True), column("name", "string", required=True)]


def _error_line(error: BaseException) -> str:
    """The one line of the failure that is ours (``spyt_queue.errors.X: message``); there must be exactly one."""
    text = str(error)
    lines = {line.strip() for line in text.splitlines() if line.strip().startswith("spyt_queue.errors.")}
    assert len(lines) == 1, text
    return lines.pop()


@contextmanager
def _arrow_batches_of(spark: Any, rows: int) -> Iterator[None]:
    """Spark hands each write task Arrow batches of at most ``rows`` rows (the default is 10,000)."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    spark.conf.set(key, str(rows))
    try:
        yield
    finally:
        spark.conf.unset(key)


def _write(df: Any, proxy: str, target: str, **options: Any) -> None:
    writer = df.write.format("ytqueue").mode("append").option("proxy", proxy).option("path", target)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.save()


def _names(spark: Any, null_at: int, count: int = 10) -> Any:
    """One task's rows ``id, name`` with ``name`` null at ``null_at``."""
    rows = [(i, None if i == null_at else f"n{i}") for i in range(count)]
    return spark.createDataFrame(rows, "id long, name string").coalesce(1)


def _ids(yt: Any, target: str) -> list[int]:
    return sorted(r["id"] for r in yt.select_rows(f"id from [{target}]"))


# -- batch writes: one task, deterministic ---------------------------------------------------------------------


def test_append_task_that_fits_one_chunk_writes_nothing(spark, yt, yt_proxy, yt_root) -> None:
    """Before the check, the chunks before the null (rows 0..5 with dyn_batch_size=3) were appended and the job
    failed on YT's error; now the Arrow batch is refused before any of it is converted or sent."""
    target = f"{yt_root}/ordered"
    create_queue(yt, target, REQUIRED)
    with pytest.raises(Exception) as failure:
        _write(_names(spark, null_at=7), yt_proxy, target, dyn_batch_size=3)
    line = _error_line(failure.value)
    assert line.startswith("spyt_queue.errors.BadRecordError: Null in required column 'name' (string)"), line
    assert "row 7 of Spark partition 0, record {'id': 7, 'name': None}" in line, line
    assert line.endswith("Nothing of this task was written."), line
    assert _ids(yt, target) == []


def test_append_keeps_chunks_sent_before_the_arrow_batch_with_the_null(spark, yt, yt_proxy, yt_root) -> None:
    """Arrow batches of 4 rows, chunks of 3: batch [0, 4) is checked and chunk [0, 3) sent; batch [4, 8) holds the
    null, so row 3 (pending) and everything after it are never sent, and the error says so."""
    target = f"{yt_root}/ordered"
    create_queue(yt, target, REQUIRED)
    with _arrow_batches_of(spark, 4), pytest.raises(Exception) as failure:
        _write(_names(spark, null_at=7), yt_proxy, target, dyn_batch_size=3)
    line = _error_line(failure.value)
    assert "'name'" in line and "row 7 of Spark partition 0" in line, line
    assert line.endswith(
        "This task had already appended its first 3 rows (1 insert_rows request of at most dyn_batch_size=3 rows); "
        "nothing after them was written."
    ), line
    assert _ids(yt, target) == [0, 1, 2]


def test_sorted_upsert_with_a_null_changes_nothing(spark, yt, yt_proxy, yt_root) -> None:
    """A null value column and a null key column are both refused before the upsert; the rows keep their values."""
    target = f"{yt_root}/sorted"
    create_table(yt, target, REQUIRED, sorted_by=["id"])
    _write(spark.createDataFrame([(i, "old") for i in range(10)], "id long, name string"), yt_proxy, target)
    new = [(i, None if i == 7 else "new") for i in range(10)]
    with pytest.raises(Exception) as failure:
        _write(spark.createDataFrame(new, "id long, name string").coalesce(1), yt_proxy, target, dyn_batch_size=3)
    assert "Null in required column 'name'" in _error_line(failure.value)
    null_key = [(None if i == 4 else i, "new") for i in range(10)]
    with pytest.raises(Exception) as failure:
        _write(spark.createDataFrame(null_key, "id long, name string").coalesce(1), yt_proxy, target)
    line = _error_line(failure.value)
    assert "Null in required column 'id' (int64)" in line and "row 4 of Spark partition 0" in line, line
    assert "Nothing of this task was written." in line, line
    assert sorted((r["id"], r["name"]) for r in yt.select_rows(f"* from [{target}]")) == [(i, "old") for i in range(10)]


def test_always_null_column_is_refused_up_front_for_required_and_written_to_optional(
    spark, yt, yt_proxy, yt_root
) -> None:
    """A ``void`` column (``lit(None)``) is certain to be null: refused on the driver for a required column, with
    the other schema problems; into an optional column it writes nulls (it used to be refused as a type clash)."""
    target = f"{yt_root}/ordered"
    create_queue(yt, target, [*REQUIRED, column("note", "string")])
    void_name = spark.range(3).select("id", F.lit(None).alias("name"), F.lit("x").alias("note"))
    with pytest.raises(
        Exception,
        match=r"column 'name' is always null \(void\) in the DataFrame but required.*"
        r"Nothing was written",
    ):
        _write(void_name, yt_proxy, target)
    assert _ids(yt, target) == []
    void_note = spark.range(3).select("id", F.lit("a").alias("name"), F.lit(None).alias("note"))
    _write(void_note, yt_proxy, target)
    assert sorted((r["id"], r["note"]) for r in yt.select_rows(f"id, note from [{target}]")) == [
        (0, None),
        (1, None),
        (2, None),
    ]


# -- streaming queries: one task per source tablet ---------------------------------------------------------------


@pytest.fixture
def nulls(yt, yt_proxy, yt_root, checkpoint):
    """A 2-tablet queue: tablet 0 holds ids 0, 2, 4; tablet 1 holds ids 1, 3, 5 with a null payload at row 1."""
    pipe = make_pipeline(yt, yt_proxy, yt_root, checkpoint)
    rows = [{"id": i, "payload": None if i == 3 else f"p{i}", "$tablet_index": i % 2} for i in range(6)]
    yt.insert_rows(pipe.queue, rows)
    return pipe


def _stream(spark: Any, pipe: Any, target: str, payload: str = "payload", **sink: Any) -> Any:
    df = pipe.reader(spark).selectExpr("id", f"{payload} as payload", TAB, ROW)
    writer = (
        df.writeStream.format("ytqueue")
        .option("proxy", pipe.proxy)
        .option("path", target)
        .option("checkpointLocation", pipe.checkpoint)
    )
    for key, value in sink.items():
        writer = writer.option(key, str(value))
    query = writer.trigger(availableNow=True).start()
    try:
        query.awaitTermination(180)
    except StreamingQueryException:
        pass  # looked at through query.exception()
    assert not query.isActive, "the query did not finish"
    return query


def _fails_on_the_null(query: Any, pipe: Any, written: str) -> None:
    """The query failed on row 1 of tablet 1, saying what that task wrote; the batch was not committed."""
    assert query.exception() is not None, "the query did not fail"
    line = _error_line(query.exception())
    assert "Null in required column 'payload' (string)" in line, line
    assert "(source tablet 1, row 1), record {'id': 3, 'payload': None" in line, line
    assert line.endswith(written), line
    assert all(offset == 0 for offset in pipe.consumer_offsets().values()), pipe.consumer_offsets()


PAYLOAD_REQUIRED = [column("id", "int64", required=True), column("payload", "string", required=True)]


def test_stream_append_failed_batch_and_its_replay(spark, nulls) -> None:
    """Ordered append: the task of tablet 1 writes nothing; the task of tablet 0 may have appended its rows
    before Spark stopped it. The replay of the fixed query appends every row, those of tablet 0 possibly twice."""
    target = f"{nulls.output}-required"
    create_queue(nulls.yt, target, PAYLOAD_REQUIRED)
    _fails_on_the_null(_stream(spark, nulls, target), nulls, "Nothing of this task was written.")
    after_failure = _ids(nulls.yt, target)
    assert set(after_failure) <= {0, 2, 4}, after_failure
    fixed = _stream(spark, nulls, target, payload="coalesce(payload, '')")
    assert fixed.exception() is None, fixed.exception()
    ids = _ids(nulls.yt, target)
    assert {i: ids.count(i) for i in range(6)} == {i: 1 + (i in after_failure) for i in range(6)}, ids
    assert nulls.consumer_offsets() == {0: 3, 1: 3}


def test_stream_sorted_upsert_failed_batch_and_its_replay(spark, nulls) -> None:
    """Sorted upsert: the task of tablet 1 upserts nothing; the replay of the fixed query leaves every key once."""
    target = f"{nulls.output}-sorted"
    create_table(nulls.yt, target, PAYLOAD_REQUIRED, sorted_by=["id"])
    _fails_on_the_null(_stream(spark, nulls, target), nulls, "Nothing of this task was written.")
    assert set(_ids(nulls.yt, target)) <= {0, 2, 4}
    fixed = _stream(spark, nulls, target, payload="coalesce(payload, '')")
    assert fixed.exception() is None, fixed.exception()
    rows = sorted((r["id"], r["payload"]) for r in nulls.yt.select_rows(f"* from [{target}]"))
    assert rows == [(0, "p0"), (1, "p1"), (2, "p2"), (3, ""), (4, "p4"), (5, "p5")]


def test_stream_producer_sessions_failed_batch_and_its_exactly_once_replay(spark, nulls) -> None:
    """Producer sessions: the task of tablet 1 pushes nothing (every batch of a task is read before the first
    push); the replay of the fixed query writes every row exactly once, skipping what tablet 0's task pushed."""
    target, producer = f"{nulls.output}-exact", f"{nulls.output}-producer"
    create_queue(nulls.yt, target, PAYLOAD_REQUIRED)
    create_producer(nulls.yt, producer)
    query = _stream(spark, nulls, target, producer_path=producer)
    _fails_on_the_null(query, nulls, "Nothing of this task was pushed.")
    assert set(_ids(nulls.yt, target)) <= {0, 2, 4}
    fixed = _stream(spark, nulls, target, payload="coalesce(payload, '')", producer_path=producer)
    assert fixed.exception() is None, fixed.exception()
    assert _ids(nulls.yt, target) == list(range(6))


# -- Kafka sink ------------------------------------------------------------------------------------------------


def _values(topic: Topic) -> list[str | None]:
    """Every record value of the 1-partition ``topic``, in order (``None`` for a tombstone)."""
    end = topic.ends()[0]
    consumer = Consumer({"bootstrap.servers": topic.bootstrap, "group.id": topic.group, "enable.auto.commit": False})
    values: list[str | None] = []
    try:
        consumer.assign([TopicPartition(topic.name, 0, 0)])
        while len(values) < end:
            message = consumer.poll(10)
            assert message is not None, f"read {len(values)} of {end} records"
            if message.error() is None:
                values.append(None if message.value() is None else message.value().decode())
    finally:
        consumer.close()
    return values


def test_kafka_null_topic_refuses_its_arrow_batch_before_producing(spark, kafka_bootstrap, tmp_path) -> None:
    """Arrow batches of 3 rows; row 4 has a null topic and no topic option is set: records 0..2 (a null value is a
    tombstone, legal) are delivered, none of the batch [3, 6) is produced, and the error says so."""
    target = Topic(kafka_bootstrap, str(tmp_path / "checkpoint"), partitions=1)
    rows = [(None if i == 4 else target.name, None if i == 1 else f"v{i}") for i in range(6)]
    df = spark.createDataFrame(rows, "topic string, value string").coalesce(1)
    with _arrow_batches_of(spark, 3), pytest.raises(Exception) as failure:
        df.write.format("ytqueue").mode("append").option("kafka.bootstrap.servers", kafka_bootstrap).save()
    line = _error_line(failure.value)
    assert line.startswith(
        "spyt_queue.errors.BadRecordError: Null 'topic' and no 'topic' option: row 4 of Spark "
        "partition 0, record {'topic': None, 'value': 'v4'}."
    ), line
    assert line.endswith("This task had already delivered its first 3 records; none after them was produced."), line
    assert _values(target) == ["v0", None, "v2"]


# -- the writer itself: producer service columns, and what an aborted write logs ----------------------------------


def test_producer_write_refuses_a_null_source_row_before_pushing_anything(yt, yt_proxy, yt_root) -> None:
    """A null source row index can not be a sequence number: refused with nothing pushed (it was a TypeError)."""
    target, producer = f"{yt_root}/exact", f"{yt_root}/producer"
    create_queue(yt, target, PAYLOAD_REQUIRED)
    create_producer(yt, producer)
    schema = YtSchema.parse(yt.get(f"{target}/@schema"))
    writer = YtTableWriter(YtConnection(yt_proxy), target, schema, producer_path=producer, producer_session_prefix="w")
    good = pa.RecordBatch.from_pydict(
        {TAB: pa.array([0, 0], pa.int64()), ROW: pa.array([0, 1], pa.int64()), "id": [0, 1], "payload": ["a", "b"]}
    )
    bad = pa.RecordBatch.from_pydict(
        {TAB: pa.array([0, 0], pa.int64()), ROW: pa.array([2, None], pa.int64()), "id": [2, 3], "payload": ["c", "d"]}
    )
    with pytest.raises(BadRecordError) as failure:
        writer.write(iter([good, bad]))
    message = str(failure.value)
    assert message.startswith(
        f"Null in service column '{ROW}' of {target}: row 3 of this task (source tablet 0, row None)"
    )
    assert message.endswith("Nothing of this task was pushed."), message
    assert _ids(yt, target) == [] and list(yt.select_rows(f"* from [{producer}]")) == []


def test_abort_says_what_finished_tasks_left_and_what_writing_again_does(yt, yt_proxy, yt_root) -> None:
    target = f"{yt_root}/ordered"
    create_queue(yt, target, REQUIRED)
    writer = YtTableWriter(YtConnection(yt_proxy), target, YtSchema.parse(yt.get(f"{target}/@schema")))
    messages = [YtWriteCommit(rows=3, skipped=0, requests=1), None]
    assert describe_abort(writer, messages) == (
        f"1 of 2 tasks finished, writing 3 rows into {target}; the 1 failed or cancelled task(s) may have written "
        "their first rows (see the error). All of it stays: writing them again appends them twice"
    )
    writer.producer_path = f"{yt_root}/producer"
    assert describe_abort(writer, messages).endswith(
        "All of it stays: writing them again skips them (producer sessions)"
    )
