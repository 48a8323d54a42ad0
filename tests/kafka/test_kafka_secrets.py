"""Kafka credentials (issue 31): an inline private key (``kafka.ssl.key.pem``, whose name and PEM text Spark's
redaction does not match) is refused before any plan prints it, on the source, the sink and the dead-letter
producer, with one line pointing to ``ssl.key.location`` + ``ssl.key.password``."""

from __future__ import annotations

import pytest

from tests.kafka.helpers import Topic
from tests.yt.user_errors import failure, first_line

pytestmark = pytest.mark.spark

#: The body of a realistic (throwaway) key: what must never be printed.
KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
PEM = f"-----BEGIN PRIVATE KEY-----\n{KEY_BODY}\nMZ2cCLAJMzOJxKAYx7o9p3eB\n-----END PRIVATE KEY-----\n"


@pytest.fixture
def topic(kafka_bootstrap, checkpoint) -> Topic:
    return Topic(kafka_bootstrap, checkpoint)


def test_inline_private_keys_are_refused_pointing_to_key_files(spark, topic) -> None:
    """``kafka.ssl.key.pem`` on the source and the sink and ``deadLetter.kafka.ssl.key.pem`` on a YT sink fail at
    ``load()`` / ``save()`` in one line naming the option and ``ssl.key.location``, without the key."""
    seen: dict[str, str] = {}
    reader = (
        spark.readStream.format("ytqueue")
        .option("kafka.bootstrap.servers", topic.bootstrap)
        .option("subscribe", topic.name)
        .option("kafka.ssl.key.pem", PEM)
    )
    error, _ = failure(reader.load)
    seen["source"] = str(error)
    rows = spark.createDataFrame([("v",)], "value string")
    writer = (
        rows.write.format("ytqueue")
        .mode("append")
        .option("kafka.bootstrap.servers", topic.bootstrap)
        .option("topic", topic.name)
        .option("kafka.ssl.key.pem", PEM)
    )
    error, _ = failure(writer.save)
    seen["sink"] = str(error)
    dead_letter = (
        rows.write.format("ytqueue")
        .mode("append")
        .option("kafka.bootstrap.servers", topic.bootstrap)
        .option("topic", topic.name)
        .option("deadLetter.topic", f"{topic.name}-dlq")
        .option("deadLetter.kafka.bootstrap.servers", topic.bootstrap)
        .option("deadLetter.kafka.ssl.key.pem", PEM)
    )
    error, _ = failure(dead_letter.save)
    seen["dead_letter"] = str(error)
    for where, prefix in (("source", "kafka."), ("sink", "kafka."), ("dead_letter", "deadLetter.kafka.")):
        line = first_line_of(seen[where])
        assert f"invalid option '{prefix.lower()}ssl.key.pem'" in line.lower(), line
        assert f"{prefix}ssl.key.location" in line and f"{prefix}ssl.key.password" in line, line
    for where, text in seen.items():
        assert KEY_BODY not in text and "BEGIN PRIVATE KEY" not in text, f"the key is printed in {where}:\n{text}"


def first_line_of(message: str) -> str:
    """The line of ``message`` holding spyt-queue's one-line error."""
    return next((line for line in message.splitlines() if "Invalid option" in line), first_line(message))
