"""Kafka's Java-client option names, as Spark users pass them, for librdkafka: translated, ignored or refused."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import Consumer, Producer

from spyt_queue.errors import OptionError
from spyt_queue.kafka.java_options import JAVA_CLIENT_OPTIONS, translate_java_options

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3 cr\\"et";'


def test_java_names_become_librdkafka_settings_with_their_units() -> None:
    translated = translate_java_options(
        {
            "bootstrap.servers": "b:9092",
            "fetch.max.wait.ms": "250",
            "receive.buffer.bytes": "-1",
            "send.buffer.bytes": "131072",
            "max.request.size": "2097152",
            "buffer.memory": "33554433",
            "sasl.jaas.config": JAAS,
            "ssl.keystore.type": "PKCS12",
            "acks": "all",
        }
    )
    assert translated == {
        "bootstrap.servers": "b:9092",
        "fetch.wait.max.ms": "250",
        "socket.receive.buffer.bytes": "0",
        "socket.send.buffer.bytes": "131072",
        "message.max.bytes": "2097152",
        "queue.buffering.max.kbytes": "32769",
        "sasl.username": "alice",
        "sasl.password": 's3 cr\\"et',
        "acks": "all",
    }


def test_ignored_names_are_dropped_with_one_warning_each(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="spyt_queue.kafka"):
        for _ in range(2):
            assert translate_java_options({"metric.reporters": "x", "max.block.ms": "1", "acks": "1"}) == {"acks": "1"}
    warned = [r.getMessage() for r in caplog.records if "has no effect with librdkafka" in r.getMessage()]
    assert len(warned) == 2 and "kafka.metric.reporters" in warned[0]


@pytest.mark.parametrize(
    ("name", "value", "hint"),
    [
        ("ssl.truststore.location", "/etc/kafka/trust.jks", "kafka.ssl.ca.location"),
        ("transactional.id", "t-1", "Kafka transactions"),
        ("partitioner.class", "org.example.MyPartitioner", "murmur2"),
        ("sasl.login.callback.handler.class", "org.example.Handler", "Java class"),
        ("ssl.keystore.type", "JKS", "PKCS#12"),
        ("sasl.jaas.config", "com.sun.security.auth.module.Krb5LoginModule required;", "Kerberos"),
    ],
)
def test_names_that_would_change_the_query_are_refused_naming_the_option(name: str, value: str, hint: str) -> None:
    with pytest.raises(OptionError, match=rf"Invalid option 'deadLetter.kafka.{name}'.*{hint}"):
        translate_java_options({name: value}, prefix="deadLetter.kafka.")


def test_the_table_lists_only_names_librdkafka_refuses_and_its_targets_exist() -> None:
    """Each translated or ignored entry is there because librdkafka refuses the Java name (a refused one may also be
    there because librdkafka would take it with another meaning: ``transactional.id``), and each translation lands
    on a name librdkafka takes (this librdkafka, on loopback, without connecting)."""
    values = {"ssl.keystore.type": "PKCS12", "sasl.jaas.config": JAAS, "receive.buffer.bytes": "-1"}
    values["compression.gzip.level"] = "6"
    for name, option in JAVA_CLIENT_OPTIONS.items():
        if option.verdict != "refuse" or name != "transactional.id":
            with pytest.raises(Exception, match=r"No such configuration property|not supported|is mandatory"):
                Producer({"bootstrap.servers": "127.0.0.1:9", name: values.get(name, "1000")})
        if option.verdict == "translate":
            config = translate_java_options({name: values.get(name, "1000")})
            Producer({"bootstrap.servers": "127.0.0.1:9", **config})
            Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g", **config})


def test_the_kafka_page_lists_every_java_option_with_its_verdict() -> None:
    """``docs/kafka.md``'s table of Java-client options says what the table here does, name by name."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "kafka.md").read_text(encoding="utf-8")
    verdicts = {
        "translate": "translated",
        "adapter": "read by the adapter",
        "ignore": "ignored (one warning)",
        "refuse": "refused",
    }
    section = page.split("## Options of Kafka's Java client", 1)[1].split("\n## ", 1)[0]
    listed = {
        line.split("|")[1].strip().strip("`"): line.split("|")[2].strip()
        for line in section.splitlines()
        if line.startswith("| `kafka.") and line.count("|") == 4
    }
    assert listed == {f"kafka.{name}": verdicts[o.verdict] for name, o in JAVA_CLIENT_OPTIONS.items()}


def test_default_api_timeout_bounds_the_adapters_own_requests() -> None:
    """``kafka.default.api.timeout.ms`` is not librdkafka's: the adapter reads it as Spark's users mean it, the bound
    of each offset, metadata and group-commit request, and does not pass it on."""
    from spyt_queue.kafka.options import api_timeout_s, kafka_backend_from_options
    from spyt_queue.options import Options

    options = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "kafka.group.id": "g"}
    backend = kafka_backend_from_options(Options({**options, "kafka.default.api.timeout.ms": "2500"}))
    assert backend.request_timeout_s == 2.5 and "default.api.timeout.ms" not in backend.config
    assert api_timeout_s(Options(options)) == 30.0
    with pytest.raises(OptionError, match=r"Invalid option 'kafka.default.api.timeout.ms'.*positive"):
        api_timeout_s(Options({**options, "kafka.default.api.timeout.ms": "-1"}))
