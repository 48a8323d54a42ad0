"""Transactional exactly-once (``transactional=true`` on a ``ytqueue`` writer fed by a ``ytqueue`` source): the rows of
a micro-batch and the consumer's advance commit in one tablet transaction.

The first tests drive the writer's pieces directly, as Spark does (the writer built for a batch is pickled to the
tasks, which starts the batch's transaction; a fresh writer commits), with each batch's range journaled on the
consumer as the source's first task journals it (:mod:`spyt_queue.yt.batch_journal`); the others run Spark queries,
one of them in a driver process killed with SIGKILL mid-stream, one with its checkpoint on a real HDFS.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from spyt_queue.errors import CommitError, ConsumerConflictError, OptionError, SpytQueueError
from spyt_queue.offsets import StreamOffset
from spyt_queue.options import Options
from spyt_queue.spark.sink_skeleton import SinkStreamWriter
from spyt_queue.yt import batch_journal
from spyt_queue.yt import sink as sink_module
from spyt_queue.yt.admin import column, create_consumer, create_queue, create_table
from spyt_queue.yt.batch_journal import COMMITS_ATTRIBUTE, PLANS_ATTRIBUTE, YtBatchJournal, request_journal
from spyt_queue.yt.client import YtConnection
from spyt_queue.yt.sink import yt_stream_writer
from tests.queries import run_to_end
from tests.yt.helpers import EVENT_SCHEMA, produce_ids, purge_last_commit
from tests.yt.killed_driver import kill_driver_midway

pytestmark = pytest.mark.spark

ROWS = StructType([StructField("id", LongType(), False), StructField("payload", StringType(), True)])
OUT_SCHEMA = [column("id", "int64", required=True), column("payload", "string")]


#: The streaming query id the hand-driven tasks report (Spark's local property ``sql.streaming.queryId``).
QUERY = "0b5e3c55-query"


class Setup:
    """A queue with a registered consumer, an output table, and batch ranges journaled by hand."""

    def __init__(self, yt: Any, proxy: str, root: str, checkpoint: str, sorted_target: bool = False) -> None:
        self.yt, self.proxy = yt, proxy
        self.queue, self.consumer, self.output = f"{root}/queue", f"{root}/consumer", f"{root}/out"
        self.checkpoint = Path(checkpoint)
        create_queue(yt, self.queue, EVENT_SCHEMA, tablet_count=2)
        create_consumer(yt, self.consumer, self.queue)
        if sorted_target:
            create_table(yt, self.output, [column("id", "int64", sort_order="ascending"), column("payload", "string")])
        else:
            create_queue(yt, self.output, OUT_SCHEMA)
        self.source = f"yt:{self.queue}#{yt.get(self.queue + '/@id')}"
        self.ends: dict[int, dict[str, Any]] = {}
        self.query = QUERY  # the streaming query id its batches are journaled under
        request_journal(yt, self.consumer)  # as the transactional sink does when it is built

    def options(self, **extra: Any) -> Options:
        base = {
            "proxy": self.proxy,
            "path": self.output,
            "checkpointLocation": str(self.checkpoint),
            "transactional": "true",
            "consumer_path": self.consumer,
        }
        base.update({k: str(v) for k, v in extra.items()})
        return Options(base)

    def log_batch(self, batch_id: int, end: dict[str, int], start: dict[str, int] | None = None, **fields: Any) -> None:
        """Journal batch ``batch_id`` of :data:`QUERY` as the source's first task does: Spark's start offset (the
        previous batch's end, or an initial offset whose positions the end repeats in ``batch_start``) and end."""
        offset = StreamOffset(self.source, end, batch_start=start, **fields).to_json()
        begin = (
            StreamOffset(self.source, start, initial=True).to_json() if start is not None else self.ends[batch_id - 1]
        )
        self.ends[batch_id] = offset
        journal = YtBatchJournal(make_yt_connection(self.proxy), self.consumer, self.source)
        with task_batch_of(self.query, batch_id):
            journal.record({"start": begin, "end": offset})

    def task_writer(self, **extra: Any) -> SinkStreamWriter:
        """The writer as a task gets it: built for the batch, pickled (which starts the transaction), unpickled."""
        return pickle.loads(pickle.dumps(yt_stream_writer(self.options(**extra), ROWS)))

    def commit_writer(self, **extra: Any) -> SinkStreamWriter:
        """The writer Spark builds anew to run ``commit`` (never pickled: starts no transaction)."""
        return yt_stream_writer(self.options(**extra), ROWS)

    def offsets(self) -> dict[int, int]:
        rows = self.yt.select_rows(f'* from [{self.consumer}] where queue_path = "{self.queue}"')
        return {int(r["partition_index"]): int(r["offset"]) for r in rows}

    def ids(self) -> list[int]:
        return sorted(r["id"] for r in self.yt.select_rows(f"id from [{self.output}]"))


def make_yt_connection(proxy: str) -> YtConnection:
    return YtConnection(proxy=proxy, token=None, config={})


def _batch(ids: list[int]) -> pa.RecordBatch:
    return pa.record_batch(
        [pa.array(ids, pa.int64()), pa.array([f"e{i}" for i in ids], pa.string())], names=["id", "payload"]
    )


@contextlib.contextmanager
def task_batch_of(query_id: str, batch_id: int) -> Iterator[None]:
    """Run the block as a task of micro-batch ``batch_id`` of query ``query_id`` (Spark's local properties)."""
    with mock.patch.object(batch_journal, "task_batch", lambda: (query_id, batch_id)):
        yield


@pytest.fixture
def setup(yt, yt_proxy, yt_root, checkpoint, monkeypatch) -> Setup:
    """The sink's hand-driven tasks report :data:`QUERY` as their streaming query."""
    monkeypatch.setattr(sink_module, "task_batch", lambda: (QUERY, 0))
    return Setup(yt, yt_proxy, yt_root, checkpoint)


def test_crash_between_insert_and_commit_leaves_nothing_and_the_replay_commits_once(setup) -> None:
    """Tasks inserted under the batch's transaction, then the driver died before ``commit``: nothing is visible and
    the consumer did not move. The replay (a new transaction) commits rows and advance together, once."""
    produce_ids(setup.yt, setup.queue, 0, 8)
    setup.log_batch(0, {"0": 4, "1": 4}, start={"0": 0, "1": 0})
    first, second = setup.task_writer(), setup.task_writer()
    assert first.task.transaction.id != second.task.transaction.id, "one transaction per shipped writer"
    lost = [first.write(iter([_batch([0, 2])])), first.write(iter([_batch([1, 3])]))]
    assert all(m.transaction_id == first.task.transaction.id for m in lost)
    assert setup.ids() == [] and setup.offsets() == {}, "nothing visible before the commit"
    # The driver is gone: the commit never runs. The replay of batch 0 ships a new writer.
    replay = [second.write(iter([_batch([0, 2])])), second.write(iter([_batch([1, 3])]))]
    setup.commit_writer().commit(replay, 0)
    assert setup.ids() == [0, 1, 2, 3]
    assert setup.offsets() == {0: 4, 1: 4}
    # The first attempt's transaction can not commit its rows any more: its batch is already in.
    setup.commit_writer().commit(lost, 0)
    assert setup.ids() == [0, 1, 2, 3], "a replay of a committed batch writes nothing"
    assert setup.offsets() == {0: 4, 1: 4}


def test_next_batch_starts_where_the_transaction_left_the_consumer(setup) -> None:
    produce_ids(setup.yt, setup.queue, 0, 8)
    for batch, (end, ids) in enumerate([(2, [0, 1, 2, 3]), (4, [4, 5, 6, 7])]):
        setup.log_batch(batch, {"0": end, "1": end}, start={"0": 0, "1": 0} if batch == 0 else None)
        writer = setup.task_writer()
        setup.commit_writer().commit([writer.write(iter([_batch(ids)]))], batch)
        assert setup.offsets() == {0: end, 1: end}
    assert setup.ids() == list(range(8))


def test_a_batch_whose_tasks_wrote_nothing_still_advances(setup) -> None:
    """A filter dropped every row: the one task (the batch's first, which journals its range) inserted nothing,
    and the commit still advances the consumer over the batch."""
    produce_ids(setup.yt, setup.queue, 0, 4)
    setup.log_batch(0, {"0": 2, "1": 2}, start={"0": 0, "1": 0})
    setup.commit_writer().commit([setup.task_writer().write(iter([]))], 0)
    assert setup.offsets() == {0: 2, 1: 2}


def test_a_batch_without_any_task_report_is_a_clear_error(setup) -> None:
    """No task reported the query id (there is always one: the source's first partition journals the range), so the
    range can not be found: nothing is committed."""
    produce_ids(setup.yt, setup.queue, 0, 4)
    setup.log_batch(0, {"0": 2, "1": 2}, start={"0": 0, "1": 0})
    with pytest.raises(SpytQueueError, match="reported its streaming query id"):
        setup.commit_writer().commit([], 0)
    assert setup.offsets() == {}


def test_consumer_moved_by_someone_else_aborts_the_batch(setup) -> None:
    produce_ids(setup.yt, setup.queue, 0, 8)
    setup.log_batch(0, {"0": 4, "1": 4}, start={"0": 0, "1": 0})
    message = setup.task_writer().write(iter([_batch([0, 1, 2, 3])]))
    setup.yt.advance_consumer(setup.consumer, setup.queue, partition_index=0, old_offset=0, new_offset=1)
    with pytest.raises(ConsumerConflictError, match="holds 1 for tablet 0"):
        setup.commit_writer().commit([message], 0)
    assert setup.ids() == []
    assert setup.offsets() == {0: 1}


def test_consumer_moved_after_the_check_is_caught_by_the_transaction(setup, monkeypatch) -> None:
    """The consumer moves between the writer's read and its advance: the compare-and-set inside the transaction
    fails, the transaction is aborted, nothing is written."""
    from spyt_queue.yt.consumer_store import YtConsumerStore

    produce_ids(setup.yt, setup.queue, 0, 8)
    setup.log_batch(0, {"0": 4, "1": 4}, start={"0": 0, "1": 0})
    message = setup.task_writer().write(iter([_batch([0, 1, 2, 3])]))
    setup.yt.advance_consumer(setup.consumer, setup.queue, partition_index=1, old_offset=0, new_offset=3)
    monkeypatch.setattr(YtConsumerStore, "committed", lambda self: {})  # a stale read
    with pytest.raises(ConsumerConflictError, match="advanced by someone else"):
        setup.commit_writer().commit([message], 0)
    monkeypatch.undo()
    assert setup.ids() == []
    assert setup.offsets() == {1: 3}


def test_a_batch_over_the_tablet_limit_fails_clearly_and_writes_nothing(setup) -> None:
    """100,001 rows into the one tablet of the target: YT refuses the commit (1717); the error says what to do."""
    produce_ids(setup.yt, setup.queue, 0, 4)
    setup.log_batch(0, {"0": 2, "1": 2}, start={"0": 0, "1": 0})
    ids = list(range(100_001))
    message = setup.task_writer().write(iter([_batch(ids[:60_000]), _batch(ids[60_000:])]))
    with pytest.raises(CommitError, match=r"too large for one tablet transaction .*1717.*100000 rows per tablet"):
        setup.commit_writer().commit([message], 0)
    assert setup.yt.get_tablet_infos(setup.output, [0])["tablets"][0]["total_row_count"] == 0
    assert setup.offsets() == {}


def test_a_query_started_below_its_consumer_is_refused(setup) -> None:
    produce_ids(setup.yt, setup.queue, 0, 8)
    setup.yt.advance_consumer(setup.consumer, setup.queue, partition_index=0, old_offset=0, new_offset=2)
    setup.log_batch(0, {"0": 2, "1": 2}, start={"0": 0, "1": 0}, baseline={"0": 2})
    message = setup.task_writer().write(iter([_batch([0, 1])]))
    with pytest.raises(SpytQueueError, match=r"started below consumer .*startingOffsets=consumer"):
        setup.commit_writer().commit([message], 0)
    assert setup.ids() == [] and setup.offsets() == {0: 2}


def test_a_transaction_gone_before_the_commit_fails_it_clearly(setup) -> None:
    """The batch's transaction is gone at commit (here aborted, as the server does when ``transaction_timeout``
    passes without a ping): the commit says so, nothing is written."""
    produce_ids(setup.yt, setup.queue, 0, 4)
    setup.log_batch(0, {"0": 2, "1": 2}, start={"0": 0, "1": 0})
    message = setup.task_writer(transaction_timeout=30).write(iter([_batch([0, 1])]))
    setup.yt.abort_transaction(message.transaction_id)
    with pytest.raises(CommitError, match=r"is gone before its commit .*transaction_timeout=30 s"):
        setup.commit_writer(transaction_timeout=30).commit([message], 0)
    assert setup.ids() == [] and setup.offsets() == {}


def test_unjournaled_batch_and_foreign_source_are_clear_errors(setup) -> None:
    """No range journaled for the batch (a source read with read_mode=driver, or through another consumer): a clear
    error. A local checkpoint whose offsets log holds a source that is not a YT queue: refused too."""
    message = setup.task_writer().write(iter([_batch([0])]))
    with pytest.raises(
        SpytQueueError, match=r"no range of micro-batch 0 is journaled on consumer .*read_mode=executors"
    ):
        setup.commit_writer().commit([message], 0)
    produce_ids(setup.yt, setup.queue, 0, 4)
    setup.log_batch(0, {"0": 2, "1": 2}, start={"0": 0, "1": 0})
    directory = setup.checkpoint / "offsets"
    directory.mkdir(parents=True)
    kafka = {"version": 1, "source": "kafka:events", "partitions": {"events:0": 3}}
    (directory / "0").write_text(f"v1\n{{}}\n{json.dumps(kafka)}")
    with pytest.raises(SpytQueueError, match=r"exactly one source, a YTsaurus queue .*micro-batch 0 reads 1 sources"):
        setup.commit_writer().commit([message], 0)
    # The YT queue beside another source (Spark's rate source: its offset is a plain number): refused too.
    yt_end = setup.ends[0]
    (directory / "0").write_text(f"v1\n{{}}\n{json.dumps(yt_end)}\n12")
    with pytest.raises(SpytQueueError, match=r"exactly one source, a YTsaurus queue .*micro-batch 0 reads 2 sources"):
        setup.commit_writer().commit([message], 0)
    assert setup.ids() == [] and setup.offsets() == {}


@pytest.mark.parametrize(
    ("extra", "drop", "message"),
    [
        ({}, "consumer_path", r"Invalid option 'consumer_path'.*same consumer_path as on spark.readStream"),
        ({"transactional": "false"}, "", r"Invalid option 'consumer_path'.*only with transactional=true"),
        ({"producer_path": "//tmp/p"}, "", r"Invalid option 'transactional'.*producer_path"),
    ],
    ids=["no-consumer", "consumer-without-transactional", "with-producer"],
)
def test_option_errors(setup, extra, drop, message) -> None:
    options = setup.options(**extra).raw()
    options.pop(drop.lower(), None)
    with pytest.raises(OptionError, match=message):
        yt_stream_writer(Options(options), ROWS)


def test_batch_writes_refuse_transactional(setup) -> None:
    from spyt_queue.yt.sink import yt_batch_writer

    with pytest.raises(OptionError, match="only streaming writes"):
        yt_batch_writer(setup.options(), ROWS, overwrite=False)


# -- Spark queries ---------------------------------------------------------------------------------------------


def _query(spark, s: Setup, checkpoint: str, trigger: dict[str, Any], transform=None, **source: Any):
    """``queue -> (transform) -> output`` with ``transactional=true``; ``transform`` defaults to the filter
    pipeline (every third id, no service columns)."""
    reader = spark.readStream.format("ytqueue").option("proxy", s.proxy).option("consumer_path", s.consumer)
    for key, value in source.items():
        reader = reader.option(key, str(value))
    df = reader.load(s.queue)
    df = transform(df) if transform is not None else df.where("id % 3 = 0").select("id", "payload")
    return (
        df.writeStream.format("ytqueue")
        .option("proxy", s.proxy)
        .option("path", s.output)
        .option("checkpointLocation", checkpoint)
        .option("transactional", "true")
        .option("consumer_path", s.consumer)
        .trigger(**trigger)
        .start()
    )


def _run(spark, s: Setup, checkpoint: str, **source: Any) -> None:
    """Run the query to the end of the queue (AvailableNow; on PySpark 4.0/4.1, where that is one batch, batches until
    idle: tests.queries.run_to_end)."""
    run_to_end(lambda trigger: _query(spark, s, checkpoint, trigger, **source), timeout=180)


def test_filter_pipeline_commits_with_its_consumer_and_a_replay_writes_nothing(spark, setup, checkpoint) -> None:
    """A filter (one row in three, no service columns) into an ordered table: the consumer is at the end as soon as
    the run ends (it moved with each batch, not one trigger later); a replayed last batch, whose transaction had
    committed, writes nothing; the next run goes on from there."""
    ids = produce_ids(setup.yt, setup.queue, 0, 20)
    _run(spark, setup, checkpoint, max_rows_per_partition=5)
    assert setup.ids() == [i for i in ids if i % 3 == 0]
    assert setup.offsets() == {0: 10, 1: 10}
    assert purge_last_commit(checkpoint) == 1
    more = produce_ids(setup.yt, setup.queue, 20, 10)
    _run(spark, setup, checkpoint, max_rows_per_partition=5)
    assert setup.ids() == [i for i in ids + more if i % 3 == 0], "no duplicate from the replay, nothing lost"
    assert setup.offsets() == {0: 15, 1: 15}
    plans = setup.yt.get(f"{setup.consumer}/@{PLANS_ATTRIBUTE}")
    commits = setup.yt.get(f"{setup.consumer}/@{COMMITS_ATTRIBUTE}")
    assert 1 <= len(plans) <= 2 and 1 <= len(commits) <= 2, f"the journal keeps the last two batches: {plans}"


def test_a_stream_without_a_transactional_sink_journals_nothing(spark, setup, checkpoint, yt) -> None:
    """A plain stream through a consumer no transactional sink asked for a journal: the consumer gets no journal
    attribute, whatever the batches (the first batch's task finds none and writes nothing)."""
    plain = f"{setup.consumer}_plain"
    create_consumer(yt, plain, setup.queue)
    produce_ids(setup.yt, setup.queue, 0, 12)
    seen: list[int] = []
    query = (
        spark.readStream.format("ytqueue")
        .option("proxy", setup.proxy)
        .option("consumer_path", plain)
        .option("max_rows_per_partition", 2)
        .load(setup.queue)
        .writeStream.foreachBatch(lambda df, _: seen.extend(r.id for r in df.select("id").collect()))
        .option("checkpointLocation", checkpoint + "-plain")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert query.exception() is None and sorted(seen) == list(range(12))
    assert not yt.exists(f"{plain}/@{PLANS_ATTRIBUTE}")


def test_conflicting_advance_stops_the_query_with_nothing_written(spark, setup, checkpoint) -> None:
    """Someone moves the consumer while a batch runs (here: from inside the batch's own task): the commit's
    compare-and-set fails, the transaction is aborted, nothing is written, the query stops with
    ConsumerConflictError."""
    produce_ids(setup.yt, setup.queue, 0, 8)
    proxy, consumer, queue = setup.proxy, setup.consumer, setup.queue

    def move_consumer(df):
        from pyspark.sql.functions import udf

        def interfere(value: int) -> bool:
            if value == 0:
                from spyt_queue.yt.client import make_yt_client

                make_yt_client(proxy).advance_consumer(consumer, queue, partition_index=0, old_offset=0, new_offset=1)
            return True

        return df.where(udf(interfere, "boolean")("id")).select("id", "payload")

    query = _query(spark, setup, checkpoint, {"availableNow": True}, transform=move_consumer)
    with pytest.raises(Exception, match=r"ConsumerConflictError: Consumer .* holds 1 for tablet 0"):
        query.awaitTermination(180)
    assert setup.ids() == []
    assert setup.offsets() == {0: 1}


def test_a_query_started_below_its_consumer_is_refused_even_when_its_first_batch_ends_there(
    spark, setup, checkpoint
) -> None:
    """``startingOffsets=earliest`` under a consumer at 2, first batch ``[0, 2)``: the consumer already holds the
    batch's end, which must not be taken for a committed replay (rows 0 and 1 would be lost). The source journals
    the consumer's old positions in the batch's end; the sink refuses the query."""
    produce_ids(setup.yt, setup.queue, 0, 8)
    for tablet in (0, 1):
        setup.yt.advance_consumer(setup.consumer, setup.queue, partition_index=tablet, old_offset=0, new_offset=2)
    query = _query(
        spark, setup, checkpoint, {"availableNow": True}, startingOffsets="earliest", max_rows_per_partition=2
    )
    with pytest.raises(Exception, match=r"started below consumer .*startingOffsets=consumer"):
        query.awaitTermination(180)
    assert setup.ids() == []
    assert setup.offsets() == {0: 2, 1: 2}


@pytest.mark.parametrize("target", ["ordered", "sorted"])
def test_driver_killed_mid_stream_then_resumed_loses_and_duplicates_nothing(
    spark, yt, yt_proxy, yt_root, tmp_path, target
) -> None:
    """The filter pipeline in a driver process killed with SIGKILL while batches run (a batch may have inserted
    under its transaction, or committed without Spark logging it). The restart, from the checkpoint (ordered
    target) or with the checkpoint deleted, from the consumer (sorted target), ends with every kept row exactly
    once and the consumer at the end of the queue."""
    s = Setup(yt, yt_proxy, yt_root, str(tmp_path / "unused"), sorted_target=target == "sorted")
    checkpoint = str(tmp_path / "chk")
    ids = produce_ids(yt, s.queue, 0, 60)
    spec = {
        "source": {"proxy": yt_proxy, "consumer_path": s.consumer, "max_rows_per_partition": "3"},
        "path": s.queue,
        "where": "id % 3 = 0",
        "select": ["id", "payload"],
        "sink": "ytqueue",
        "sink_options": {"proxy": yt_proxy, "path": s.output, "transactional": "true", "consumer_path": s.consumer},
        "checkpoint": checkpoint,
    }
    kill_driver_midway(tmp_path, spec, lambda: len(s.ids()) >= 4)
    written = s.ids()
    assert len(written) < 20, "killed before the end: the restart has work to do"
    assert written == sorted(set(written)), "what a killed driver left is committed batches only"
    if target == "sorted":
        import shutil

        shutil.rmtree(checkpoint)
    _run(spark, s, checkpoint)
    assert s.ids() == [i for i in ids if i % 3 == 0]
    assert s.offsets() == {0: 30, 1: 30}


@pytest.mark.parametrize("trigger", ["availableNow", "processingTime"])
def test_a_new_checkpoint_on_a_caught_up_consumer_is_not_a_conflict(spark, setup, checkpoint, trigger) -> None:
    """A drained pipeline started again with a new checkpoint (a redeploy, or the checkpoint deleted) and no new
    rows: its batch 0 is empty (its end is its start, where the consumer already is). That is not another query's
    commit: nothing is advanced, nothing raised; AvailableNow ends, a continuous query waits for rows and writes
    each new row once."""
    ids = produce_ids(setup.yt, setup.queue, 0, 12)
    _run(spark, setup, checkpoint)
    assert setup.offsets() == {0: 6, 1: 6}
    fresh = checkpoint + "-fresh"
    if trigger == "availableNow":
        _run(spark, setup, fresh)
        more = produce_ids(setup.yt, setup.queue, 12, 6)
        _run(spark, setup, fresh)
    else:
        query = _query(spark, setup, fresh, {"processingTime": "300 milliseconds"})
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and query.isActive and len(query.recentProgress) < 3:
                time.sleep(0.2)
            assert query.isActive, query.exception()
            more = produce_ids(setup.yt, setup.queue, 12, 6)
            while time.monotonic() < deadline and query.isActive and setup.offsets() != {0: 9, 1: 9}:
                time.sleep(0.2)
            assert query.isActive, query.exception()
        finally:
            query.stop()
    assert setup.ids() == [i for i in ids + more if i % 3 == 0], "nothing lost, nothing written twice"
    assert setup.offsets() == {0: 9, 1: 9}


def test_read_mode_driver_is_refused_when_the_query_starts(spark, setup, checkpoint) -> None:
    """``read_mode=driver`` journals no batch range (only executor tasks do), so a transactional sink can not commit
    its batches. A consumer a transactional sink asked a journal of makes a driver-mode query fail at its first
    call, in one line naming ``read_mode``, before any batch is read or written."""
    produce_ids(setup.yt, setup.queue, 0, 6)
    query = _query(spark, setup, checkpoint, {"availableNow": True}, read_mode="driver")
    with pytest.raises(Exception, match=r"Invalid option 'read_mode'.*read_mode=executors") as failure:
        query.awaitTermination(180)
    assert "Traceback" not in str(failure.value).split("read_mode=executors")[0]
    assert setup.ids() == [] and setup.offsets() == {}
