"""Offset-contract rules found broken in review (issue 8), each driven through a real Spark query.

* A query that starts below its consumer (``startingOffsets=earliest``) must restart from its checkpoint.
* Batch 0's start is journaled: a replay of batch 0 reads the rows of the first run, not a recomputed start.
* A queue re-created at the same path is not mistaken for the old one by a checkpoint.
* YPath attributes in the queue path are refused instead of hiding the consumer's offsets.
"""

from __future__ import annotations

import json
import time

import pytest

from spyt_queue.yt.admin import create_queue
from tests.yt.helpers import OUTPUT_SCHEMA, Pipeline

pytestmark = pytest.mark.spark


def _run_first_batch_only(spark, pipe: Pipeline, **options) -> None:
    """Run batch 0 and stop before the next trigger, so the source never commits it (Spark commits late)."""
    query = pipe.start(spark, {"processingTime": "1 hour"}, **options)
    try:
        deadline = time.time() + 90
        while time.time() < deadline and not any(p["batchId"] == 0 for p in query.recentProgress):
            assert query.exception() is None, query.exception()
            time.sleep(0.2)
        assert any(p["batchId"] == 0 for p in query.recentProgress), "batch 0 did not finish"
    finally:
        query.stop()


def _forget_batch_0(pipe: Pipeline) -> None:
    """What a crash after Spark logged batch 0's offsets but before the sink wrote it leaves behind: the offset
    log entry, no commit entry, no output rows."""
    assert pipe.purge_last_commit() == 0
    pipe.yt.remove(pipe.output)
    create_queue(pipe.yt, pipe.output, OUTPUT_SCHEMA, tablet_count=1)


def test_query_started_below_its_consumer_restarts_from_its_checkpoint(spark, pipe) -> None:
    """Consumer at 20 per tablet; a new query reads from the earliest row with a cap of 5 per tablet and is
    stopped after batch 0. Restarting from the checkpoint must not report the consumer's old position as a
    conflict: the query goes on, reads every row once and leaves the consumer at the end."""
    ids = pipe.produce(60)
    for tablet in (0, 1):
        pipe.yt.advance_consumer(pipe.consumer, pipe.queue, partition_index=tablet, old_offset=0, new_offset=20)
    _run_first_batch_only(spark, pipe, startingOffsets="earliest", max_rows_per_partition=5)
    assert pipe.consumer_offsets() == {0: 20, 1: 20}, "batch 0 is committed to the consumer one trigger later"
    pipe.run(spark, startingOffsets="earliest", max_rows_per_partition=5)
    assert pipe.output_ids() == ids
    assert pipe.consumer_offsets() == pipe.ends() == {0: 30, 1: 30}


def test_another_query_ahead_of_the_checkpoint_is_still_a_conflict(spark, pipe) -> None:
    """The baseline journaled for a query that starts below its consumer excuses only that old position."""
    pipe.produce(40)
    _run_first_batch_only(spark, pipe, startingOffsets="earliest", max_rows_per_partition=5)
    pipe.yt.advance_consumer(pipe.consumer, pipe.queue, partition_index=0, old_offset=0, new_offset=15)
    with pytest.raises(Exception, match=r"ConsumerConflictError|committed position of 0 is 15"):
        pipe.run(spark, startingOffsets="earliest", max_rows_per_partition=5)


def test_rows_trimmed_before_a_replayed_first_batch_are_data_loss(spark, pipe) -> None:
    """``startingOffsets=earliest``: rows trimmed between batch 0 and its replay must fail the query with
    failOnDataLoss=true, not vanish because the recomputed 'earliest' moved past them."""
    pipe.produce(20, tablet=0)
    _run_first_batch_only(spark, pipe, startingOffsets="earliest", max_rows_per_partition=5)
    _forget_batch_0(pipe)
    pipe.yt.trim_rows(pipe.queue, 0, 3)
    with pytest.raises(Exception, match=r"rows \[0, 3\) of tablet 0 .* removed"):
        pipe.run(spark, startingOffsets="earliest", max_rows_per_partition=5)


def test_a_re_created_queue_is_not_mistaken_for_the_old_one(spark, pipe) -> None:
    ids = pipe.produce(10)
    pipe.run(spark)
    assert pipe.output_ids() == ids
    pipe.yt.remove(pipe.queue)
    from tests.yt.helpers import EVENT_SCHEMA

    create_queue(pipe.yt, pipe.queue, EVENT_SCHEMA, tablet_count=2)
    pipe.produce(4)
    with pytest.raises(Exception, match="deleted and re-created"):
        pipe.run(spark)


@pytest.mark.parametrize(
    "path", ["<append=%true>{queue}", "{queue}{{id}}", "{queue}[#0:#5]"], ids=["attributes", "columns", "range"]
)
def test_ypath_attributes_in_the_queue_path_are_refused(spark, pipe, path) -> None:
    pipe.produce(4)
    with pytest.raises(Exception, match=r"Invalid option 'path'.*not supported here"):
        spark.readStream.format("ytqueue").option("proxy", pipe.proxy).option(
            "consumer_path", pipe.consumer
        ).load(path.format(queue=pipe.queue)).writeStream.format("noop").start().awaitTermination(60)


def test_first_batch_end_journals_its_start(spark, pipe) -> None:
    """The end of batch 0 in Spark's offset log carries the batch's start (what a replay reads from)."""
    pipe.produce(6)
    query = pipe.run(spark, startingOffsets="earliest")
    logged = [json.loads(p["sources"][0]["endOffset"]) for p in query.recentProgress if p["batchId"] == 0]
    assert logged and logged[0]["batch_start"] == {"0": 0, "1": 0}
