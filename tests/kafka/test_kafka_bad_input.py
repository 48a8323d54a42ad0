"""Common mistakes with Kafka get one clear line, fast: misspelt options, brokers that are not there (without
librdkafka's own log lines on the console). Each test checks the first line of the error the user sees and that it
came back within a bound (generous: never a tight timing)."""

from __future__ import annotations

from typing import Any

import pytest

from spyt_queue.errors import UnreachableError
from spyt_queue.kafka.clients import check_brokers_reachable, pooled_producer
from tests.kafka.helpers import Topic
from tests.yt.user_errors import SLACK_S, failure, first_line, free_port

pytestmark = pytest.mark.spark

DEFAULT_CONNECT_TIMEOUT_S = 20  # documented default of connect_timeout


@pytest.fixture
def topic(kafka_bootstrap, checkpoint) -> Topic:
    return Topic(kafka_bootstrap, checkpoint)


def kafka_read(spark: Any, bootstrap: str, stream: bool = False, **options: Any) -> Any:
    reader = (spark.readStream if stream else spark.read).format("ytqueue").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def clean(line: str) -> None:
    assert "Traceback" not in line and "UnboundLocalError" not in line, line


# -- misspelt options ------------------------------------------------------------------------------------------------


def test_misspelt_source_option_fails_at_load_suggesting_the_right_name(spark, topic) -> None:
    error, seconds = failure(
        lambda: kafka_read(spark, topic.bootstrap, stream=True, subscribe=topic.name, maxOffsetsPerTriger=10)
    )
    line = first_line(error)
    assert "Invalid option 'maxoffsetspertriger': not an option of the Kafka source; did you mean " in line
    assert "'maxOffsetsPerTrigger'?" in line
    clean(line)
    assert seconds < SLACK_S


def test_yt_option_or_path_on_a_kafka_source_says_what_to_use(spark, topic) -> None:
    error, _ = failure(lambda: kafka_read(spark, topic.bootstrap, subscribe=topic.name, consumer_path="//c"))
    assert "Invalid option 'consumer_path': not an option of the Kafka source: it is an option of YTsaurus" in (
        first_line(error)
    )
    reader = spark.read.format("ytqueue").option("kafka.bootstrap.servers", topic.bootstrap)
    error, _ = failure(lambda: reader.option("subscribe", topic.name).load("events"))
    assert "Invalid option 'path': not an option of the Kafka source: a Kafka source reads topics" in first_line(error)


def test_misspelt_sink_option_fails_before_producing(spark, topic) -> None:
    df = spark.createDataFrame([("v",)], "value string")
    writer = df.write.format("ytqueue").mode("append").option("kafka.bootstrap.servers", topic.bootstrap)
    writer = writer.option("topik", topic.name)
    error, seconds = failure(lambda: writer.save())
    line = first_line(error)
    assert "Invalid option 'topik': not an option of the Kafka sink; did you mean 'topic'?" in line
    clean(line)
    assert seconds < SLACK_S


def test_kafka_pass_through_and_spark_kafka_options_stay_open(spark, topic) -> None:
    """``kafka.*`` goes to librdkafka; Spark Kafka options without effect here are accepted so queries port."""
    topic.produce(4)
    df = kafka_read(
        spark,
        topic.bootstrap,
        subscribe=topic.name,
        **{"kafka.client.id": "bad-input-test", "fetchOffset.numRetries": 3, "STARTINGOFFSETS": "earliest"},
    )
    assert df.count() == 4


# -- brokers that are not there --------------------------------------------------------------------------------------


def test_unreachable_brokers_fail_at_load_within_connect_timeout_naming_them(spark) -> None:
    servers = f"localhost:{free_port()}"
    error, seconds = failure(lambda: kafka_read(spark, servers, stream=True, subscribe="events", connect_timeout=3))
    line = first_line(error)
    assert f"Kafka bootstrap servers {servers} did not answer within 3 s" in line
    assert "check the 'kafka.bootstrap.servers' option" in line
    clean(line)
    assert seconds < 3 + SLACK_S


def test_unreachable_brokers_default_timeout_is_bounded(spark) -> None:
    servers = f"localhost:{free_port()}"
    error, seconds = failure(lambda: kafka_read(spark, servers, subscribe="events").count())
    assert f"Kafka bootstrap servers {servers} did not answer within {DEFAULT_CONNECT_TIMEOUT_S} s" in first_line(error)
    assert seconds < DEFAULT_CONNECT_TIMEOUT_S + SLACK_S


def test_unreachable_brokers_on_the_sink_fail_within_connect_timeout(spark) -> None:
    servers = f"localhost:{free_port()}"
    df = spark.createDataFrame([("v",)], "value string")
    writer = df.write.format("ytqueue").mode("append").option("kafka.bootstrap.servers", servers).option("topic", "t")
    error, seconds = failure(lambda: writer.option("connect_timeout", 2).save())
    line = first_line(error)
    assert f"Kafka bootstrap servers {servers} did not answer within 2 s" in line
    clean(line)
    assert seconds < 2 + SLACK_S


def test_librdkafka_log_lines_stay_off_the_console(capfd) -> None:
    """The clients spyt-queue makes (the reachability check, pooled producers) route librdkafka's lines to a
    Python logger at DEBUG level: nothing reaches stderr while a broker is down. (Spark's Python workers share
    this configuration; their stderr is the JVM's, which a test can not capture.)"""
    servers = f"localhost:{free_port()}"
    with pytest.raises(UnreachableError):
        check_brokers_reachable({"bootstrap.servers": servers}, timeout_s=2)
    with pytest.raises(RuntimeError, match="not delivered"):
        with pooled_producer({"bootstrap.servers": servers, "message.timeout.ms": 2000}) as producer:
            producer.produce("t", b"v")
            producer.flush(3)
            raise RuntimeError("not delivered")  # evicts the producer from the pool
    err = capfd.readouterr().err
    # Only this test's clients are checked: clients of earlier tests (test helpers' own, which log to stderr by
    # librdkafka's default) may still be reconnecting to servers those tests stopped.
    ours = [line for line in err.splitlines() if servers in line or f":{servers.rpartition(':')[2]}/" in line]
    assert ours == [], "\n".join(ours)[:500]
