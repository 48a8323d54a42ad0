"""A partition whose leader is not known yet (a broker restarting) makes ``list_offsets`` answer -1001 without an
error: that is no end of the partition. Taken as one, the planner reported data loss ("offset 300 ... is beyond its
end -1001") and stopped the query (seen in tests/kafka/test_broker_restart.py); it must be a transient error."""

from __future__ import annotations

import pytest

from spyt_queue.errors import UnreachableError
from spyt_queue.kafka.backend import KafkaBackend
from spyt_queue.kafka.errors import is_transient_kafka_error
from spyt_queue.kafka.options import Subscription


def test_an_unknown_offset_is_a_transient_error_not_an_end(monkeypatch) -> None:
    backend = KafkaBackend({"bootstrap.servers": "127.0.0.1:9"}, Subscription("subscribe", topics=("t",)), "g")
    answers = iter([{"t:0": 0, "t:1": 0}, {"t:0": -1001, "t:1": 40}] * 10)
    monkeypatch.setattr(backend, "partitions", lambda: ["t:0", "t:1"])
    monkeypatch.setattr(backend, "_list_offsets", lambda specs: next(answers))
    monkeypatch.setattr("spyt_queue.kafka.errors.time.sleep", lambda seconds: None)
    with pytest.raises(UnreachableError, match="no offsets for t:0") as raised:
        backend.bounds()
    assert is_transient_kafka_error(raised.value)


def test_offsets_known_again_give_the_bounds(monkeypatch) -> None:
    backend = KafkaBackend({"bootstrap.servers": "127.0.0.1:9"}, Subscription("subscribe", topics=("t",)), "g")
    answers = iter([{"t:0": 0}, {"t:0": -1001}, {"t:0": 0}, {"t:0": 7}])
    monkeypatch.setattr(backend, "partitions", lambda: ["t:0"])
    monkeypatch.setattr(backend, "_list_offsets", lambda specs: next(answers))
    monkeypatch.setattr("spyt_queue.kafka.errors.time.sleep", lambda seconds: None)
    bounds = backend.bounds()["t:0"]
    assert (bounds.lower, bounds.upper) == (0, 7)
