"""Options of the Kafka adapter, with Spark's Kafka source names and rules wherever they apply."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

from spyt_queue.errors import OptionError
from spyt_queue.kafka.declarations import BOOTSTRAP_SERVERS, KAFKA_PREFIX
from spyt_queue.kafka.java_options import translate_java_options
from spyt_queue.kafka.subscription import Subscription
from spyt_queue.options import CONNECT_TIMEOUT, READ, WRITE, Option, Options, connect_timeout
from spyt_queue.settings import STORE_KINDS, ReaderSettings

if TYPE_CHECKING:
    from spyt_queue.kafka.backend import KafkaBackend

# Spark's KafkaSourceProvider rejects these kafka.* keys: the adapter manages them itself.
FORBIDDEN_KAFKA_KEYS = {
    "auto.offset.reset": "use startingOffsets instead",
    "key.deserializer": "keys are always read as bytes; cast or deserialize in a DataFrame operation",
    "value.deserializer": "values are always read as bytes; cast or deserialize in a DataFrame operation",
    "key.serializer": "keys are always written as bytes or strings from the 'key' column",
    "value.serializer": "values are always written as bytes or strings from the 'value' column",
    "enable.auto.commit": "offsets are committed to the group by the adapter after each batch's sink commit",
    "interceptor.classes": "not supported by the Python client",
}

SUBSCRIBE = Option("subscribe", "comma-separated list of topics to read")
SUBSCRIBE_PATTERN = Option("subscribePattern", "regular expression of topics to read")
ASSIGN = Option("assign", 'JSON of topic partitions to read: {"t": [0, 1]}', kind="json")
SUBSCRIPTION_OPTIONS = (SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN)
#: The Java client's bound on blocking calls, which the adapter applies to its own requests (:func:`api_timeout_s`).
DEFAULT_API_TIMEOUT = KAFKA_PREFIX + "default.api.timeout.ms"
DEFAULT_API_TIMEOUT_MS = 30_000
KAFKA_CONFIG = Option(
    KAFKA_PREFIX,
    "passed to librdkafka (kafka.bootstrap.servers, kafka.group.id, ...)",
    kind="prefix",
    modes=(*READ, WRITE),
)
GROUP_ID_PREFIX = Option(
    "groupIdPrefix", "prefix of the generated group id when kafka.group.id is not set", default="spark-kafka-source"
)
INCLUDE_HEADERS = Option("includeHeaders", "add a headers column", kind="bool", default=False)
INCLUDE_TIMESTAMP = Option(
    "includeTimestamp", "false leaves out the timestamp and timestampType columns", kind="bool", default=True
)
POLL_TIMEOUT_MS = Option(
    "kafkaConsumer.pollTimeoutMs", "how long an executor waits for records it knows exist", kind="int", default=120_000
)
#: Options :func:`kafka_backend_from_options` reads; reader settings and offset stores add theirs
#: (spyt_queue.connect).
KAFKA_SOURCE_OPTIONS = (
    *SUBSCRIPTION_OPTIONS,
    KAFKA_CONFIG,
    GROUP_ID_PREFIX,
    INCLUDE_HEADERS,
    INCLUDE_TIMESTAMP,
    POLL_TIMEOUT_MS,
    CONNECT_TIMEOUT,
)


def parse_subscription(options: Options) -> Subscription:
    """Exactly one of ``subscribe``, ``subscribePattern``, ``assign``."""
    given = [option.name for option in SUBSCRIPTION_OPTIONS if option.name in options]
    if len(given) != 1:
        raise OptionError(
            "subscribe",
            f"exactly one of subscribe, subscribePattern, assign must be set, got {given or 'none'}",
        )
    kind = given[0]
    value = options.get_str(kind) or ""
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError("subscribe", "give a comma-separated list of topics")
        return Subscription(kind, topics=topics)
    if kind == "subscribePattern":
        try:
            re.compile(value)
        except re.error as error:
            raise OptionError("subscribePattern", f"not a valid regular expression: {error}") from None
        return Subscription(kind, pattern=value)
    data = options.value(ASSIGN)
    if not isinstance(data, dict) or not data:
        raise OptionError("assign", 'expected JSON like {"topicA": [0, 1], "topicB": [2]}')
    assigned: dict[str, tuple[int, ...]] = {}
    for topic, parts in data.items():
        if not isinstance(parts, list) or not all(isinstance(p, int) and p >= 0 for p in parts):
            raise OptionError("assign", f"partitions of topic {topic!r} must be a list of integers >= 0")
        assigned[str(topic)] = tuple(sorted(parts))
    return Subscription("assign", assigned=assigned)


def kafka_config(options: Options) -> dict[str, Any]:
    """The ``kafka.*`` options without their prefix, refusing the keys the adapter manages, with the Java client's
    option names librdkafka does not know translated, ignored or refused (:mod:`spyt_queue.kafka.java_options`)."""
    config = options.with_prefix(KAFKA_PREFIX)
    if "bootstrap.servers" not in config:
        raise OptionError(BOOTSTRAP_SERVERS, "required: the brokers to connect to, e.g. localhost:9092")
    for key, why in FORBIDDEN_KAFKA_KEYS.items():
        if key in config:
            raise OptionError(f"kafka.{key}", f"is not supported: {why}")
    return translate_java_options(config)


def default_group_id(options: Options, subscription: Subscription) -> str:
    """``kafka.group.id`` if given, else ``<groupIdPrefix>-<hash of the subscription>``: the base of the group of
    each query naming none (:func:`spyt_queue.stores.per_query.query_group` adds the query's writer token)."""
    given = options.get_str("kafka.group.id")
    if given:
        return given
    prefix = options.value(GROUP_ID_PREFIX)
    digest = hashlib.sha1(subscription.describe().encode()).hexdigest()[:12]
    return f"{prefix}-{digest}"


def flat_positions(option: str, data: Any, allow_special: bool = True) -> dict[str, int]:
    """Spark's nested ``{"topic": {"0": 23, "1": -2}}`` as flat ``{"topic:0": 23, "topic:1": -2}``."""
    if not isinstance(data, dict) or not data:
        raise OptionError(option, 'expected JSON like {"topicA": {"0": 23, "1": -1}}')
    result: dict[str, int] = {}
    minimum = -2 if allow_special else 0
    for topic, parts in data.items():
        if not isinstance(parts, dict):
            raise OptionError(option, f"value of topic {topic!r} must be an object of partition -> offset")
        for part, offset in parts.items():
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < minimum:
                raise OptionError(option, f"offset of {topic}/{part} must be an integer >= {minimum}, got {offset!r}")
            try:
                result[f"{topic}:{int(part)}"] = offset
            except ValueError:
                raise OptionError(option, f"partition {part!r} of topic {topic!r} is not a number") from None
    return result


def kafka_backend_from_options(options: Options) -> KafkaBackend:
    """Build the Kafka backend from Spark-Kafka-style options, validating them all up front."""
    # lazy: confluent_kafka (~0.3 s) loads only in processes that read Kafka; this module's option names are read
    # by every source (spyt_queue.connect)
    from spyt_queue.kafka.backend import KafkaBackend

    subscription = parse_subscription(options)
    config = kafka_config(options)
    connect_timeout(options)  # validated here, used when the query connects (spyt_queue.connect)
    return KafkaBackend(
        config=config,
        subscription=subscription,
        group_id=default_group_id(options, subscription),
        per_query_group=not options.get_str("kafka.group.id"),
        include_headers=options.value(INCLUDE_HEADERS),
        include_timestamp=options.value(INCLUDE_TIMESTAMP),
        poll_timeout_ms=options.value(POLL_TIMEOUT_MS),
        request_timeout_s=api_timeout_s(options),
    )


def api_timeout_s(options: Options) -> float:
    """``kafka.default.api.timeout.ms`` (the Java consumer's bound on blocking calls, as Spark's users set it) in
    seconds: how long each offset, metadata and group-commit request of the adapter may wait (30 s by default)."""
    value = options.get_str(DEFAULT_API_TIMEOUT)
    if value is None:
        return DEFAULT_API_TIMEOUT_MS / 1000
    try:
        millis = int(value)
    except ValueError:
        millis = -1
    if millis <= 0:
        raise OptionError(DEFAULT_API_TIMEOUT, f"expected a positive number of milliseconds, got {value!r}")
    return millis / 1000


def kafka_reader_settings(options: Options, streaming: bool | None) -> ReaderSettings:
    """Reader settings with Kafka's names: ``startingOffsets`` latest by default (``group`` resumes from the
    consumer group), nested JSON offsets, and the ``startingTimestamp`` family. ``streaming=None``: ``load()``,
    checking only what is invalid in both modes."""
    settings = ReaderSettings.parse(
        options,
        starting_default="earliest" if streaming is False else "latest",
        streaming=streaming,
        named=("group", "store", "earliest", "latest"),
        parser=flat_positions,
        timestamps=lambda option, data: flat_positions(option, data, allow_special=False),
    )
    if settings.starting.kind in STORE_KINDS and not (
        options.get_str("kafka.group.id") or options.get_str("offsets.group")
    ):
        raise OptionError(
            settings.starting.option,
            f"{settings.starting.kind} resumes from the offsets of a group the query names: set kafka.group.id (a "
            "query without one commits under a group of its own, which no other query shares)",
        )
    return settings
