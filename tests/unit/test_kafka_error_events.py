"""How the Kafka reader treats librdkafka's error events among the records of a ``consume()`` call.

No broker here: the events are built with ``confluent_kafka.Message`` and served by a stand-in consumer, because a
real broker emits them only at moments no test controls (a connection dropped mid-fetch). The behaviour as a user
sees it, a query riding out a real SIGKILLed broker, is ``tests/kafka/test_broker_restart.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Message

from spyt_queue.kafka.backend import KafkaBackend
from spyt_queue.kafka.subscription import Subscription
from spyt_queue.spark.compat import arrow_schema


class _Consumer:
    """Answers ``consume()`` with the prepared lists, then nothing."""

    def __init__(self, *answers: list[Message]) -> None:
        self.answers = list(answers)

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        return self.answers.pop(0) if self.answers else []

    def position(self, partitions: list[Any]) -> list[Any]:
        return [type("TP", (), {"offset": -1001})()]


class _NoLoss:
    def report(self, message: str) -> None:
        raise AssertionError(message)


def _backend(poll_timeout_ms: int = 120_000) -> KafkaBackend:
    backend = KafkaBackend({"bootstrap.servers": "127.0.0.1:9"}, Subscription("subscribe", topics=("t",)), "g",
                           poll_timeout_ms=poll_timeout_ms)  # fmt: skip
    backend._arrow_schema = arrow_schema(backend.schema())
    return backend


def _records(start: int, end: int) -> list[Message]:
    return [Message(topic="t", partition=0, offset=o, value=b"%d" % o, timestamp=(1, o)) for o in range(start, end)]


def _event(code: int) -> Message:
    return Message(topic="t", partition=0, error=KafkaError(code))


def _read(backend: KafkaBackend, consumer: _Consumer, end: int) -> list[int]:
    batches = backend._consume(consumer, "t", 0, 0, end, "t:0", _NoLoss())
    return [o for b in batches for o in b.column("offset").to_pylist()]


@pytest.mark.parametrize("code", [KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT])
def test_a_transient_error_event_is_waited_out(code: int) -> None:
    """A dropped connection (the broker restarting) is reported as an event; librdkafka reconnects by itself, so the
    read goes on with the records that follow, none lost or repeated."""
    consumer = _Consumer([*_records(0, 3), _event(code)], [_event(code)], _records(3, 6))
    assert _read(_backend(), consumer, 6) == [0, 1, 2, 3, 4, 5]


def test_a_broker_that_stays_away_ends_the_read_after_the_poll_timeout() -> None:
    """The wait is bounded by ``kafkaConsumer.pollTimeoutMs``, and the error names the option."""
    consumer = _Consumer(*([_event(KafkaError._TRANSPORT)] for _ in range(1000)))
    with pytest.raises(Exception, match=r"kafkaConsumer\.pollTimeoutMs"):
        _read(_backend(poll_timeout_ms=300), consumer, 6)


def test_a_permanent_error_event_stops_the_read() -> None:
    consumer = _Consumer([*_records(0, 2), _event(KafkaError.TOPIC_AUTHORIZATION_FAILED)])
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        _read(_backend(), consumer, 6)
