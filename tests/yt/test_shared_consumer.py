"""Two deployments of one job reading through the same consumer (different checkpoints, same ``consumer_path``).

Both plan the same batch from the same consumer position and both sinks get its rows; the consumer can only be
advanced once. The query whose advance comes second must stop with ``ConsumerConflictError``: finding the consumer
already at its own target does not prove that its own (lost) advance put it there.
"""

from __future__ import annotations

import copy
import threading
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException

from spyt_queue.errors import ConsumerConflictError
from spyt_queue.yt.admin import create_queue
from tests.yt.helpers import make_pipeline, produce_ids
from tests.yt.test_transactional import OUT_SCHEMA, Setup, _batch

pytestmark = pytest.mark.spark

ROWS_IN_QUEUE = 100
TIMEOUT = 180


def test_two_queries_on_one_consumer_do_not_both_take_the_advance(spark, yt, yt_proxy, yt_root, tmp_path) -> None:
    """Both queries are held inside their first batch until the other has planned it too (a barrier in their
    ``foreachBatch`` sinks), so both read ``[0, 100)`` from the consumer at 0; then both commit."""
    pipe = make_pipeline(yt, yt_proxy, yt_root, str(tmp_path / "unused"))
    pipe.produce(ROWS_IN_QUEUE)
    both_planned = threading.Barrier(2, timeout=TIMEOUT)
    seen: dict[str, list[int]] = {"a": [], "b": []}

    def sink(name: str):
        def write(batch: Any, batch_id: int) -> None:
            ids = [row["id"] for row in batch.select("id").collect()]
            if batch_id == 0:
                both_planned.wait()
            seen[name].extend(ids)

        return write

    queries = {
        name: pipe.reader(spark)
        .select("id")
        .writeStream.foreachBatch(sink(name))
        .option("checkpointLocation", str(tmp_path / f"chk-{name}"))
        .trigger(availableNow=True)
        .start()
        for name in ("a", "b")
    }
    errors: dict[str, str] = {}
    for name, query in queries.items():
        try:
            query.awaitTermination(TIMEOUT)
        except StreamingQueryException:
            pass  # read below through query.exception()
        if query.isActive:
            query.stop()
            raise AssertionError(f"query {name} did not finish within {TIMEOUT} s")
        if query.exception() is not None:
            errors[name] = str(query.exception())
    assert seen["a"] and seen["b"], seen  # both planned and wrote batch 0 (the barrier held them)
    assert len(errors) == 1, f"exactly one query must stop with a conflict, got {errors or 'none'}"
    (message,) = errors.values()
    assert "ConsumerConflictError" in message and "did not write it" in message, message
    assert sorted(pipe.consumer_offsets().values()) == [ROWS_IN_QUEUE // 2] * 2


def test_transactional_batch_committed_by_another_query_is_not_taken_for_a_replay(
    yt, yt_proxy, yt_root, tmp_path
) -> None:
    """Two transactional queries (two checkpoints, one consumer) run batch 0 ``[0, 4)``. The second one's commit
    finds the consumer at the batch's end without having committed it itself: not a replay of its own, but another
    query's progress. Its transaction is aborted (nothing of its rows is visible) and it stops with
    ``ConsumerConflictError``."""
    first = Setup(yt, yt_proxy, yt_root, str(tmp_path / "chk-a"))
    second = copy.copy(first)  # the same queue and consumer; its own checkpoint and output table
    second.checkpoint, second.output = Path(tmp_path / "chk-b"), f"{yt_root}/out-b"
    second.query, second.ends = "query-b-id", {}  # another streaming query: its own journal entries
    create_queue(yt, second.output, OUT_SCHEMA)
    produce_ids(yt, first.queue, 0, 8)
    for setup, writer in ((first, "query-a"), (second, "query-b")):
        setup.log_batch(0, {"0": 2, "1": 2}, start={"0": 0, "1": 0}, writer=writer)
    a, b = first.task_writer(), second.task_writer()
    messages_a, messages_b = [a.write(iter([_batch([0, 1, 2, 3])]))], [b.write(iter([_batch([0, 1, 2, 3])]))]
    messages_a[0].query_id, messages_b[0].query_id = first.query, second.query  # as Spark's tasks report them
    first.commit_writer().commit(messages_a, 0)
    with pytest.raises(ConsumerConflictError, match="no attempt of this query committed it"):
        second.commit_writer().commit(messages_b, 0)
    assert first.ids() == [0, 1, 2, 3]
    assert second.ids() == [], "the second query's rows were aborted with its transaction"
    assert first.offsets() == {0: 2, 1: 2}
    # The first query's own replay of batch 0 (its commit journaled) is still recognised and writes nothing.
    replay = first.task_writer().write(iter([_batch([0, 1, 2, 3])]))
    replay.query_id = first.query
    first.commit_writer().commit([replay], 0)
    assert first.ids() == [0, 1, 2, 3]
