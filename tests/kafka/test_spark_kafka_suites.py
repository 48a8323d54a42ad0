"""Spark's own Kafka connector suites (``external/kafka-0-10-sql/src/test/scala/org/apache/spark/sql/kafka010/``),
ported test by test where PySpark can express them without Spark's manual clock, and run against both sources in
one session: Spark's JVM source (``format("kafka")``, the oracle, from the jars ``integration/install.sh`` puts in
``integration/target/spark-kafka-libs``) and ``format("ytqueue")``. A test that differs on purpose is listed in
``docs/kafka.md`` (Spark's Kafka suites, ported) with its reason, and asserts each source's own behaviour.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pyspark
import pytest

from integration.kafka_broker import spark_kafka_jars, spark_kafka_line
from tests.kafka.helpers import Topic

pytestmark = pytest.mark.spark

SOURCES = ["kafka", "ytqueue"]


@pytest.fixture(autouse=True)
def _oracle_present(request: pytest.FixtureRequest) -> None:
    """Spark's source is the oracle: a missing jar is a failure, as a missing server is (CONTRIBUTING); jars built
    for a newer Spark line than this PySpark's (4.2's on 4.0/4.1: ``integration/pom.xml``) are not loaded, and the
    oracle's cases skip there."""
    if request.node.callspec.params.get("source") != "kafka":
        return
    if not spark_kafka_jars():
        pytest.fail("Spark's Kafka source jars are missing: run integration/install.sh")
    if not spark_kafka_jars(for_spark=pyspark.__version__):
        line = ".".join(map(str, spark_kafka_line() or ()))
        pytest.skip(f"Spark's Kafka source jars are built for Spark {line}, newer than PySpark {pyspark.__version__}")


def stream(spark: Any, source: str, topic: Topic, **options: Any) -> Any:
    """``spark.readStream.format(source)`` over ``topic`` with Spark-Kafka options."""
    reader = spark.readStream.format(source).option("kafka.bootstrap.servers", topic.bootstrap)
    reader = reader.option("subscribe", topic.name)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def batch(spark: Any, source: str, topic: Topic, **options: Any) -> Any:
    """``spark.read.format(source)`` over ``topic`` with Spark-Kafka options."""
    reader = spark.read.format(source).option("kafka.bootstrap.servers", topic.bootstrap)
    reader = reader.option("subscribe", topic.name)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


class Collect:
    """A ``foreachBatch`` sink keeping every batch's values (as strings) in the driver."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = df.selectExpr("cast(value as string) as v").collect()
        if rows:
            self.batches.append(sorted(r.v for r in rows))

    @property
    def values(self) -> list[str]:
        return sorted(v for b in self.batches for v in b)


def start(df: Any, checkpoint: str, sink: Collect, **trigger: Any) -> Any:
    writer = df.writeStream.foreachBatch(sink).option("checkpointLocation", checkpoint)
    return writer.trigger(**(trigger or {"processingTime": "300 milliseconds"})).start()


def wait_until(condition: Any, timeout: float = 90, query: Any = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if query is not None and query.exception() is not None:
            raise AssertionError(f"the query failed: {query.exception()}")
        time.sleep(0.3)
    return condition()


# -- KafkaMicroBatchSourceSuite ----------------------------------------------------------------------------------


@pytest.mark.parametrize("source", SOURCES)
def test_min_offsets_per_trigger_never_delays_the_first_batch_of_a_run(spark, kafka_bootstrap, checkpoint, source):
    """``minOffsetsPerTrigger``: Spark's last-trigger time starts at 0, so the first trigger of a start or restart
    reads what waits at once; later triggers wait for the minimum or ``maxTriggerDelay`` (here an hour)."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    topic.send(["1", "2", "3"])
    options = {"startingOffsets": "earliest", "minOffsetsPerTrigger": 100, "maxTriggerDelay": "1h"}
    sink = Collect()
    query = start(stream(spark, source, topic, **options), checkpoint, sink)
    try:
        assert wait_until(lambda: sink.values == ["1", "2", "3"], query=query), sink.batches
        topic.send(["4", "5"])
        time.sleep(4)
        assert sink.values == ["1", "2", "3"], "2 records < minOffsetsPerTrigger: later triggers wait"
    finally:
        query.stop()
    query = start(stream(spark, source, topic, **options), checkpoint, sink)
    try:
        assert wait_until(lambda: sink.values == ["1", "2", "3", "4", "5"], query=query), sink.batches
    finally:
        query.stop()


@pytest.mark.parametrize("source", SOURCES)
def test_two_queries_without_a_group_do_not_interfere(spark, kafka_bootstrap, tmp_path, source):
    """Two queries on one topic, each with its own checkpoint and no ``kafka.group.id``, read every record each and
    never stop each other (Spark's source draws a group per query; ytqueue's default group is the query's own)."""
    topic = Topic(kafka_bootstrap, str(tmp_path / "unused"))
    topic.send([str(i) for i in range(6)])
    sinks = [Collect(), Collect()]
    queries = [
        start(stream(spark, source, topic, startingOffsets="earliest"), str(tmp_path / f"cp{i}"), sink)
        for i, sink in enumerate(sinks)
    ]
    try:
        for query, sink in zip(queries, sinks, strict=True):
            assert wait_until(lambda sink=sink: len(sink.values) == 6, query=query), sink.batches
        for more in (["6", "7"], ["8", "9"]):  # later batches commit the earlier ones
            topic.send(more)
            for query, sink in zip(queries, sinks, strict=True):
                assert wait_until(lambda sink=sink, more=more: more[-1] in sink.values, query=query), sink.batches
        time.sleep(2)
        assert [q.exception() for q in queries] == [None, None]
    finally:
        for query in queries:
            query.stop()
    assert [sink.values for sink in sinks] == [sorted(str(i) for i in range(10))] * 2


@pytest.mark.parametrize("source", SOURCES)
def test_offsets_behind_latest_and_offsets_as_spark_shows_them(spark, kafka_bootstrap, checkpoint, source):
    """Spark's progress has ``sources[].metrics`` ``{min,max,avg}OffsetsBehindLatest`` and offsets as
    ``{"topic": {"0": 5}}``. A Python source can not fill ``metrics`` (PySpark 4.0 to 4.3): for ytqueue the same
    numbers come from ``spyt_queue.lag.offsets_behind_latest(progress)`` and the same offsets from ``spark_offsets``."""
    from spyt_queue.lag import offsets_behind_latest, spark_offsets

    topic = Topic(kafka_bootstrap, checkpoint, partitions=2)
    topic.send([str(i) for i in range(20)])  # 10 records per partition
    sink = Collect()
    df = stream(spark, source, topic, startingOffsets="earliest", maxOffsetsPerTrigger=4)
    query = start(df, checkpoint, sink, processingTime="1 hour")  # one batch, then an hour's wait
    try:
        assert wait_until(lambda: query.lastProgress is not None and query.lastProgress["numInputRows"], query=query)
        progress = query.lastProgress
    finally:
        query.stop()
    source_progress = progress["sources"][0]
    metrics = source_progress["metrics"] if source == "kafka" else offsets_behind_latest(progress)
    assert {k: float(v) for k, v in metrics.items()} == {
        "minOffsetsBehindLatest": 8.0,
        "maxOffsetsBehindLatest": 8.0,
        "avgOffsetsBehindLatest": 8.0,
    }
    end = json.loads(source_progress["endOffset"])
    assert (end if source == "kafka" else spark_offsets(end)) == {topic.name: {"0": 2, "1": 2}}
    if source == "ytqueue":
        assert source_progress["metrics"] == {}, "if PySpark starts passing a Python source's metrics, report them"


class RecreateOnce(Collect):
    """Collects values; in the first batch, deletes ``topic`` and creates it again with ``values`` only."""

    def __init__(self, topic: Topic, values: list[str]) -> None:
        super().__init__()
        self.topic, self.recreate = topic, values

    def __call__(self, df: Any, batch_id: int) -> None:
        super().__call__(df, batch_id)
        if self.recreate:
            values, self.recreate = self.recreate, []
            self.topic.delete()
            Topic(self.topic.bootstrap, self.topic.checkpoint, partitions=1, name=self.topic.name).send(values)


@pytest.mark.parametrize("source", SOURCES)
def test_available_now_whose_target_left_the_log_fails(spark, kafka_bootstrap, checkpoint, source):
    """An AvailableNow run freezes its target (10 records); the topic is recreated with 3 while it runs. Spark's
    source fails the run with a named error instead of ending as if it had read everything up to its target."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    topic.send([str(i) for i in range(10)])
    sink = RecreateOnce(topic, ["a", "b", "c"])
    df = stream(spark, source, topic, startingOffsets="earliest", maxOffsetsPerTrigger=2, failOnDataLoss="false")
    query = start(df, checkpoint, sink, availableNow=True)
    try:
        query.awaitTermination(180)
    except Exception as error:  # awaitTermination raises the query's failure
        failure = str(error)
    else:
        failure = str(query.exception()) if query.exception() else ""
    finally:
        query.stop()
    assert sink.batches[0] == ["0", "1"]
    expected = (
        "report available offset which is less than end offset during running query with Trigger.AvailableNow"
        if source == "kafka"
        else "AvailableNowTargetLostError"
    )
    assert expected in failure, (failure[:2000], sink.batches)


class RecreateBeforeRead(Collect):
    """In the first batch, before reading it, deletes ``topic`` and creates it again with ``values`` (none: empty),
    so the planned range is read from the new topic. Spark's test does this in a ``ForeachWriter.open``; in
    ``foreachBatch`` the batch's rows are read only when ``df`` is collected, so the order is certain."""

    def __init__(self, topic: Topic, values: list[str]) -> None:
        super().__init__()
        self.topic, self.values_after, self.done = topic, values, False

    def __call__(self, df: Any, batch_id: int) -> None:
        if not self.done:
            self.done = True
            self.topic.delete()
            Topic(self.topic.bootstrap, self.topic.checkpoint, partitions=1, name=self.topic.name).send(
                self.values_after
            )
        super().__call__(df, batch_id)


@pytest.mark.parametrize("recreated_with", [[], ["a", "b", "c"]], ids=["empty", "3-records"])
@pytest.mark.parametrize("source", SOURCES)
def test_topic_deleted_and_recreated_while_a_batch_is_planned(
    spark, kafka_bootstrap, checkpoint, source, recreated_with
):
    """"delete a topic when a Spark job is running" (KafkaMicroBatchSourceSuite): a batch planned over 10 records is
    read after its topic was deleted and created again. With ``failOnDataLoss=false`` the range the new topic lacks
    is skipped and the query goes on with the new topic's records, each read once (Spark reads the new topic's first
    records in the stale batch, ytqueue skips that batch whole and reads them from the new topic's start in the next
    one: docs/kafka.md)."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    topic.send([str(i) for i in range(10)])
    sink = RecreateBeforeRead(topic, recreated_with)
    options = {"startingOffsets": "earliest", "failOnDataLoss": "false", "kafkaConsumer.pollTimeoutMs": 1000}
    query = start(stream(spark, source, topic, **options), checkpoint, sink)
    try:
        # Spark's next trigger moves its position to the new topic's end: records sent before it are not read
        # (ytqueue reads them: its position moves to the new topic's start), so send more only after that trigger.
        def settled() -> bool:
            progress = query.lastProgress
            return sink.values == sorted(recreated_with) and progress is not None and progress["batchId"] >= 1

        assert wait_until(settled, query=query), sink.batches
        topic.send(["d", "e"])
        assert wait_until(lambda: {"d", "e"} <= set(sink.values), query=query), sink.batches
        time.sleep(1)
        assert query.exception() is None
    finally:
        query.stop()
    assert sink.values == sorted([*recreated_with, "d", "e"]), sink.batches


# -- KafkaRelationSuite ------------------------------------------------------------------------------------------


def read_values(df: Any) -> list[str]:
    return sorted(r.v for r in df.selectExpr("cast(value as string) as v").collect())


def numbers(first: int, last: int) -> list[str]:
    return sorted(str(i) for i in range(first, last + 1))


@pytest.fixture
def three_partitions(kafka_bootstrap: str, checkpoint: str) -> Topic:
    """KafkaRelationSuite's topic: 0-9 in partition 0, 10-19 in partition 1, 20 in partition 2."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=3)
    topic.send([str(i) for i in range(10)], partition=0)
    topic.send([str(i) for i in range(10, 20)], partition=1)
    topic.send(["20"], partition=2)
    return topic


@pytest.mark.parametrize("source", SOURCES)
def test_explicit_earliest_to_latest_offsets(spark, three_partitions, source):
    """"explicit earliest to latest offsets": ``latest`` binds when the DataFrame runs, so a rerun sees more."""
    topic = three_partitions
    df = batch(spark, source, topic, startingOffsets="earliest", endingOffsets="latest")
    assert read_values(df) == numbers(0, 20)
    topic.send([str(i) for i in range(21, 30)], partition=2)
    assert read_values(df) == numbers(0, 29)


@pytest.mark.parametrize("source", SOURCES)
def test_explicit_offsets(spark, three_partitions, source):
    """"explicit offsets": -2/-1 in the JSON offsets are earliest/latest (latest binds at each run), an explicit
    ending offset stays where it is."""
    topic = three_partitions
    starting = json.dumps({topic.name: {"0": -2, "1": -2, "2": 0}})
    ending = json.dumps({topic.name: {"0": -1, "1": -1, "2": 1}})
    df = batch(spark, source, topic, startingOffsets=starting, endingOffsets=ending)
    assert read_values(df) == numbers(0, 20)
    topic.send([str(i) for i in range(31, 40)], partition=2)
    assert read_values(df) == numbers(0, 20), "partition 2 ends at an explicit offset"
    topic.send([str(i) for i in range(21, 31)], partition=1)
    assert read_values(df) == numbers(0, 30), "partition 1 ends at the latest offset"


ONE_OF = "exactly one of subscribe, subscribePattern, assign must be set"
#: id: (options, what Spark's error says, what ytqueue's says); "T" stands for the topic's name
BAD_BATCH_OPTIONS = {
    "start-latest": ({"startingOffsets": "latest"}, "starting offset can't be latest", "'latest' is not allowed"),
    "start-latest-json": ({"startingOffsets": '{"T": {"0": -1}}'}, "can't be latest", "offset -1 (latest)"),
    "end-earliest": ({"endingOffsets": "earliest"}, "ending offset can't be earliest", "'earliest' is not allowed"),
    "end-earliest-json": ({"endingOffsets": '{"T": {"0": -2}}'}, "can't be earliest", "offset -2 (earliest)"),
    "no-strategy": ({"subscribe": None}, "One of the following options must be specified", ONE_OF),
    "subscribe-and-pattern": ({"subscribePattern": "T.*"}, "Only one of the following options", ONE_OF),
    "subscribe-and-assign": ({"assign": '{"T": [0]}'}, "Only one of the following options", ONE_OF),
    "empty-subscribe": ({"subscribe": ""}, "No topics to subscribe to", ONE_OF),
    "empty-assign": ({"subscribe": None, "assign": ""}, "No topicpartitions to assign", ONE_OF),
    "empty-pattern": ({"subscribe": None, "subscribePattern": ""}, "Pattern to subscribe is empty", ONE_OF),
    "min-partitions-negative": ({"minPartitions": "-1"}, "minPartitions must be positive", "'minPartitions'"),
}


@pytest.mark.parametrize("case", list(BAD_BATCH_OPTIONS))
@pytest.mark.parametrize("source", SOURCES)
def test_bad_batch_query_options(spark, kafka_bootstrap, checkpoint, source, case):
    """"bad batch query options": each fails with an error that says why, at ``load()`` or at the first action
    (Python sources learn whether a read is a batch only when it runs: docs/kafka.md)."""
    options, spark_says, ytqueue_says = BAD_BATCH_OPTIONS[case]
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    topic.send(["1"])
    reader = spark.read.format(source).option("kafka.bootstrap.servers", topic.bootstrap)
    for key, value in {"subscribe": topic.name, **options}.items():
        if value is not None:
            reader = reader.option(key, value.replace('"T"', f'"{topic.name}"').replace("T.*", f"{topic.name}.*"))
    with pytest.raises(Exception) as failure:
        reader.load().collect()
    assert (spark_says if source == "kafka" else ytqueue_says) in str(failure.value), str(failure.value)[:1000]


# -- KafkaDontFailOnDataLossSuite ---------------------------------------------------------------------------------


@pytest.fixture
def trimmed(kafka_bootstrap: str, checkpoint: str) -> Topic:
    """KafkaDontFailOnDataLossSuite's topic: 50 records in one partition, of which retention took the first 20."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    topic.send([str(i) for i in range(50)])
    topic.delete_records(0, 20)
    return topic


@pytest.mark.parametrize("source", SOURCES)
def test_fail_on_data_loss_false_returns_no_duplicates_batch(spark, trimmed, source):
    """"failOnDataLoss=false should not return duplicated records: batch": offsets from 0, 20 of them gone."""
    starting = json.dumps({trimmed.name: {"0": 0}})
    options = {"startingOffsets": starting, "failOnDataLoss": "false", "kafkaConsumer.pollTimeoutMs": 1000}
    df = batch(spark, source, trimmed, **options)
    assert read_values(df) == numbers(20, 49)


@pytest.mark.parametrize("source", SOURCES)
def test_fail_on_data_loss_false_returns_no_duplicates_stream(spark, trimmed, checkpoint, source):
    """"failOnDataLoss=false should not return duplicated records: microbatch": the same, read by a stream."""
    starting = json.dumps({trimmed.name: {"0": 0}})
    options = {"startingOffsets": starting, "failOnDataLoss": "false", "kafkaConsumer.pollTimeoutMs": 1000}
    sink = Collect()
    query = start(stream(spark, source, trimmed, **options), checkpoint, sink, availableNow=True)
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert query.exception() is None
    assert sink.values == numbers(20, 49), sink.batches


@pytest.mark.parametrize("source", SOURCES)
def test_fail_on_data_loss_true_fails_a_batch_read_of_deleted_records(spark, trimmed, source):
    """The same read with ``failOnDataLoss`` left at true fails instead of returning the 30 records left."""
    starting = json.dumps({trimmed.name: {"0": 0}})
    df = batch(spark, source, trimmed, startingOffsets=starting, **{"kafkaConsumer.pollTimeoutMs": 1000})
    with pytest.raises(Exception) as failure:
        df.collect()
    expected = "Some data may have been lost" if source == "kafka" else "DataLossError"
    assert expected in str(failure.value), str(failure.value)[:2000]


# -- KafkaSinkSuite (batch writes; its streaming cases read a MemoryStream, which PySpark lacks, and run the same
# -- checks of the written DataFrame's schema) ------------------------------------------------------------------


def write(df: Any, source: str, bootstrap: str, **options: Any) -> None:
    writer = df.write.format(source).option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.mode("append").save()


def read_back(spark: Any, source: str, topic: Topic, **options: Any) -> Any:
    return batch(spark, source, topic, startingOffsets="earliest", endingOffsets="latest", **options)


@pytest.mark.parametrize("source", SOURCES)
def test_sink_batch_write_to_kafka(spark, kafka_bootstrap, checkpoint, source):
    """"batch - write to kafka": values with headers (a key repeated, none for one record) read back as written."""
    from pyspark.sql.types import ArrayType, BinaryType, StringType, StructField, StructType

    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    headers_type = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
    schema = StructType(
        [StructField("topic", StringType()), StructField("value", StringType()), StructField("headers", headers_type)]
    )
    data = [
        (topic.name, "1", [("a", b"b")]),
        (topic.name, "2", [("c", b"d"), ("e", b"f")]),
        (topic.name, "3", [("g", b"h"), ("g", b"i")]),
        (topic.name, "4", None),
        (topic.name, "5", [("j", b"k"), ("j", b"l"), ("m", b"n")]),
    ]
    write(spark.createDataFrame(data, schema), source, topic.bootstrap, topic=topic.name)
    rows = read_back(spark, source, topic, includeHeaders="true").selectExpr("cast(value as string) v", "headers")
    found = sorted(
        (r.v, None if r.headers is None else [(h.key, bytes(h.value)) for h in r.headers]) for r in rows.collect()
    )
    assert found == [(v, h) for _, v, h in data]


@pytest.mark.parametrize("source", SOURCES)
def test_sink_batch_partition_column_and_partitioner_priorities(spark, kafka_bootstrap, checkpoint, source):
    """"batch - partition column and partitioner priorities": a partition column places every record; a null one
    is ignored, the record going where its key sends it."""
    from pyspark.sql.functions import lit

    df = spark.createDataFrame([(f"k{i}", str(i)) for i in range(20)], "key string, value string")
    by_column = Topic(kafka_bootstrap, checkpoint, partitions=4)
    write(df.withColumn("partition", lit(2)), source, by_column.bootstrap, topic=by_column.name)
    assert {r.partition for r in read_back(spark, source, by_column).collect()} == {2}
    by_key, null_column = (Topic(kafka_bootstrap, checkpoint, partitions=4) for _ in range(2))
    write(df, source, by_key.bootstrap, topic=by_key.name)
    write(df.withColumn("partition", lit(None).cast("int")), source, null_column.bootstrap, topic=null_column.name)
    placed = [
        sorted((r.value, r.partition) for r in read_back(spark, source, t).select("value", "partition").collect())
        for t in (by_key, null_column)
    ]
    assert placed[0] == placed[1]
    assert len({p for _, p in placed[0]}) > 1


#: id: (select expressions over (topic, value), options, what Spark's error says, what ytqueue's says)
BAD_WRITES = {
    "null-topic-no-option": (
        ["cast(null as string) as topic", "value"], {}, "contains a null topic", "Null 'topic' and no 'topic' option"
    ),
    "no-topic-no-option": (
        ["value as key", "value"], {}, "topic option required", "no 'topic' column and no 'topic' option"
    ),
    "no-value": (
        ["topic", "value as key"], {}, "required attribute 'value' not found", "a 'value' column (string or binary)"
    ),
    "topic-int": (["cast(1 as int) as topic", "value"], {}, "topic must be a(n) string", "'topic' must be a string"),
    "value-int": (
        ["topic", "cast(value as int) as value"], {}, "value must be a(n) string or binary", "'value' must be string"
    ),
    "key-int": (
        ["topic", "cast(value as int) as key", "value"], {}, "key must be a(n) string or binary", "'key' must be string"
    ),
    "partition-string": (
        ["topic", "value", "value as partition"], {}, "partition must be a(n) int", "'partition' must be an int"
    ),
    "key-serializer": (
        ["topic", "value"], {"kafka.key.serializer": "f"}, "'key.serializer' is not", "'kafka.key.serializer'"
    ),
    "value-serializer": (
        ["topic", "value"], {"kafka.value.serializer": "f"}, "'value.serializer' is not", "'kafka.value.serializer'"
    ),
}


@pytest.mark.parametrize("case", list(BAD_WRITES))
@pytest.mark.parametrize("source", SOURCES)
def test_sink_write_with_bad_schema_or_options(spark, kafka_bootstrap, checkpoint, source, case):
    """"write data with bad schema", "write data with valid schema but wrong types", "exception on config
    serializer" and "batch - null topic field value, and no topic option": each write fails, saying why, and
    writes nothing."""
    selects, options, spark_says, ytqueue_says = BAD_WRITES[case]
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    df = spark.createDataFrame([(topic.name, "1")], "topic string, value string").selectExpr(*selects)
    with pytest.raises(Exception) as failure:
        write(df, source, topic.bootstrap, **options)
    message = str(failure.value)
    if source == "kafka":
        assert spark_says.lower() in message.lower(), message[:1000]
    else:
        assert ytqueue_says in message, message[:1000]
    assert topic.ends() == {0: 0}


@pytest.mark.parametrize("mode", ["overwrite", "ignore"])
@pytest.mark.parametrize("source", SOURCES)
def test_sink_batch_unsupported_save_modes(spark, kafka_bootstrap, checkpoint, source, mode):
    """"batch - unsupported save modes": records can not be taken back from a topic, so neither source overwrites
    or ignores; nothing is written."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    df = spark.createDataFrame([(topic.name, "1")], "topic string, value string")
    writer = df.write.format(source).option("kafka.bootstrap.servers", topic.bootstrap).mode(mode)
    with pytest.raises(Exception) as failure:
        writer.save()
    assert mode in str(failure.value).lower(), str(failure.value)[:1000]
    assert topic.ends() == {0: 0}


@pytest.mark.parametrize("source", SOURCES)
def test_sink_write_to_a_topic_that_does_not_exist_fails(spark, kafka_bootstrap, source):
    """"write to non-existing topic" (the broker creates no topics): the write fails instead of waiting forever;
    Spark's after ``kafka.max.block.ms``, ytqueue's after librdkafka's ``topic.metadata.propagation.max.ms``
    (30 s unless set: docs/kafka.md)."""
    df = spark.createDataFrame([("1",)], "value string")
    options = {"kafka.max.block.ms": 5000}
    if source == "ytqueue":
        options["kafka.topic.metadata.propagation.max.ms"] = 5000
    with pytest.raises(Exception) as failure:
        write(df, source, kafka_bootstrap, topic="never-created", **options)
    message = str(failure.value)
    assert ("never-created" in message) if source == "kafka" else ("Unknown topic" in message), message[:1000]


# -- KafkaMicroBatchSourceSuite (KafkaSourceSuiteBase) -----------------------------------------------------------


@pytest.mark.parametrize("strategy", ["subscribe", "assign"])
@pytest.mark.parametrize("source", SOURCES)
def test_subscribing_from_specific_offsets(spark, kafka_bootstrap, checkpoint, source, strategy):
    """"subscribing topic by name from specific offsets" / "assign from specific offsets": -2 (earliest), -1
    (latest) and explicit offsets per partition; the query restarts from its checkpoint and reads what comes next."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=5)
    for partition, values in enumerate([[-20, -21, -22], [-10, -11, -12], [0, 1, 2], [10, 11, 12], [20, 21, 22]]):
        topic.send([str(v) for v in values], partition=partition)
    starting = json.dumps({topic.name: {"0": -2, "1": -1, "2": 0, "3": 1, "4": 2}})
    options = {"startingOffsets": starting}
    if strategy == "assign":
        options["assign"] = json.dumps({topic.name: [0, 1, 2, 3, 4]})
    expected = sorted(str(v) for v in [-20, -21, -22, 0, 1, 2, 11, 12, 22])

    def load() -> Any:
        reader = spark.readStream.format(source).option("kafka.bootstrap.servers", topic.bootstrap)
        reader = reader.option(strategy, options.get("assign", topic.name))
        return reader.option("startingOffsets", starting).load()

    sink = Collect()
    query = start(load(), checkpoint, sink)
    try:
        assert wait_until(lambda: sink.values == expected, query=query), sink.batches
    finally:
        query.stop()
    query = start(load(), checkpoint, sink)
    try:
        topic.send([str(v) for v in range(30, 35)])
        more = sorted(expected + [str(v) for v in range(30, 35)])
        assert wait_until(lambda: sink.values == more, query=query), sink.batches
    finally:
        query.stop()


@pytest.mark.parametrize("source", SOURCES)
def test_kafka_column_types(spark, kafka_bootstrap, checkpoint, source):
    """"Kafka column types": the schema and a record's columns (null key, value, topic, partition, offset, the
    producer's create time as timestampType 0, no headers as null)."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    now_ms = int(time.time() * 1000) - 1000
    topic.send(["1"])
    df = stream(spark, source, topic, startingOffsets="earliest", includeHeaders="true")
    rows: list[Any] = []
    query = df.writeStream.foreachBatch(lambda batch_df, _: rows.extend(batch_df.collect()))
    query = query.option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>"
    )
    [row] = rows
    assert (row.key, bytes(row.value), row.topic, row.partition, row.offset) == (None, b"1", topic.name, 0, 0)
    assert row.timestamp.timestamp() * 1000 >= now_ms and row.timestampType == 0
    assert row.headers is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("kafka.auto.offset.reset", "someValue"),
        ("kafka.auto.offset.reset", "earliest"),
        ("kafka.enable.auto.commit", "someValue"),
        ("kafka.interceptor.classes", "someValue"),
        ("kafka.key.deserializer", "someValue"),
        ("kafka.value.deserializer", "someValue"),
    ],
)
@pytest.mark.parametrize("source", SOURCES)
def test_unsupported_kafka_configs(spark, kafka_bootstrap, source, key, value):
    """"unsupported kafka configs": refused at ``load()``, saying they are not supported."""
    reader = spark.readStream.format(source).option("kafka.bootstrap.servers", kafka_bootstrap)
    reader = reader.option("subscribe", "topic").option(key, value)
    with pytest.raises(Exception) as failure:
        reader.load()
    assert "not supported" in str(failure.value).lower(), str(failure.value)[:1000]


@pytest.mark.parametrize("source", SOURCES)
def test_offsets_from_case_insensitive_parameters(spark, three_partitions, source):
    """"get offsets from case insensitive parameters": option names in any case."""
    topic = three_partitions
    starting = json.dumps({topic.name: {"0": 5, "1": 5, "2": 0}})
    reader = spark.read.format(source).option("KAFKA.BOOTSTRAP.SERVERS", topic.bootstrap)
    reader = reader.option("SubScribe", topic.name).option("STARTINGOFFSETS", starting)
    assert read_values(reader.option("EndingOffsets", "latest").load()) == sorted(
        [str(i) for i in range(5, 10)] + [str(i) for i in range(15, 21)]
    )


@pytest.mark.parametrize("source", SOURCES)
def test_subscribing_from_latest_offsets(spark, kafka_bootstrap, checkpoint, source):
    """"subscribing topic by name from latest offsets": what the topic held at the start is not read, what comes
    after is, across a restart."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=3)
    topic.send(["-1", "-2", "-3"])
    sink = Collect()
    query = start(stream(spark, source, topic, startingOffsets="latest"), checkpoint, sink)
    try:
        assert wait_until(lambda: query.lastProgress is not None, query=query)
        topic.send(["1", "2", "3"])
        assert wait_until(lambda: sink.values == ["1", "2", "3"], query=query), sink.batches
    finally:
        query.stop()
    topic.send(["4", "5"])  # while stopped: read after the restart
    query = start(stream(spark, source, topic, startingOffsets="latest"), checkpoint, sink)
    try:
        assert wait_until(lambda: sink.values == ["1", "2", "3", "4", "5"], query=query), sink.batches
    finally:
        query.stop()


@pytest.mark.parametrize("source", SOURCES)
def test_subscribing_by_pattern_from_earliest_offsets(spark, kafka_bootstrap, checkpoint, source):
    """"subscribing topic by pattern from earliest offsets": a topic created later that matches is read too."""
    prefix = f"pattern-{int(time.time() * 1000)}-{source}"
    first = Topic(kafka_bootstrap, checkpoint, partitions=2, name=f"{prefix}-a")
    first.send(["1", "2", "3"])
    reader = spark.readStream.format(source).option("kafka.bootstrap.servers", kafka_bootstrap)
    df = reader.option("subscribePattern", f"{prefix}-.*").option("startingOffsets", "earliest").load()
    sink = Collect()
    query = start(df, checkpoint, sink)
    try:
        assert wait_until(lambda: sink.values == ["1", "2", "3"], query=query), sink.batches
        second = Topic(kafka_bootstrap, checkpoint, partitions=1, name=f"{prefix}-b")
        second.send(["4", "5"])
        assert wait_until(lambda: sink.values == ["1", "2", "3", "4", "5"], query=query), sink.batches
    finally:
        query.stop()


def send_transaction(topic: Topic, values: list[str], commit: bool) -> None:
    """Produce ``values`` to partition 0 in one transaction, then commit or abort it."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": topic.bootstrap, "transactional.id": f"tx-{time.time_ns()}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in values:
        producer.produce(topic.name, value=value.encode(), partition=0)
    assert producer.flush(30) == 0
    (producer.commit_transaction if commit else producer.abort_transaction)(30)


@pytest.mark.parametrize("level", ["read_committed", "read_uncommitted"])
@pytest.mark.parametrize("source", SOURCES)
def test_read_kafka_transactional_messages(spark, kafka_bootstrap, checkpoint, source, level):
    """KafkaRelationSuite's "read Kafka transactional messages": ``read_committed`` skips aborted records (their
    offsets and the markers' are left out), ``read_uncommitted`` returns them; one DataFrame, run after each step."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    df = batch(spark, source, topic, **{"kafka.isolation.level": level})
    send_transaction(topic, [str(i) for i in range(1, 6)], commit=True)
    assert read_values(df) == numbers(1, 5)
    send_transaction(topic, [str(i) for i in range(6, 11)], commit=False)
    send_transaction(topic, [str(i) for i in range(11, 16)], commit=True)
    expected = numbers(1, 15) if level == "read_uncommitted" else sorted(numbers(1, 5) + numbers(11, 15))
    assert read_values(df) == expected


@pytest.mark.parametrize("source", SOURCES)
def test_no_matched_offset_for_starting_timestamp(spark, three_partitions, source):
    """KafkaRelationSuite's "no matched offset for timestamp - startingOffsets": a starting time after every
    record fails the read (the default strategy), naming a partition."""
    far = 4_102_444_800_000  # 2100-01-01
    df = batch(spark, source, three_partitions, startingTimestamp=far)
    with pytest.raises(Exception) as failure:
        df.collect()
    message = str(failure.value)
    named = f"{three_partitions.name}-" if source == "kafka" else f"of topic {three_partitions.name}"
    assert named in message, message[:1000]


@pytest.mark.parametrize("source", SOURCES)
def test_input_row_metrics(spark, kafka_bootstrap, checkpoint, source):
    """"input row metrics": a batch's progress counts the records it read."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=2)
    topic.send([str(i) for i in range(7)])
    sink = Collect()
    query = start(stream(spark, source, topic, startingOffsets="earliest"), checkpoint, sink, availableNow=True)
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert sum(p["numInputRows"] for p in query.recentProgress) == 7
    assert sum(p["sources"][0]["numInputRows"] for p in query.recentProgress) == 7


@pytest.mark.parametrize("source", SOURCES)
def test_fail_on_data_loss_true_fails_a_stream_from_deleted_records(spark, trimmed, checkpoint, source):
    """KafkaDontFailOnDataLossSuite's reads with ``failOnDataLoss`` left at true: a stream starting at offset 0 of a
    partition whose first 20 records retention deleted fails instead of reading the 30 left."""
    starting = json.dumps({trimmed.name: {"0": 0}})
    options = {"startingOffsets": starting, "kafkaConsumer.pollTimeoutMs": 1000}
    sink = Collect()
    query = start(stream(spark, source, trimmed, **options), checkpoint, sink, availableNow=True)
    try:
        with pytest.raises(Exception) as failure:
            query.awaitTermination(120)
    finally:
        query.stop()
    expected = "Some data may have been lost" if source == "kafka" else "DataLossError"
    assert expected in str(failure.value), str(failure.value)[:2000]
    assert sink.values == [], sink.batches


@pytest.mark.parametrize("source", SOURCES)
def test_available_now_with_max_offsets_per_trigger_reads_everything_in_capped_batches(
    spark, kafka_bootstrap, checkpoint, source
):
    """KafkaMicroBatchSourceSuite's AvailableNow with ``maxOffsetsPerTrigger``: the run reads up to the end it froze
    at its start, in batches of at most the cap, and stops (PySpark 4.2 and newer: a Python source's AvailableNow
    is one batch before, README)."""
    if tuple(int(p) for p in pyspark.__version__.split(".")[:2]) < (4, 2) and source == "ytqueue":
        pytest.skip("PySpark before 4.2 runs a Python source's AvailableNow as one batch")
    topic = Topic(kafka_bootstrap, checkpoint, partitions=3)
    topic.send([str(i) for i in range(30)])
    sink = Collect()
    df = stream(spark, source, topic, startingOffsets="earliest", maxOffsetsPerTrigger=7)
    query = start(df, checkpoint, sink, availableNow=True)
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert sink.values == numbers(0, 29)
    assert max(len(b) for b in sink.batches) <= 7 and len(sink.batches) >= 5, sink.batches


@pytest.fixture
def timestamped(kafka_bootstrap: str, checkpoint: str) -> tuple[Topic, list[int]]:
    """KafkaRelationSuite's timestamp topic: 0-9, 10-19 and 20-29 spread over three partitions, each ten produced
    with one create time a second after the ten before; returns the topic and the three times plus a fourth."""
    from confluent_kafka import Producer

    topic = Topic(kafka_bootstrap, checkpoint, partitions=3)
    first = int(time.time() * 1000) - 5000
    times = [first, first + 1000, first + 2000, first + 3000]
    producer = Producer({"bootstrap.servers": topic.bootstrap})
    for group in range(3):
        for value in range(group * 10, group * 10 + 10):
            producer.produce(topic.name, value=str(value).encode(), partition=value % 3, timestamp=times[group])
    assert producer.flush(30) == 0
    return topic, times


@pytest.mark.parametrize("form", ["by-partition", "global", "start-only"])
@pytest.mark.parametrize("source", SOURCES)
def test_timestamp_provided_for_starting_and_ending(spark, timestamped, source, form):
    """"timestamp provided for starting and ending", "global timestamp provided for starting and ending",
    "timestamp provided for starting, offset provided for ending": a start at the second time and an end at the
    third read the records produced at the second time (an ending ``latest``: every record from it on)."""
    topic, times = timestamped

    def per_partition(ms: int) -> str:
        return json.dumps({topic.name: {str(p): ms for p in range(3)}})

    if form == "by-partition":
        options = {
            "startingOffsetsByTimestamp": per_partition(times[1]),
            "endingOffsetsByTimestamp": per_partition(times[2]),
        }
        expected = numbers(10, 19)
    elif form == "global":
        options = {"startingTimestamp": times[1], "endingTimestamp": times[2]}
        expected = numbers(10, 19)
    else:
        options = {"startingOffsetsByTimestamp": per_partition(times[1]), "endingOffsets": "latest"}
        expected = numbers(10, 29)
    assert read_values(batch(spark, source, topic, **options)) == expected


@pytest.mark.parametrize("source", SOURCES)
def test_min_partitions(spark, three_partitions, source):
    """"SPARK-30656: minPartitions": a batch read of 21 records over three partitions runs in at least 6 tasks and
    reads every record once."""
    df = batch(spark, source, three_partitions, minPartitions=6).selectExpr("cast(value as string) as v")
    assert sorted(r.v for r in df.collect()) == numbers(0, 20)
    assert df.rdd.getNumPartitions() >= 6


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
@pytest.mark.parametrize("source", SOURCES)
def test_subscribe_by_pattern_with_topic_recreation_between_runs(
    spark, kafka_bootstrap, checkpoint, source, fail_on_data_loss
):
    """"subscribe topic by pattern with topic recreation between batches": a topic read to offset 2 is recreated
    with one record while the query is stopped. ``failOnDataLoss=true`` fails the restarted query (its offset went
    from 2 to 1); with ``false`` it goes on: Spark from the new topic's end (its first record is never read),
    ytqueue from its start (docs/kafka.md, differences)."""
    prefix = f"recreated-{time.time_ns()}"
    good = Topic(kafka_bootstrap, checkpoint, partitions=1, name=f"{prefix}-good")
    bad = Topic(kafka_bootstrap, checkpoint, partitions=1, name=f"{prefix}-bad")
    good.send(["1", "3"])
    bad.send(["2", "4"])

    def load() -> Any:
        reader = spark.readStream.format(source).option("kafka.bootstrap.servers", kafka_bootstrap)
        reader = reader.option("subscribePattern", f"{prefix}-.*").option("startingOffsets", "earliest")
        # as Spark's test: a request about the recreated topic that meets stale metadata gives up soon and is retried
        reader = reader.option("kafka.request.timeout.ms", "3000").option("kafka.default.api.timeout.ms", "3000")
        return reader.option("failOnDataLoss", fail_on_data_loss).load()

    sink = Collect()
    query = start(load(), checkpoint, sink)
    try:
        assert wait_until(lambda: sink.values == ["1", "2", "3", "4"], query=query), sink.batches
    finally:
        query.stop()
    bad.delete()
    Topic(kafka_bootstrap, checkpoint, partitions=1, name=bad.name).send(["6"])
    query = start(load(), checkpoint, sink)
    try:
        if fail_on_data_loss == "true":
            with pytest.raises(Exception) as failure:
                query.awaitTermination(120)
            said = "was changed from 2 to 1" if source == "kafka" else "is beyond its end 1"
            assert said in str(failure.value), str(failure.value)[:2000]
            return
        assert wait_until(lambda: query.lastProgress is not None, query=query)
        good.send(["7"])
        new = ["6", "7"] if source == "ytqueue" else ["7"]
        assert wait_until(lambda: sink.values == sorted(["1", "2", "3", "4", *new]), query=query), sink.batches
        time.sleep(1)
        assert sink.values == sorted(["1", "2", "3", "4", *new]), sink.batches
    finally:
        query.stop()


@pytest.mark.parametrize("source", SOURCES)
def test_late_binding_start_offsets(spark, kafka_bootstrap, checkpoint, source):
    """KafkaRelationSuite's "test late binding start offsets": ``earliest`` binds when the DataFrame runs, so after
    retention removed the first records a rerun starts where the log starts now (no data loss reported)."""
    topic = Topic(kafka_bootstrap, checkpoint, partitions=1)
    topic.send([str(i) for i in range(10)])
    df = batch(spark, source, topic, startingOffsets="earliest", endingOffsets="latest")
    assert read_values(df) == numbers(0, 9)
    topic.delete_records(0, 10)
    topic.send([str(i) for i in range(10, 20)])
    assert read_values(df) == numbers(10, 19)
