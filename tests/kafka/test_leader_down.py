"""A partition whose leader stays down while a batch reads it: the read fails its task after
``kafkaConsumer.pollTimeoutMs`` with a one-line :class:`~spyt_queue.errors.UnreachableError` naming the partition and
the option, as Spark's Kafka source fails a task whose poll times out, instead of waiting on.

The broker is this test's own (the session broker is shared), stopped after the batch was planned; the read runs as
an executor task runs it (``KafkaBackend.read_range``). Planning against a broker that is down is the bounds fetch's
part (``fetchOffset.numRetries``, tested with the outage scenarios)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from spyt_queue.errors import UnreachableError
from spyt_queue.kafka.options import kafka_backend_from_options
from spyt_queue.options import Options
from spyt_queue.spark.partitions import DataLossPolicy
from tests.kafka.helpers import Topic

POLL_TIMEOUT_MS = 2000


@pytest.fixture
def own_broker(kafka_broker: Any, tmp_path) -> Any:
    """A broker of this test only, stopped by it (``kafka_broker`` is requested for its requirement check)."""
    from integration.kafka_broker import KafkaBroker
    from spyt_queue.kafka.clients import close_all

    broker = KafkaBroker(work_dir=tmp_path / "broker", log_level="WARN")
    broker.start()
    yield broker
    close_all()  # pooled consumers of this broker would keep reconnecting to it
    broker.stop()


@pytest.mark.parametrize("warm", [True, False], ids=["consumer-connected-before", "new-consumer"])
def test_a_read_whose_leader_is_down_fails_after_the_poll_timeout_naming_the_partition(own_broker, warm) -> None:
    topic = Topic(own_broker.bootstrap_servers, "")
    topic.produce(10)
    options = {
        "kafka.bootstrap.servers": own_broker.bootstrap_servers,
        "subscribe": topic.name,
        "kafkaConsumer.pollTimeoutMs": str(POLL_TIMEOUT_MS),
    }
    backend = kafka_backend_from_options(Options(options))
    partition = f"{topic.name}:0"
    assert backend.bounds()[partition].upper == 5, "the batch is planned while the leader is up"
    if warm:  # a pooled consumer of this executor already read from the leader
        assert sum(b.num_rows for b in backend.read_range(partition, 0, 2, DataLossPolicy(True))) == 2
    own_broker.stop()
    started = time.monotonic()
    with pytest.raises(UnreachableError) as caught:
        list(backend.read_range(partition, 2 if warm else 0, 5, DataLossPolicy(True)))
    elapsed = time.monotonic() - started
    message = str(caught.value)
    assert "\n" not in message
    assert f"partition 0 of topic {topic.name}" in message
    assert f"kafkaConsumer.pollTimeoutMs={POLL_TIMEOUT_MS}" in message
    assert POLL_TIMEOUT_MS / 1000 <= elapsed < POLL_TIMEOUT_MS / 1000 + 5, elapsed
