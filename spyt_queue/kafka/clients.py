"""Per-process pools of Kafka clients: Python workers are reused across tasks, so executors keep consumers
(keyed by configuration) instead of connecting for every range, like Spark's ``KafkaDataConsumer`` pool."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

_ADMINS: dict[str, AdminClient] = {}
_IDLE_CONSUMERS: dict[str, list[Consumer]] = {}
_LOCK = threading.Lock()


def _key(config: Mapping[str, Any]) -> str:
    return repr(sorted((k, str(v)) for k, v in config.items()))


def admin_client(config: Mapping[str, Any]) -> AdminClient:
    """One admin client per process and configuration."""
    key = _key(config)
    with _LOCK:
        admin = _ADMINS.get(key)
        if admin is None:
            admin = AdminClient(dict(config))
            _ADMINS[key] = admin
        return admin


def consumer_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Settings of a reading consumer: assigned partitions only, no auto-commit, EOF events, reset = error."""
    settings = {
        # Larger fetches than librdkafka's 1 MB per partition: an executor reads one partition at a time.
        "max.partition.fetch.bytes": 8 * 1024 * 1024,
        "fetch.wait.max.ms": 100,
        **config,
    }
    settings.pop("group.id", None)
    settings.update(
        {
            # A private group id: librdkafka needs one, and reading must never touch the committing group.
            "group.id": f"spyt-queue-reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
        }
    )
    return settings


@contextmanager
def pooled_consumer(config: Mapping[str, Any]) -> Iterator[Consumer]:
    """Borrow a consumer for ``config`` from this process's pool, returning it (unassigned) afterwards."""
    key = _key(config)
    with _LOCK:
        idle = _IDLE_CONSUMERS.setdefault(key, [])
        consumer = idle.pop() if idle else None
    if consumer is None:
        consumer = Consumer(consumer_config(config))
    healthy = False
    try:
        yield consumer
        healthy = True
    finally:
        try:
            consumer.unassign()
        except Exception:
            healthy = False
        if healthy:
            with _LOCK:
                _IDLE_CONSUMERS.setdefault(key, []).append(consumer)
        else:
            consumer.close()


def close_all() -> None:
    """Close every pooled consumer and drop the admin clients of this process (e.g. before a broker goes away)."""
    with _LOCK:
        consumers = [c for idle in _IDLE_CONSUMERS.values() for c in idle]
        _IDLE_CONSUMERS.clear()
        _ADMINS.clear()
    for consumer in consumers:
        consumer.close()
