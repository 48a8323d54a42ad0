"""Queries moved from Spark's ``format("kafka")`` keep their Java-client ``kafka.*`` options: a stream reading with
``default.api.timeout.ms``, ``fetch.max.wait.ms``, ``receive.buffer.bytes`` and writing with ``max.request.size``,
``buffer.memory``, ``max.block.ms`` runs against the real broker (translated or ignored, see
:mod:`spyt_queue.kafka.java_options`), and one that would change the query is refused before it starts."""

from __future__ import annotations

import pytest

from tests.kafka.helpers import Topic, ids_in, run_to_files

pytestmark = pytest.mark.spark

READ = {
    "kafka.default.api.timeout.ms": "60000",
    "kafka.fetch.max.wait.ms": "100",
    "kafka.receive.buffer.bytes": "-1",
    "kafka.metrics.num.samples": "2",
}
WRITE = {"kafka.max.request.size": "2097152", "kafka.buffer.memory": "33554432", "kafka.max.block.ms": "60000"}


def test_java_client_options_of_a_moved_query_read_and_write(spark, kafka_bootstrap, checkpoint, tmp_path) -> None:
    source = Topic(kafka_bootstrap, checkpoint)
    target = Topic(kafka_bootstrap, checkpoint)
    ids = source.produce(12)
    df = source.stream(spark, startingOffsets="earliest", **READ)
    out = str(tmp_path / "out")
    run_to_files(df, checkpoint, out)
    assert ids_in(spark, out) == ids
    writer = spark.read.parquet(out).selectExpr("key", "value").write.format("ytqueue")
    writer = writer.option("kafka.bootstrap.servers", kafka_bootstrap).option("topic", target.name)
    for key, value in WRITE.items():
        writer = writer.option(key, value)
    writer.mode("append").save()
    assert sum(target.ends().values()) == 12


def test_a_java_option_that_would_change_the_query_is_refused(spark, kafka_bootstrap, checkpoint) -> None:
    topic = Topic(kafka_bootstrap, checkpoint)
    with pytest.raises(Exception, match=r"Invalid option 'kafka.ssl.truststore.location'.*kafka.ssl.ca.location"):
        topic.stream(spark, **{"kafka.ssl.truststore.location": "/etc/kafka/trust.jks"}).schema  # noqa: B018
