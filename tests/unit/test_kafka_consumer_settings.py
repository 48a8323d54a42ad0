"""Settings of the consumers that read Kafka ranges on executors (no broker needed)."""

from __future__ import annotations

from spyt_queue.kafka.clients import consumer_config


def test_a_pooled_consumer_does_not_wait_out_a_long_poll_when_it_moves_to_the_next_partition() -> None:
    """A pooled consumer reads one partition per task; the fetch still in flight for the previous partition is held
    by the broker up to ``fetch.wait.max.ms`` before the next partition's fetch can go out. At 100 ms (the value
    before) that cost every task of a micro-batch about 100 ms: a fixed latency of the Kafka adapter."""
    settings = consumer_config({"bootstrap.servers": "127.0.0.1:9092"})

    assert settings["fetch.wait.max.ms"] <= 10


def test_the_users_fetch_wait_wins() -> None:
    settings = consumer_config({"bootstrap.servers": "127.0.0.1:9092", "fetch.wait.max.ms": 250})

    assert settings["fetch.wait.max.ms"] == 250
