"""Per-process pools of Kafka clients: Python workers are reused across tasks, so executors keep consumers and
producers (keyed by configuration) instead of connecting for every task, like Spark's ``KafkaDataConsumer`` and
``CachedKafkaProducer`` pools."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from spyt_queue.errors import OptionError, UnreachableError
from spyt_queue.kafka.declarations import BOOTSTRAP_SERVERS
from spyt_queue.options import DEFAULT_CONNECT_TIMEOUT_S
from spyt_queue.redaction import shown

log = logging.getLogger("spyt_queue.kafka")
#: librdkafka's own log lines (thousands of "Connect to ... failed" while a broker is down) go here at DEBUG level,
#: instead of the console; ``kafka.log_level`` or ``kafka.debug`` give them back to librdkafka's stderr output.
librdkafka_log = logging.getLogger("spyt_queue.kafka.librdkafka")

_ADMINS: dict[str, AdminClient] = {}
_IDLE_CONSUMERS: dict[str, list[Consumer]] = {}
_PRODUCERS: dict[str, Producer] = {}
_POISONED: set[int] = set()  # ids of pooled producers that reported a fatal error
_LOCK = threading.Lock()

#: librdkafka's ``fetch.wait.max.ms`` for reading consumers (``kafka.fetch.wait.max.ms`` overrides it).
FETCH_WAIT_MAX_MS = 10

READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"


_REACHED: set[str] = set()  # connection settings (brokers, security) this process already reached


def _key(config: Mapping[str, Any]) -> str:
    return repr(sorted((k, str(v)) for k, v in config.items()))


class _DebugLog:
    """A ``logger`` for confluent-kafka that files every librdkafka line at DEBUG level."""

    def log(self, level: int, message: str, *args: Any) -> None:
        librdkafka_log.debug(message, *args)


def quiet(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with librdkafka's log lines routed to :data:`librdkafka_log` (DEBUG), unless the user asked for
    them with ``kafka.log_level`` or ``kafka.debug``."""
    settings = dict(config)
    if "logger" not in settings and "log_level" not in settings and "debug" not in settings:
        settings["logger"] = _DebugLog()
    return settings


#: librdkafka settings of the connection itself (brokers, TLS, SASL, client identity, sockets): what an admin client
#: or a metadata consumer made from a producer's or consumer's configuration must keep, or on a secured broker it
#: could only time out.
CONNECTION_PREFIXES = (
    "bootstrap.servers",
    "metadata.broker.list",
    "security.protocol",
    "sasl.",
    "ssl.",
    "ssl_",
    "enable.ssl.",
    "oauth_cb",
    "client.id",
    "client.dns.lookup",
    "client.rack",
    "socket.",
    "broker.",
    "api.version",
    "reconnect.",
    "connections.max.idle.ms",
    "metadata.",
    "topic.metadata.",
    "log_level",
    "debug",
)


def connection_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of ``config`` that say how to reach and authenticate to the brokers (:data:`CONNECTION_PREFIXES`),
    without a producer's or consumer's own (``acks``, ``enable.idempotence``, ``group.id``)."""
    return {key: value for key, value in config.items() if key.startswith(CONNECTION_PREFIXES)}


def admin_client(config: Mapping[str, Any]) -> AdminClient:
    """One admin client per process and configuration."""
    key = _key(config)
    with _LOCK:
        admin = _ADMINS.get(key)
        if admin is None:
            admin = AdminClient(quiet(config))
            _ADMINS[key] = admin
        return admin


def discard_admin_client(config: Mapping[str, Any], admin: AdminClient) -> None:
    """Drop ``admin`` from the pool, so the next :func:`admin_client` call makes a new one.

    Called after a request of ``admin`` failed for a transient reason: once an ``alter_consumer_group_offsets``
    request has timed out (the broker was down), librdkafka 2.16 never answers that client's later ones, even with
    the broker back, while a new client is answered at once.
    """
    key = _key(config)
    with _LOCK:
        if _ADMINS.get(key) is admin:
            del _ADMINS[key]


def check_brokers_reachable(
    config: Mapping[str, Any], timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S, option: str = BOOTSTRAP_SERVERS
) -> None:
    """Fail within about ``timeout_s`` seconds, naming the bootstrap servers, unless a broker answers a metadata
    request. librdkafka keeps reconnecting on its own; this bounds the wait and says which endpoint it was.
    Servers reached once are not checked again in this process."""
    servers = str(config.get("bootstrap.servers", ""))
    reached = _key(connection_settings(config))  # the same brokers over TLS or SASL are another check
    if reached in _REACHED:
        return
    settings = quiet(config)
    settings.setdefault("socket.connection.setup.timeout.ms", int(max(1.0, min(timeout_s, 30.0)) * 1000))
    admin = AdminClient(settings)
    started = time.monotonic()
    try:
        admin.list_topics(timeout=timeout_s)
    except KafkaException as error:
        inner = error.args[0] if error.args else error
        reason = inner.str() if isinstance(inner, KafkaError) else str(inner)
        waited = time.monotonic() - started
        raise UnreachableError(
            f"Kafka bootstrap servers {servers} did not answer within {waited:.0f} s ({reason}): check the "
            f"'{option}' option; connect_timeout sets the wait"
        ) from None
    finally:
        del admin  # its threads stop; librdkafka's queued log lines go with it
    with _LOCK:
        _REACHED.add(reached)


def isolation_level(config: Mapping[str, Any]) -> str:
    """``kafka.isolation.level``: ``read_uncommitted`` (the default of Spark's Kafka source and of the Java
    client) or ``read_committed``. Bounds (``list_offsets``) and reads always use this one level."""
    level = str(config.get("isolation.level") or READ_UNCOMMITTED).strip().lower()
    if level not in (READ_UNCOMMITTED, READ_COMMITTED):
        raise OptionError(
            "kafka.isolation.level",
            f"must be read_uncommitted or read_committed, got {shown('kafka.isolation.level', level)}",
        )
    return level


def consumer_config(config: Mapping[str, Any], group_id: str | None = None) -> dict[str, Any]:
    """Settings of a reading consumer: assigned partitions only, no auto-commit, EOF events, reset = error, and
    the query's isolation level (librdkafka would default to read_committed, unlike the bounds and Spark).

    ``group_id`` names the group whose committed offsets the consumer looks up; it never subscribes, so it never
    joins that group. Without it the consumer gets a private group id."""
    settings = {
        # Larger fetches than librdkafka's 1 MB per partition: an executor reads one partition at a time.
        "max.partition.fetch.bytes": 8 * 1024 * 1024,
        # A bounded read never waits for new records, but a pooled consumer moving to the next task's partition
        # waits out the fetch still in flight for the last one (one outstanding fetch per broker): the broker holds
        # it up to this long when that partition has nothing new. 100 ms cost every task of a micro-batch ~100 ms.
        "fetch.wait.max.ms": FETCH_WAIT_MAX_MS,
        **config,
    }
    settings.pop("group.id", None)
    settings.update(
        {
            "isolation.level": isolation_level(config),
            # A private group id: librdkafka needs one, and reading must never touch the committing group.
            "group.id": group_id or f"spyt-queue-reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
        }
    )
    return settings


@contextmanager
def pooled_consumer(config: Mapping[str, Any], group_id: str | None = None) -> Iterator[Consumer]:
    """Borrow a consumer for ``config`` (and ``group_id``, see :func:`consumer_config`) from this process's pool,
    returning it (unassigned) afterwards."""
    key = _key({**config, "group.id": group_id or ""})
    with _LOCK:
        idle = _IDLE_CONSUMERS.setdefault(key, [])
        consumer = idle.pop() if idle else None
    if consumer is None:
        consumer = Consumer(quiet(consumer_config(config, group_id)))
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


def _on_producer_error(producer_id: list[int]) -> Any:
    """An ``error_cb`` marking the producer as poisoned when librdkafka reports a fatal error."""

    def on_error(error: KafkaError) -> None:
        if error.fatal() and producer_id:
            with _LOCK:
                _POISONED.add(producer_id[0])
        log.warning("Kafka producer error: %s", error)

    return on_error


@contextmanager
def pooled_producer(config: Mapping[str, Any]) -> Iterator[Producer]:
    """Use this process's producer for ``config``; it stays pooled for the next task only if the block ends
    without an exception and librdkafka reported no fatal error. Otherwise it is evicted and closed (a fatal
    error, e.g. a broken idempotence guarantee, makes a producer refuse every later record)."""
    key = _key(config)
    with _LOCK:
        producer = _PRODUCERS.get(key)
        if producer is not None and id(producer) in _POISONED:
            _PRODUCERS.pop(key)
            stale: Producer | None = producer
            producer = None
        else:
            stale = None
    if stale is not None:
        _discard_producer(stale)
    if producer is None:
        holder: list[int] = []
        producer = Producer(quiet({**config, "error_cb": _on_producer_error(holder)}))
        holder.append(id(producer))
        with _LOCK:
            _PRODUCERS[key] = producer
    try:
        yield producer
    except BaseException:
        with _LOCK:
            if _PRODUCERS.get(key) is producer:
                _PRODUCERS.pop(key)
        _discard_producer(producer)
        raise


def _discard_producer(producer: Producer) -> None:
    """Drop what a broken producer still holds and close it (never raises)."""
    with _LOCK:
        _POISONED.discard(id(producer))
    try:
        producer.purge()
        producer.close(timeout=5)
    except Exception as error:  # a fatal or closed producer may refuse even this
        log.debug("closing a discarded Kafka producer failed: %s", error)


def close_all() -> None:
    """Close every pooled consumer and producer and drop the admin clients of this process (e.g. before a
    broker goes away). Producers are flushed first (for up to 10 s)."""
    with _LOCK:
        consumers = [c for idle in _IDLE_CONSUMERS.values() for c in idle]
        producers = list(_PRODUCERS.values())
        _IDLE_CONSUMERS.clear()
        _PRODUCERS.clear()
        _POISONED.clear()
        _ADMINS.clear()
    for consumer in consumers:
        consumer.close()
    for producer in producers:
        try:
            producer.flush(10)
            producer.close(timeout=5)
        except Exception as error:
            log.warning("closing a Kafka producer failed: %s", error)
