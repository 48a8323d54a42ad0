"""Option values Spark would print with a secret inside are refused (issue 31, items 2 and 4): a URI with a password
in any option and inline private keys; ordinary URIs and secret-named options pass (Spark redacts those)."""

from __future__ import annotations

import pytest

from spyt_queue.errors import OptionError
from spyt_queue.options import check_shown_values

PEM = (
    "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI\n"
    "-----END ENCRYPTED PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("name", "value", "points_to"),
    [
        ("yt.proxy.http_proxy", "http://alice:Pq9zR4tw@corp:3128", "HTTPS_PROXY"),
        ("kafka.bootstrap.servers", "SASL_SSL://alice:Pq9zR4tw@b1:9093,b2:9093", "kafka.sasl.password"),
        ("checkpointLocation", "s3a://AKIAX:Pq9zR4tw@bucket/chk", "remove it"),
        ("kafka.ssl.key.pem", PEM, "kafka.ssl.key.location"),
        ("deadletter.kafka.ssl.key.pem", PEM, "deadLetter.kafka.ssl.key.password"),
        ("kafka.sasl.oauthbearer.config", f"key={PEM}", "kafka.ssl.key.location"),
    ],
)
def test_secrets_spark_would_print_are_refused(name: str, value: str, points_to: str) -> None:
    with pytest.raises(OptionError) as raised:
        check_shown_values({"proxy": "localhost:8000", name: value})
    message = str(raised.value)
    assert name in message and points_to in message, message
    assert "Pq9zR4tw" not in message and "MIIFHDBO" not in message, message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("checkpointLocation", "hdfs://namenode:8020/checkpoints/events"),
        ("offsets.store", "zookeeper://alice:pw@zk/spyt"),  # refused by check_uri, naming offsets.store.password
        ("yt.proxy.http_proxy", "http://corp:3128"),
        ("kafka.bootstrap.servers", "alice@b1:9092"),
        ("kafka.sasl.password", "http://x:y@z"),  # Spark redacts the option
        ("kafka.ssl.certificate.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"),
    ],
)
def test_ordinary_values_pass(name: str, value: str) -> None:
    check_shown_values({name: value})
