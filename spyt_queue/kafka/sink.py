"""Writing to Kafka: ``value`` and optional ``key``, ``headers``, ``topic``, ``partition`` columns, through an
idempotent producer. Every task flushes before it reports success and any delivery error fails the batch, so
nothing is lost silently (Kafka's own sink semantics: at-least-once). Keyed records go to the partition Java
clients and Spark's Kafka sink choose (murmur2 of the key), so both sinks can feed one keyed topic."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from spyt_queue.deadletter import BoundDeadLetters, DeadLetterCollector
from spyt_queue.deadletter_targets import sink_dead_letters
from spyt_queue.errors import BadRecordError, OptionError, SchemaMismatchError
from spyt_queue.kafka.clients import check_brokers_reachable, pooled_producer
from spyt_queue.kafka.java_options import translate_java_options
from spyt_queue.kafka.options import BOOTSTRAP_SERVERS, FORBIDDEN_KAFKA_KEYS, KAFKA_CONFIG, KAFKA_SOURCE_OPTIONS
from spyt_queue.options import CONNECT_TIMEOUT, WRITE, Option, Options, connect_timeout
from spyt_queue.records import describe_record, first_null, task_label
from spyt_queue.sink_options import check_sink_options
from spyt_queue.spark.sink_skeleton import (
    SinkBatchWriter,
    SinkFormat,
    SinkStreamWriter,
    WriteTask,
    finished,
    tasks_finished,
)

#: librdkafka's partitioner matching the Java client's default for keyed records (murmur2 of the key); records
#: without a key are spread at random (Java sticks to one partition per batch: both are valid spreads).
JAVA_COMPATIBLE_PARTITIONER = "murmur2_random"
TOPIC = Option("topic", "the topic of every record (overrides the topic column)", modes=(WRITE,))
#: Every option :func:`_writer` reads (``kafka.*`` included); Spark adds path/checkpointLocation/queryName.
KAFKA_SINK_OPTIONS = (TOPIC, KAFKA_CONFIG, CONNECT_TIMEOUT)
KAFKA_SINK_WHAT = "the Kafka sink"
#: librdkafka's setting for delivery reports of failed records only (the sink without dead letters sets it).
ONLY_ERROR_REPORTS = "delivery.report.only.error"
#: Delivery errors that concern one record (the broker refused it), not the producer or the cluster: with a
#: dead-letter target the record goes there; any other delivery error fails the task.
RECORD_ERRORS = {
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.INVALID_RECORD,
    KafkaError.INVALID_MSG_SIZE,
    KafkaError.INVALID_MSG,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._INVALID_ARG,
}


def _kafka_cause(error: BaseException) -> BaseException:
    """The KafkaException behind ``error`` if there is one: confluent-kafka reports a fatal error raised while
    serving callbacks as a ``SystemError`` whose context is the real error."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, KafkaException):
            return seen
        seen = seen.__cause__ or seen.__context__
    return error


def check_kafka_schema(schema: StructType, default_topic: str | None) -> None:
    """The DataFrame must have ``value`` and may have ``key``, ``headers``, ``topic``, ``partition``."""
    fields = {f.name: f.dataType for f in schema.fields}
    problems = []
    if "value" not in fields:
        problems.append("a 'value' column (string or binary) is required")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], (StringType, BinaryType)):
            problems.append(f"column {name!r} must be string or binary, not {fields[name].simpleString()}")
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        problems.append("column 'topic' must be a string")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        problems.append("column 'partition' must be an int")
    if "headers" in fields and not isinstance(fields["headers"], ArrayType):
        problems.append("column 'headers' must be array<struct<key: string, value: binary>>")
    if "topic" not in fields and not default_topic:
        problems.append("no 'topic' column and no 'topic' option: say where to write")
    if problems:
        raise SchemaMismatchError("The DataFrame can not be written to Kafka: " + "; ".join(problems))


@dataclass
class KafkaWriteCommit(WriterCommitMessage):
    """Records one task delivered."""

    records: int
    dead_letters: int = 0


class KafkaWriteTask(WriteTask):
    """The Kafka sink's task: produces the rows of one task and waits until every record is acknowledged. Nothing
    to do on the driver: acknowledged records stay (at-least-once), a replay produces them again."""

    def __init__(
        self, config: dict[str, Any], default_topic: str | None, dead_letters: BoundDeadLetters | None = None
    ) -> None:
        """``dead_letters``: where records Kafka refuses go (``deadLetter.*``); without it they fail the task."""
        self.config = config
        self.default_topic = default_topic
        self.dead_letters = dead_letters

    def describe(self) -> str:
        """``Kafka topic t`` (``Kafka topics of the topic column`` without the ``topic`` option)."""
        return f"Kafka topic {self.default_topic}" if self.default_topic else "Kafka topics of the topic column"

    def summary(self, messages: Sequence[WriterCommitMessage | None]) -> str:
        """Tasks finished and records delivered."""
        records = sum(m.records for m in finished(messages, KafkaWriteCommit))
        return f"{tasks_finished(messages, KafkaWriteCommit)}, delivering {records} records"

    def abort(self, messages: Sequence[WriterCommitMessage | None], batch_id: int | None) -> str:
        """Acknowledged records stay (at-least-once); the replay produces them again."""
        return f"{self.summary(messages)}; acknowledged records stay, writing again produces them again"

    def write(self, batches: Iterator[pa.RecordBatch]) -> KafkaWriteCommit:
        """Produce every row, flush, and raise on the first delivery error.

        The producer is this process's pooled one; any error evicts it from the pool, so a producer a fatal
        error poisoned never serves the next task."""
        if self.dead_letters is not None:
            return self._write_diverting(batches, self.dead_letters)
        errors: list[str] = []

        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                errors.append(f"{message.topic()}[{message.partition()}]: {error}")

        # Without dead letters only failures matter: librdkafka calls back for failed records only (a Python
        # callback per acknowledged record costs as much as producing it).
        with pooled_producer({**self.config, ONLY_ERROR_REPORTS: True}) as producer:
            try:
                count = self._produce_all(producer, batches, delivered, errors)
                remaining = producer.flush(60)
            except BadRecordError:
                raise
            except Exception as error:
                if errors:
                    raise BadRecordError(f"record delivery failed: {errors[0]}") from error
                raise BadRecordError(f"the Kafka producer failed: {_kafka_cause(error)}") from error
            if errors:
                raise BadRecordError(f"{len(errors)} record(s) failed delivery, first: {errors[0]}")
            if remaining:
                raise BadRecordError(f"{remaining} record(s) were not acknowledged by Kafka within 60 s")
        return KafkaWriteCommit(records=count)

    def _write_diverting(self, batches: Iterator[pa.RecordBatch], dead: BoundDeadLetters) -> KafkaWriteCommit:
        """:meth:`write` with a dead-letter target: a record with a null topic, one ``produce()`` refuses (too large,
        unknown partition) or one the broker refuses (see :data:`RECORD_ERRORS`) is dead-lettered; other errors
        still fail the task. The dead letters are durable before this returns."""
        errors: list[str] = []
        letters = DeadLetterCollector(dead)
        acknowledged = [0]

        def delivered(row: dict[str, Any], position: int, error: Any, message: Any) -> None:
            if error is None:
                acknowledged[0] += 1
            elif error.code() in RECORD_ERRORS:
                letters.add_row(row, position, f"Kafka refused the record for {message.topic()}: {error}")
            else:
                errors.append(f"{message.topic()}[{message.partition()}]: {error}")

        position = 0
        with pooled_producer(self.config) as producer:
            for batch in batches:
                for row in batch.to_pylist():
                    topic = self.default_topic or row.get("topic")
                    if topic is None:
                        letters.add_row(row, position, "Null 'topic' and no 'topic' option")
                    else:
                        kwargs = _produce_kwargs(row)
                        try:
                            produce_waiting(
                                producer,
                                topic,
                                kwargs.pop("value"),
                                kwargs.pop("key"),
                                functools.partial(delivered, row, position),
                                **kwargs,
                            )
                        except (KafkaException, TypeError, ValueError) as error:
                            cause = _kafka_cause(error)
                            code = cause.args[0].code() if isinstance(cause, KafkaException) else None
                            if isinstance(cause, KafkaException) and code not in RECORD_ERRORS:
                                raise BadRecordError(f"could not produce record to {topic}: {cause}") from error
                            letters.add_row(row, position, f"could not produce record to {topic}: {cause}")
                    position += 1
                    if errors:
                        break
                producer.poll(0)
                if errors:
                    break
            remaining = producer.flush(60)
        if errors:
            raise BadRecordError(f"{len(errors)} record(s) failed delivery, first: {errors[0]}")
        if remaining:
            raise BadRecordError(f"{remaining} record(s) were not acknowledged by Kafka within 60 s")
        written = letters.flush()  # durable before the task reports success
        return KafkaWriteCommit(records=acknowledged[0], dead_letters=written)

    def _check_batch(
        self, producer: Any, batch: pa.RecordBatch, first_row: int, produced: int, errors: list[str]
    ) -> None:
        """Refuse a batch with a null ``topic`` (and no ``topic`` option) before producing any of its records.

        A null ``value`` is a tombstone and a null ``key``/``partition``/``headers`` mean none, all legal. The
        records of the task's earlier batches are flushed first, so the error can say they were delivered."""
        if self.default_topic or "topic" not in batch.schema.names:
            return
        position = first_null(batch.column("topic"))
        if position is None:
            return
        remaining = producer.flush(60) if produced else 0
        if produced == 0:
            written = "Nothing of this task was produced."
        elif remaining or errors:
            written = (
                f"This task had already produced its first {produced} records ({remaining} unacknowledged after "
                f"60 s, {len(errors)} failed delivery); none after them."
            )
        else:
            written = f"This task had already delivered its first {produced} records; none after them was produced."
        raise BadRecordError(
            f"Null 'topic' and no 'topic' option: row {first_row + position} of {task_label()}, record "
            f"{describe_record(batch, position)}. {written}"
        )

    def _produce_all(self, producer: Any, batches: Iterator[pa.RecordBatch], delivered: Any, errors: list[str]) -> int:
        """Produce the records of every batch, column by column (no dict per row); stop at the first failed
        delivery ``delivered`` reported. Returns the records produced."""
        count = 0
        position = 0
        for batch in batches:
            self._check_batch(producer, batch, position, count, errors)
            position += batch.num_rows
            names = batch.schema.names
            values = batch.column("value").to_pylist()
            keys = batch.column("key").to_pylist() if "key" in names else itertools.repeat(None)
            # The option overrides the column, as in Spark.
            topics = itertools.repeat(self.default_topic) if self.default_topic else batch.column("topic").to_pylist()
            extras = _extra_kwargs(batch)
            topic = self.default_topic
            produce = producer.produce
            try:
                # Delivery reports (the only writers of ``errors``) are served by poll(), so ``errors`` is looked
                # at after the polls a full local queue makes, and after each batch's poll.
                if extras is None:
                    for index, (topic, value, key) in enumerate(zip(topics, values, keys, strict=False)):
                        try:
                            produce(topic, value, key, on_delivery=delivered)
                        except BufferError:
                            produce_waiting(producer, topic, value, key, delivered)
                            if errors:
                                return count + index + 1
                else:
                    for index, (topic, value, key, extra) in enumerate(zip(topics, values, keys, extras, strict=False)):
                        produce_waiting(producer, topic, value, key, delivered, **extra)
                        if errors:
                            return count + index + 1
            except KafkaException as error:
                raise BadRecordError(f"could not produce record to {topic}: {error}") from error
            count += batch.num_rows
            producer.poll(0)
            if errors:
                return count
        return count


def produce_waiting(producer: Any, topic: str, value: Any, key: Any, on_delivery: Any, **extra: Any) -> None:
    """``producer.produce`` of one record, waiting while librdkafka's local queue is full (``BufferError``:
    serve delivery reports for 0.1 s and try again). Other errors propagate."""
    while True:
        try:
            producer.produce(topic, value, key, on_delivery=on_delivery, **extra)
            return
        except BufferError:
            producer.poll(0.1)


def _extra_kwargs(batch: pa.RecordBatch) -> list[dict[str, Any]] | None:
    """Per row, the ``partition`` and ``headers`` arguments of ``produce`` (as :func:`_produce_kwargs`); ``None``
    when the batch has neither column."""
    names = batch.schema.names
    if "partition" not in names and "headers" not in names:
        return None
    rows = batch.select([n for n in ("partition", "headers") if n in names]).to_pylist()
    return [{k: v for k, v in _produce_kwargs(row).items() if k not in ("value", "key")} for row in rows]


def _produce_kwargs(row: dict[str, Any]) -> dict[str, Any]:
    """``producer.produce`` arguments of one row (its topic apart)."""
    kwargs: dict[str, Any] = {"value": row.get("value"), "key": row.get("key")}
    if row.get("partition") is not None:
        kwargs["partition"] = row["partition"]
    if row.get("headers"):
        kwargs["headers"] = [(h["key"], h["value"]) for h in row["headers"]]
    return kwargs


def _writer(options: Options, schema: StructType) -> KafkaWriteTask:
    check_sink_options(options, KAFKA_SINK_OPTIONS, KAFKA_SINK_WHAT, source_options=KAFKA_SOURCE_OPTIONS)
    config = options.value(KAFKA_CONFIG)
    if "bootstrap.servers" not in config:
        raise OptionError(BOOTSTRAP_SERVERS, "required: the brokers to write to")
    for key in ("key.serializer", "value.serializer", "interceptor.classes"):
        if key in config:
            raise OptionError(f"kafka.{key}", f"is not supported: {FORBIDDEN_KAFKA_KEYS[key]}")
    config = translate_java_options(config)
    config.setdefault("enable.idempotence", True)
    config.setdefault("acks", "all")
    config.setdefault("partitioner", JAVA_COMPATIBLE_PARTITIONER)
    default_topic = options.value(TOPIC)
    check_kafka_schema(schema, default_topic)
    check_brokers_reachable(config, connect_timeout(options))  # within connect_timeout, naming the brokers
    dead_letters = sink_dead_letters(options, f"kafka:{default_topic or '<topic column>'}")
    return KafkaWriteTask(config, default_topic, dead_letters)


def kafka_stream_writer(options: Options, schema: StructType) -> SinkStreamWriter:
    """The streaming Kafka sink, validated up front. Complete mode is taken as Spark's Kafka sink takes it (every
    row of the result is produced again)."""
    return SinkStreamWriter(_writer(options, schema))


#: How the Kafka sink names itself in the overwrite refusal (a batch write only: complete mode on a stream is
#: allowed, as in Spark's Kafka sink).
KAFKA_SINK = SinkFormat("ytqueue", "produces records to Kafka")


def kafka_batch_writer(options: Options, schema: StructType, overwrite: bool = False) -> SinkBatchWriter:
    """The batch Kafka sink, validated up front. ``mode("overwrite")`` is refused, as Spark's Kafka sink refuses it
    (records can not be taken back from a topic)."""
    KAFKA_SINK.refuse_overwrite(overwrite, streaming=False)
    return SinkBatchWriter(_writer(options, schema))
