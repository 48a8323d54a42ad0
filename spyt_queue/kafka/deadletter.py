"""Dead letters in a Kafka topic (``deadLetter.topic``): the payload as the record's value, the coordinates as its key
``source/partition/offset`` and the other fields as headers ``deadletter.<field>``."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic

from spyt_queue.deadletter import (
    ERROR_LIMIT,
    KAFKA_PREFIX,
    TOPIC_OPTION,
    DeadLetter,
    DeadLetterError,
    DeadLetterTarget,
)
from spyt_queue.errors import OptionError, SpytQueueError
from spyt_queue.kafka.clients import admin_client, connection_settings, pooled_consumer, pooled_producer
from spyt_queue.kafka.declarations import BOOTSTRAP_SERVERS
from spyt_queue.kafka.java_options import translate_java_options
from spyt_queue.options import Options
from spyt_queue.redaction import shown

log = logging.getLogger("spyt_queue.deadletter")


class KafkaDeadLetterTarget(DeadLetterTarget):
    """A Kafka topic, written by an idempotent producer and flushed (every record acknowledged) per write."""

    def __init__(self, config: Mapping[str, Any], topic: str, create: bool = False, timeout_s: float = 60.0) -> None:
        self.config = {"enable.idempotence": True, "acks": "all", **dict(config)}
        self.topic = topic
        self.create = create
        self.timeout_s = timeout_s

    def describe(self) -> str:
        return f"kafka:{self.topic}"

    def _admin_config(self) -> dict[str, Any]:
        """The producer's connection settings (brokers, TLS, SASL) for the start-up check and ``count()``."""
        return connection_settings(self.config)

    def check(self) -> None:
        admin = admin_client(self._admin_config())
        topics = admin.list_topics(timeout=self.timeout_s).topics
        found = topics.get(self.topic)
        if found is not None and found.error is None:
            return
        if not self.create:
            raise OptionError(
                TOPIC_OPTION,
                f"topic {self.topic!r} does not exist on {self.config['bootstrap.servers']}: create it or set "
                "deadLetter.create=true",
            )
        futures = admin.create_topics([NewTopic(self.topic, num_partitions=1)], request_timeout=self.timeout_s)
        try:
            futures[self.topic].result(timeout=self.timeout_s)
        except Exception as error:
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise
        log.info("created dead-letter topic %s", self.topic)

    def write(self, letters: Sequence[DeadLetter]) -> None:
        errors: list[str] = []

        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                errors.append(str(error))

        with pooled_producer(self.config) as producer:
            for letter in letters:
                headers = [
                    ("deadletter.source", letter.source.encode()),
                    ("deadletter.stage", letter.stage.encode()),
                    ("deadletter.partition", letter.partition.encode()),
                    ("deadletter.offset", str(letter.offset).encode()),
                    ("deadletter.error", letter.error[:ERROR_LIMIT].encode()),
                    ("deadletter.time_us", str(letter.time_us).encode()),
                ]
                key = f"{letter.source}/{letter.partition}/{letter.offset}".encode()
                while True:
                    try:
                        producer.produce(
                            self.topic, value=letter.payload, key=key, headers=headers, on_delivery=delivered
                        )
                        break
                    except BufferError:
                        producer.poll(0.1)
            remaining = producer.flush(self.timeout_s)
        if errors:
            raise DeadLetterError(f"{len(errors)} dead letter(s) failed delivery to {self.topic}, first: {errors[0]}")
        if remaining:
            raise DeadLetterError(
                f"{remaining} dead letter(s) were not acknowledged by {self.topic} within {self.timeout_s:g} s"
            )

    def count(self) -> dict[str, int]:
        with pooled_consumer(self._admin_config()) as consumer:
            metadata = consumer.list_topics(self.topic, timeout=self.timeout_s).topics.get(self.topic)
            if metadata is None or metadata.error is not None:
                raise SpytQueueError(f"dead-letter topic {self.topic!r} does not exist")
            result = {}
            for index in sorted(metadata.partitions):
                low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, index), timeout=self.timeout_s)
                result[f"{self.topic}:{index}"] = int(high) - int(low)
            return result


def target_from_options(options: Options, topic: str, create: bool) -> KafkaDeadLetterTarget:
    """``deadLetter.topic`` as a target, produced to with ``deadLetter.kafka.*``, whose ``bootstrap.servers`` defaults
    to the query's ``kafka.bootstrap.servers``."""
    if not topic.strip() or any(ch.isspace() for ch in topic):
        raise OptionError(TOPIC_OPTION, f"not a valid topic name: {shown(TOPIC_OPTION, topic)}")
    config = translate_java_options(options.with_prefix(KAFKA_PREFIX), KAFKA_PREFIX)
    if "bootstrap.servers" not in config:
        servers = options.get_str(BOOTSTRAP_SERVERS)
        if not servers:
            raise OptionError(
                KAFKA_PREFIX + "bootstrap.servers",
                "deadLetter.topic needs brokers: set deadLetter.kafka.bootstrap.servers (a Kafka query's "
                "kafka.bootstrap.servers is used when present)",
            )
        config["bootstrap.servers"] = servers
    return KafkaDeadLetterTarget(config, topic.strip(), create)
