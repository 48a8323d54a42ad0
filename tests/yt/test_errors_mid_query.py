"""Errors a user meets once a query runs (raised in ``initialOffset``, ``latestOffset``, ``partitions``, ``read`` or
``commit``) reach them as one line from spyt-queue with its fix, not as a Python traceback; and an unreachable
offset store fails at ``load()``, at once when its port refuses connections, as the proxy and the brokers do."""

from __future__ import annotations

import pytest

from spyt_queue.yt.admin import create_consumer, create_queue
from tests.yt.helpers import EVENT_SCHEMA, Pipeline
from tests.yt.user_errors import failure, first_line, free_port, query_failure

pytestmark = pytest.mark.spark


def spyt_part(error: BaseException) -> str:
    """What follows the first spyt-queue error class name in what the user sees."""
    text = str(error)
    for name in ("SpytQueueError", "OptionError", "UnreachableError", "ConsumerConflictError", "DataLossError"):
        if f"{name}: " in text:
            return text.split(f"{name}: ", 1)[1]
    raise AssertionError(f"no spyt-queue error in: {text[:2000]}")


def test_a_zookeeper_store_on_a_wrong_port_fails_at_load_at_once(spark, pipe: Pipeline) -> None:
    """Nothing listens on the port: ``load()`` fails in one line naming the store and what to check, without
    waiting for a timeout (it failed 25 s into the query with a 33-line kazoo traceback)."""
    port = free_port()
    reader = (
        spark.readStream.format("ytqueue")
        .option("proxy", pipe.proxy)
        .option("offsets.store", f"zookeeper://127.0.0.1:{port}/spyt")
        .option("connect_timeout", "20")
    )
    error, seconds = failure(lambda: reader.load(pipe.queue))
    assert seconds < 15, f"a refused connection must fail at once, took {seconds:.1f} s"
    line = first_line(error)
    assert f"offsets.store zookeeper://127.0.0.1:{port}/spyt: nothing listens there" in line, line
    assert "is ZooKeeper running" in line and "Traceback" not in str(error), str(error)[:3000]


def test_a_checkpoint_reused_for_another_queue_stops_the_query_in_one_line(spark, pipe: Pipeline) -> None:
    """A checkpoint written by a query over one queue, reused by a query over another: the query stops with
    spyt-queue's message as one line (it came as the last of 24 lines of traceback)."""
    pipe.produce(4)
    pipe.run(spark)
    other = f"{pipe.queue}_other"
    consumer = f"{pipe.consumer}_other"
    create_queue(pipe.yt, other, EVENT_SCHEMA, tablet_count=2)
    create_consumer(pipe.yt, consumer, other)
    pipe.yt.insert_rows(other, [{"id": 100 + i, "payload": "x", "$tablet_index": i % 2} for i in range(4)])
    moved = Pipeline(pipe.yt, pipe.proxy, other, consumer, pipe.output, pipe.checkpoint)
    error = query_failure(moved.start(spark, {"processingTime": "200 milliseconds"}))
    line = spyt_part(error).splitlines()[0]
    assert "Traceback" not in str(error) and 'File "' not in str(error), str(error)[:3000]
    assert f"this query reads 'yt:{other}#" in line
    assert line.endswith("use a new checkpointLocation for a different queue"), line
