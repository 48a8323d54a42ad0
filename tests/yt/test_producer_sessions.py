"""Producer-session sink when one source tablet spans several tasks (``maxRecordsPerPartition``, ``minPartitions``,
a repartition), and the default session prefix of two queries writing one target.

The harmful order (the task holding a tablet's later rows pushes first) is provoked deterministically: a stateless
``mapInArrow`` before the sink holds back the task with the tablet's lowest rows until the producer session has
moved past them (or, once the later task has been refused, until a bound so the test ends).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException

from spyt_queue.errors import ProducerSequenceError
from spyt_queue.yt.admin import column, create_producer, create_queue
from spyt_queue.yt.backend import YtConnection
from spyt_queue.yt.schema import YtSchema
from spyt_queue.yt.table_writer import WriteStats, YtTableWriter
from tests.yt.helpers import make_pipeline

pytestmark = pytest.mark.spark

TAB, ROW = "__spyt_streaming_src_tablet_index", "__spyt_streaming_src_row_index"


def _session_numbers(yt: Any, producer: str) -> dict[str, int]:
    return {r["session_id"]: int(r["sequence_number"]) for r in yt.select_rows(f"* from [{producer}]")}


def _hold_back(proxy: str, producer: str, session: str, lowest: int, release_at: int, bound: float) -> Any:
    """A one-to-one ``mapInArrow`` function: the task whose first row is ``lowest`` waits until ``session`` has
    pushed row ``release_at`` (the later task went first), or ``bound`` seconds (the later task was refused)."""

    def hold(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from spyt_queue.yt.client import make_yt_client

        held = list(batches)
        rows = [r for b in held for r in b.column(ROW).to_pylist()]
        if rows and min(rows) == lowest:
            client = make_yt_client(proxy)
            deadline = time.monotonic() + bound
            while time.monotonic() < deadline:
                numbers = {r["session_id"]: r["sequence_number"] for r in client.select_rows(f"* from [{producer}]")}
                if int(numbers.get(session, -1)) >= release_at:
                    break
                time.sleep(0.2)
        yield from held

    return hold


def _run(spark: Any, pipe: Any, target: str, producer: str, hold: Any = None, **source: Any) -> Any:
    df = pipe.reader(spark, **source)
    if hold is not None:
        df = df.mapInArrow(hold, df.schema)
    query = (
        df.writeStream.format("ytqueue")
        .option("proxy", pipe.proxy)
        .option("path", target)
        .option("producer_path", producer)
        .option("producer_session_prefix", "held")
        .option("checkpointLocation", pipe.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(180)
    except StreamingQueryException:
        pass  # the caller looks at query.exception()
    assert not query.isActive, "the query did not finish"
    return query


def _ids(yt: Any, target: str) -> list[int]:
    return sorted(r["id"] for r in yt.select_rows(f"id from [{target}]"))


@pytest.fixture
def one_tablet(yt, yt_proxy, yt_root, checkpoint):
    pipe = make_pipeline(yt, yt_proxy, yt_root, checkpoint, tablets=1)
    target, producer = f"{yt_root}/exact", f"{yt_root}/producer"
    create_queue(yt, target, [column("id", "int64"), column("payload", "string")])
    create_producer(yt, producer)
    return pipe, target, producer


def test_split_tablet_into_a_continuing_session_is_refused_before_losing_rows(spark, one_tablet) -> None:
    """maxRecordsPerPartition cuts rows 10..29 of tablet 0 into two tasks; the [20, 30) task pushes first. Before
    the fix rows 10..19 were then skipped as already written, for good (and the driver's check failed every
    replay); now that task is refused with nothing pushed, and the replay without the splitting option writes
    every row exactly once."""
    pipe, target, producer = one_tablet
    pipe.produce(10)
    first = _run(spark, pipe, target, producer)
    assert first.exception() is None, first.exception()
    assert _ids(pipe.yt, target) == list(range(10))
    pipe.produce(20)
    hold = _hold_back(pipe.proxy, producer, "held-0", lowest=10, release_at=29, bound=20)
    held = _run(spark, pipe, target, producer, hold=hold, maxRecordsPerPartition=10)
    ids = _ids(pipe.yt, target)
    assert len(ids) == len(set(ids)), "a row was written twice"
    assert ids == list(range(len(ids))), f"rows below {max(ids)} were skipped as already written: {ids}"
    message = str(held.exception())
    assert "ProducerSequenceError" in message and "maxRecordsPerPartition" in message, message
    assert "expected row 10" in message and "found row 20" in message, message
    assert not set(ids) & set(range(20, 30)), "the refused task pushed rows"
    resumed = _run(spark, pipe, target, producer)  # without the splitting option: the replay completes
    assert resumed.exception() is None, resumed.exception()
    assert _ids(pipe.yt, target) == list(range(30))
    assert _session_numbers(pipe.yt, producer)["held-0"] == 29


def test_split_first_batch_into_a_fresh_session_writes_every_row_exactly_once(spark, one_tablet) -> None:
    """minPartitions=2 cuts batch 0's rows 0..19 of tablet 0 into two tasks and [10, 20) opens the fresh session.
    Before the fix rows 0..9 were skipped for good; now they go through the session that holds the rows below the
    first one the session ever wrote, so the run completes exactly once, and a replay skips everything."""
    pipe, target, producer = one_tablet
    pipe.produce(20)
    hold = _hold_back(pipe.proxy, producer, "held-0", lowest=0, release_at=19, bound=60)
    query = _run(spark, pipe, target, producer, hold=hold, minPartitions=2)
    assert query.exception() is None, query.exception()
    assert _ids(pipe.yt, target) == list(range(20))
    assert set(_session_numbers(pipe.yt, producer)) == {"held-0", "held-0-before-10"}  # the provoked order happened
    pipe.purge_last_commit()
    replay = _run(spark, pipe, target, producer, minPartitions=2)
    assert replay.exception() is None, replay.exception()
    assert _ids(pipe.yt, target) == list(range(20))


# -- the writer on its own against the embedded server: a later chunk of a tablet pushed first ------------------


def _chunk(first: int, count: int, tablet: int = 0) -> pa.RecordBatch:
    rows = list(range(first, first + count))
    return pa.RecordBatch.from_pydict(
        {
            TAB: pa.array([tablet] * count, pa.int64()),
            ROW: pa.array(rows, pa.int64()),
            "id": pa.array(rows, pa.int64()),
            "payload": pa.array([f"p{r}" for r in rows], pa.string()),
        }
    )


@pytest.fixture
def writer(yt, yt_proxy, yt_root) -> YtTableWriter:
    target, producer = f"{yt_root}/exact", f"{yt_root}/producer"
    create_queue(yt, target, [column("id", "int64"), column("payload", "string")])
    create_producer(yt, producer)
    schema = YtSchema.parse(yt.get(f"{target}/@schema"))
    return YtTableWriter(YtConnection(yt_proxy), target, schema, producer_path=producer, producer_session_prefix="w")


def test_writer_refuses_a_later_chunk_of_a_continuing_session_and_pushes_nothing(yt, writer) -> None:
    writer.write(iter([_chunk(0, 10)]))
    with pytest.raises(ProducerSequenceError, match=r"source tablet 0: expected row 10 .* found row 20"):
        writer.write(iter([_chunk(20, 10)]))
    assert _ids(yt, writer.path) == list(range(10))
    writer.write(iter([_chunk(10, 10)]))
    writer.write(iter([_chunk(20, 10)]))
    stats = writer.write(iter([_chunk(5, 25)]))  # a replay across the session's last number
    assert (stats.rows, stats.skipped) == (0, 25)
    assert _ids(yt, writer.path) == list(range(30))


def test_writer_refuses_gaps_inside_a_task_and_an_unsorted_duplicate(yt, writer) -> None:
    with pytest.raises(ProducerSequenceError, match=r"source tablet 0: expected row 10 .* found row 12"):
        writer.write(iter([_chunk(0, 10), _chunk(12, 5)]))
    with pytest.raises(ProducerSequenceError, match=r"row 3 of source tablet 0 appears twice"):
        writer.write(iter([_chunk(0, 5), _chunk(3, 1)]))
    assert _ids(yt, writer.path) == []


def test_writer_fresh_session_opened_by_a_later_chunk_keeps_the_earlier_rows(yt, writer) -> None:
    """A fresh session may start anywhere (a query starts at its consumer's position): the rows below the first
    one it ever wrote go through a session of their own, never skipped, and are deduplicated on a replay."""
    writer.write(iter([_chunk(80, 10)]))
    writer.write(iter([_chunk(70, 10)]))
    writer.write(iter([_chunk(90, 10)]))
    stats = writer.write(iter([_chunk(70, 30)]))  # replay of everything
    assert (stats.rows, stats.skipped) == (0, 30)
    assert _ids(yt, writer.path) == list(range(70, 100))


def test_writer_allows_gaps_when_asked(yt, writer) -> None:
    """``producer_allow_gaps``: a filter, rows trimmed with failOnDataLoss=false, a consumer moved ahead."""
    writer.allow_gaps = True
    writer.write(iter([_chunk(0, 5), _chunk(7, 3)]))
    writer.write(iter([_chunk(20, 5)]))
    assert _ids(yt, writer.path) == [0, 1, 2, 3, 4, 7, 8, 9, 20, 21, 22, 23, 24]


# -- (c) the default session prefix is per query ------------------------------------------------------------------


def test_two_queries_from_different_sources_into_one_target_do_not_share_sessions(
    spark, yt, yt_proxy, yt_root, tmp_path
) -> None:
    """Before the fix both used the sessions ``spyt-queue-<tablet>``: the second query's rows 0..9 of tablet 0 were
    taken for replays of the first query's and skipped."""
    target, producer = f"{yt_root}/exact", f"{yt_root}/producer"
    create_queue(yt, target, [column("id", "int64"), column("payload", "string")])
    create_producer(yt, producer)
    written = []
    for name in ("a", "b"):
        pipe = make_pipeline(yt, yt_proxy, f"{yt_root}/{name}", str(tmp_path / name), tablets=1)
        pipe.next_id = 1000 if name == "b" else 0
        written += pipe.produce(10)
        df = pipe.reader(spark)
        query = (
            df.writeStream.format("ytqueue")
            .option("proxy", yt_proxy)
            .option("path", target)
            .option("producer_path", producer)
            .option("checkpointLocation", pipe.checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()
    assert _ids(yt, target) == sorted(written)
    assert len(_session_numbers(yt, producer)) == 2


def test_default_sessions_survive_a_deleted_checkpoint(spark, yt, yt_proxy, yt_root, checkpoint) -> None:
    """Sessions are keyed by the checkpoint location: a query restarted with its checkpoint deleted, resuming from a
    consumer one batch behind the sink (a crash between the sink and the consumer commit), skips what it wrote."""
    pipe = make_pipeline(yt, yt_proxy, yt_root, checkpoint, tablets=1)
    target, producer = f"{yt_root}/exact", f"{yt_root}/producer"
    create_queue(yt, target, [column("id", "int64"), column("payload", "string")])
    create_producer(yt, producer)

    def run() -> None:
        query = (
            pipe.reader(spark)
            .writeStream.format("ytqueue")
            .option("proxy", yt_proxy)
            .option("path", target)
            .option("producer_path", producer)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()

    pipe.produce(10)
    run()
    pipe.produce(10)
    run()
    yt.advance_consumer(pipe.consumer, pipe.queue, partition_index=0, old_offset=20, new_offset=10)
    pipe.delete_checkpoint()
    run()
    assert _ids(yt, target) == list(range(20))


def test_default_session_prefix_is_per_query_and_stable() -> None:
    """Spark passes ``checkpointLocation`` and ``queryName`` to a Python sink's options (checked on Spark 4): the
    prefix derives from them, so restarts keep their sessions and two queries never share one."""
    from spyt_queue.options import Options
    from spyt_queue.yt.sink import default_session_prefix

    one = default_session_prefix(Options({"checkpointLocation": "/chk/a"}))
    assert one == default_session_prefix(Options({"checkpointlocation": "/chk/a/", "queryName": "other"}))
    assert one != default_session_prefix(Options({"checkpointLocation": "/chk/b"}))
    assert one is not None and one.startswith("spyt-") and "spyt-queue" not in one
    named = default_session_prefix(Options({"queryName": "enricher"}))
    assert named is not None and named not in (one, default_session_prefix(Options({"queryName": "other"})))
    assert default_session_prefix(Options({"checkpointLocation": "/chk/a", "producer_session_prefix": "p"})) == "p"
    assert default_session_prefix(Options({})) is None  # tasks then use the streaming query id


# -- two tasks sharing one session concurrently: each open bumps the epoch and fences the other -----------------


def _twin(writer: YtTableWriter) -> YtTableWriter:
    """A second task's writer on the same target, producer and session prefix (its own client)."""
    return YtTableWriter(
        writer.connection,
        writer.path,
        writer.table,
        producer_path=writer.producer_path,
        producer_session_prefix=writer.producer_session_prefix,
    )


def test_a_task_fenced_by_a_concurrent_replay_replans_and_skips_what_is_written(yt, writer) -> None:
    """A replay of a split batch runs both tasks at once: the second open of the session fences the first task's
    epoch. Before the fix the fenced task failed the batch (ProducerSequenceError, seen in CI); now it reopens the
    session, finds its rows written, and skips them."""
    writer.write(iter([_chunk(0, 20)]))
    plan = writer._plan(0, [(i, {"id": i, "payload": f"p{i}"}) for i in range(10)], "w-0", 0)
    stats = _twin(writer).write(iter([_chunk(10, 10)]))  # the other task opens the session (new epoch) and pushes
    assert (stats.rows, stats.skipped) == (0, 10)
    mine = WriteStats()
    for push in plan:
        writer._run_push(push, mine)
    assert (mine.rows, mine.skipped) == (0, 10)
    assert _ids(yt, writer.path) == list(range(20))


def test_a_task_fenced_on_a_fresh_session_moves_its_lower_rows_below_the_winner(yt, writer) -> None:
    """Both tasks of a split first batch open the fresh session; the later rows' task pushes first and records its
    origin. The fenced task reopens the session, sees its rows below that origin, and writes them through the
    session below it: every row once."""
    lower = writer._plan(0, [(i, {"id": i, "payload": f"p{i}"}) for i in range(10)], "w-0", 0)
    _twin(writer).write(iter([_chunk(10, 10)]))
    stats = WriteStats()
    for push in lower:
        writer._run_push(push, stats)
    assert (stats.rows, stats.skipped) == (10, 0)
    assert _ids(yt, writer.path) == list(range(20))
    assert _session_numbers(yt, writer.producer_path) == {"w-0": 19, "w-0-before-10": 9}


def test_a_push_retried_after_a_dropped_connection_still_writes_its_rows(yt, writer, monkeypatch) -> None:
    """Seen in the long chaos run: the YT server was SIGKILLed while a task's ``push_queue_producer`` was on the
    wire. ``yt.wrapper`` sends that command's rows as a gzip generator (it forces a tabular input on a command the
    driver declares without one) and retries it at the HTTP level with the same, now exhausted, generator: the retry
    carried an empty body, the proxy pushed nothing and answered success, and the batch was committed without its
    rows. Fault injection (in process): the first push's connection drops after its body was sent."""
    from yt.packages.requests import Session
    from yt.packages.requests.exceptions import ConnectionError as RequestsConnectionError

    original = Session.send
    dropped: list[str] = []

    def send(self: Any, request: Any, **kwargs: Any) -> Any:
        if request.path_url.split("?", 1)[0].endswith("/push_queue_producer") and not dropped:
            body = request.body
            if body is not None and not isinstance(body, (bytes, str)):
                for _ in body:  # the body went out on the wire
                    pass
            dropped.append(request.path_url)
            raise RequestsConnectionError("Connection reset by peer (injected)")
        return original(self, request, **kwargs)

    monkeypatch.setattr(Session, "send", send)
    stats = writer.write(iter([_chunk(0, 10)]))
    assert dropped, "the fault was not injected"
    assert (stats.rows, stats.skipped) == (10, 0)
    assert _ids(yt, writer.path) == list(range(10))
    assert _session_numbers(yt, writer.producer_path) == {"w-0": 9}
