"""How Kafka errors are told apart (transient, unknown partition) and how admin calls are waited for and retried.

Shared by the Kafka backend, the consumer-group store and the sink; depends on ``confluent_kafka`` only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

from spyt_queue.errors import SpytQueueError, UnreachableError

log = logging.getLogger("spyt_queue.kafka")
T = TypeVar("T")

TRANSIENT_KAFKA_CODES = {
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.NETWORK_EXCEPTION,
}
UNKNOWN_PARTITION_CODES = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}


def admin_result(future: Any, what: str, timeout: float) -> Any:
    """The result of an admin client's ``future``: a ``KafkaException`` as raised, no answer within ``timeout``
    seconds as :class:`UnreachableError` (transient), anything else as :class:`SpytQueueError` naming ``what``."""
    try:
        return future.result(timeout=timeout)
    except KafkaException:
        raise
    except TimeoutError as error:  # transient: the broker may be restarting (is_transient_kafka_error)
        raise UnreachableError(f"Kafka {what}: no answer within {timeout:g} s; is the broker up?") from error
    except Exception as error:
        raise SpytQueueError(f"Kafka {what} failed: {error}") from error


def is_transient_kafka_error(error: BaseException) -> bool:
    """Whether a Kafka call that failed with ``error`` may succeed when retried."""
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        return is_transient_code(error.args[0])
    return isinstance(error, (TimeoutError, ConnectionError, UnreachableError))


#: librdkafka's answer to an offsets request while it has no leader for the partitions (a broker restarting or cut
#: off): ``_NOENT`` with this text, within milliseconds. It passes once the leaders are known again.
NO_LEADERS = "No leaders found"


def is_transient_code(error: KafkaError) -> bool:
    """Whether a librdkafka error (a call's or a consumer's error event) passes by itself: a broker restarting,
    a leader moving, a request timing out, no leader known yet. librdkafka reconnects on its own; the caller only
    has to wait."""
    if error.code() == KafkaError._NOENT and NO_LEADERS in str(error.str()):
        return True
    return bool(error.retriable()) or error.code() in TRANSIENT_KAFKA_CODES


def is_unknown_partition_error(error: BaseException) -> bool:
    """Whether ``error`` says a topic or partition is unknown (to the broker or to the client's metadata)."""
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        return error.args[0].code() in UNKNOWN_PARTITION_CODES
    return False


def with_retries(
    call: Callable[[], T],
    what: str,
    attempts: int = 6,
    delay: float = 0.2,
    also_retry: Callable[[BaseException], bool] | None = None,
) -> T:
    """Run an admin ``call``, retrying transient errors (coordinator loading, leader moves) with backoff; errors for
    which ``also_retry`` is true are retried as well."""
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as error:
            retry = is_transient_kafka_error(error) or (also_retry is not None and also_retry(error))
            if attempt == attempts or not retry:
                raise
            log.info("%s failed transiently (%s); retry %d", what, error, attempt)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
    raise AssertionError("unreachable")
