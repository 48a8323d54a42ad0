"""A Kafka broker SIGKILLed and restarted under a running query: the query waits for it and goes on, and every
record arrives once (the JVM Kafka source rides out a restart the same way).

The test starts its own broker on loopback (the session broker is shared, this one is killed), restarted on its
data directory and ports so it comes back at the same address.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.kafka.helpers import FILES_SCHEMA, Topic, start_to_files

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def own_broker(kafka_broker: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A broker of this module only (``kafka_broker`` is requested for its requirement check: a missing server
    is a skip locally and a failure in CI)."""
    from integration.java_server import free_ports
    from integration.kafka_broker import KafkaBroker
    from spyt_queue.kafka.clients import close_all

    port, controller = free_ports(2, "127.0.0.1")
    broker = KafkaBroker(port, controller, work_dir=tmp_path_factory.mktemp("restarted-broker"), log_level="WARN")
    broker.start()
    yield broker
    close_all()  # pooled consumers of this broker would keep reconnecting to it
    broker.stop()


def _restart(broker: Any, pause: float) -> None:
    """SIGKILL the broker's process group, wait ``pause`` seconds, start it again on its data and ports."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(broker.pid, signal.SIGKILL)
    broker.stop()  # reaps the process, keeps the work directory
    time.sleep(pause)
    broker.start()


def _ids(spark: Any, path: Path) -> list[int]:
    """Ids in the output directory so far, duplicates included."""
    return sorted(int(r.value) for r in spark.read.schema(FILES_SCHEMA).parquet(str(path)).collect())


def _wait_for(spark: Any, query: Any, path: Path, count: int, timeout: float) -> list[int]:
    """The ids in ``path`` once there are ``count`` of them; fails at once if the query stops."""
    deadline = time.monotonic() + timeout
    while True:
        if query.exception() is not None or not query.isActive:
            raise AssertionError(f"the query stopped: {query.exception()}")
        ids = _ids(spark, path)
        if len(ids) >= count or time.monotonic() > deadline:
            return ids
        time.sleep(0.5)


def test_query_rides_out_a_broker_restart(spark, own_broker, tmp_path) -> None:
    """Kill the broker after the first batch, restart it 3 s later, produce more: the query never stops, every
    record is in the sink once, and the group's offsets reach the end of the topic."""
    topic = Topic(own_broker.bootstrap_servers, str(tmp_path / "checkpoint"), partitions=2)
    topic.produce(2000)
    out = tmp_path / "out"
    out.mkdir()
    df = topic.stream(spark, startingOffsets="earliest", maxOffsetsPerTrigger=300)
    query = start_to_files(df, topic.checkpoint, str(out), {"processingTime": "200 milliseconds"})
    try:
        assert _wait_for(spark, query, out, 1, 120), "the first batch never arrived"
        _restart(own_broker, pause=3)
        topic.produce(500)
        ids = _wait_for(spark, query, out, 2500, 180)
        assert ids == list(range(2500)), f"{len(ids)} ids, {len(set(ids))} distinct; {query.lastProgress}"
        deadline = time.monotonic() + 60
        while topic.group_offsets() != topic.ends() and time.monotonic() < deadline:
            assert query.exception() is None, query.exception()
            time.sleep(0.5)
        assert topic.group_offsets() == topic.ends() == {0: 1250, 1: 1250}
    finally:
        query.stop()
    assert query.exception() is None


def test_group_commit_timed_out_while_the_broker_was_down_does_not_wedge_later_commits(own_broker, tmp_path) -> None:
    """An ``alter_consumer_group_offsets`` in flight when the broker dies times out; once the broker is back the
    next advance succeeds. librdkafka's admin client never answered another alter after such a timeout (every
    later commit of the query timed out, so the query made no progress): the store now drops that client."""
    from spyt_queue.kafka.group_store import KafkaGroupStore

    topic = Topic(own_broker.bootstrap_servers, str(tmp_path / "checkpoint"), partitions=1)
    topic.produce(10)
    key = f"{topic.name}:0"
    store = KafkaGroupStore({"bootstrap.servers": own_broker.bootstrap_servers}, topic.group, lambda: [key], 5.0)
    store.advance({key: None}, {key: 3})
    assert store.committed() == {key: 3}
    os.killpg(own_broker.pid, signal.SIGKILL)
    own_broker.stop()
    try:
        down = KafkaGroupStore(store.config, topic.group, lambda: [key], 5.0)
        down.committed = lambda: {key: 3}  # type: ignore[method-assign]  # as read just before the broker died
        with pytest.raises(Exception) as failed:
            down.advance({key: 3}, {key: 5})  # the alter request is sent to a dead broker and times out
        assert store.is_transient(failed.value), failed.value
    finally:
        own_broker.start()
    deadline = time.monotonic() + 60
    while True:  # the group coordinator may still be loading right after the restart
        try:
            store.advance({key: 3}, {key: 7})
            break
        except Exception as error:
            if not store.is_transient(error) or time.monotonic() > deadline:
                raise
    assert store.committed() == {key: 7}
