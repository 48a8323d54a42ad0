"""The Kafka backend: bounds with ``list_offsets``, positions in the consumer group, ranges read exactly.

Spark's own Kafka source never commits to a consumer group (SPARK-27549). This backend commits the group
offsets after each batch's sink commit through the shared :class:`~spyt_queue.committer.Committer`, so
``kafka-consumer-groups --describe`` and every lag tool see the truth.
"""

from __future__ import annotations

import itertools
import logging
import operator
import time
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
from confluent_kafka import (
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spyt_queue.backend import DataLossHandler, PartitionBounds, QueueBackend
from spyt_queue.collector import gc_paused
from spyt_queue.errors import SpytQueueError, UnreachableError
from spyt_queue.kafka.clients import READ_COMMITTED, admin_client, isolation_level, pooled_consumer
from spyt_queue.kafka.errors import (
    admin_result,
    is_transient_code,
    is_transient_kafka_error,
    is_unknown_partition_error,
    with_retries,
)
from spyt_queue.kafka.group_store import KafkaGroupStore
from spyt_queue.kafka.subscription import Subscription, split_key
from spyt_queue.offsets import sorted_partitions
from spyt_queue.spark.compat import arrow_schema
from spyt_queue.stores.base import OffsetStore
from spyt_queue.stores.per_query import PerQueryStore

log = logging.getLogger("spyt_queue.kafka")

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
def kafka_schema(include_headers: bool, include_timestamp: bool = True) -> StructType:
    """The row schema of Spark's Kafka source, so existing queries port unchanged; ``include_timestamp=False``
    (the ``includeTimestamp`` option) leaves out ``timestamp`` and ``timestampType``."""
    fields = [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
    ]
    if include_timestamp:
        fields.append(StructField("timestamp", TimestampType(), True))
        fields.append(StructField("timestampType", IntegerType(), True))
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE, True))
    return StructType(fields)


class KafkaBackend(QueueBackend):
    """Topic partitions of one subscription, committed to one consumer group."""

    def __init__(
        self,
        config: dict[str, Any],
        subscription: Subscription,
        group_id: str,
        include_headers: bool = False,
        poll_timeout_ms: int = 120_000,
        request_timeout_s: float = 30.0,
        consume_batch: int = 10_000,
        include_timestamp: bool = True,
        per_query_group: bool = False,
    ) -> None:
        self.config = {k: v for k, v in config.items() if k != "group.id"}
        self.isolation_level = isolation_level(self.config)  # validated here, at load(), for bounds and reads
        self.subscription = subscription
        self.group_id = group_id
        #: no kafka.group.id: each query commits under its own group, ``group_id`` plus its writer token
        self.per_query_group = per_query_group
        self.include_headers = include_headers
        self.include_timestamp = include_timestamp
        self.poll_timeout_ms = poll_timeout_ms
        self.request_timeout_s = request_timeout_s
        self.consume_batch = consume_batch
        self._arrow_schema: pa.Schema | None = None
        self._last_transient: str | None = None  # the last broker error event of the range being read (text)
        self._eof_at: int | None = None  # the offset of the last partition-EOF event of the range being read

    @property
    def source_id(self) -> str:
        return f"kafka:{self.subscription.describe()}"

    def describe(self, partition: str) -> str:
        """Human-readable name of a partition, for messages."""
        topic, index = split_key(partition)
        return f"partition {index} of topic {topic}"

    def schema(self) -> StructType:
        return kafka_schema(self.include_headers, self.include_timestamp)

    @property
    def admin(self) -> AdminClient:
        """The process-wide admin client for this configuration."""
        return admin_client(self.config)

    @property
    def read_committed(self) -> bool:
        """Whether ``kafka.isolation.level=read_committed``: bounds stop at the last stable offset and reads skip
        aborted records; otherwise (the default, as in Spark) both go to the high watermark."""
        return self.isolation_level == READ_COMMITTED

    # -- driver side -----------------------------------------------------------------------------------------
    def partitions(self) -> list[str]:
        """Every partition of the subscription, as ``topic:partition`` keys."""
        metadata = self.admin.list_topics(timeout=self.request_timeout_s)
        keys: list[str] = []
        for name, topic in metadata.topics.items():
            if topic.error is not None or not self.subscription.matches(name):
                continue
            wanted = self.subscription.assigned.get(name) if self.subscription.kind == "assign" else None
            for index in topic.partitions:
                if wanted is None or index in wanted:
                    keys.append(f"{name}:{index}")
        if self.subscription.kind == "subscribe":
            missing = set(self.subscription.topics) - {split_key(k)[0] for k in keys}
            if missing:
                log.warning("subscribed topics not found (yet): %s", ", ".join(sorted(missing)))
        return sorted_partitions(keys)

    def _list_offsets(self, specs: Mapping[str, Any]) -> dict[str, int]:
        if not specs:
            return {}
        request = {TopicPartition(*split_key(k)): spec for k, spec in specs.items()}
        level = IsolationLevel.READ_COMMITTED if self.read_committed else IsolationLevel.READ_UNCOMMITTED
        futures = self.admin.list_offsets(request, isolation_level=level, request_timeout=self.request_timeout_s)
        result: dict[str, int] = {}
        for tp, future in futures.items():
            info = admin_result(future, "list_offsets", self.request_timeout_s)
            result[f"{tp.topic}:{tp.partition}"] = int(info.offset)
        return result

    def bounds(self) -> dict[str, PartitionBounds]:
        """First and next offset of every partition of the subscription.

        A topic deleted between the metadata request and ``list_offsets`` makes the broker answer "unknown topic or
        partition": the whole fetch is retried, metadata included, so the deleted topic is left out (the planner
        then reports its partitions as vanished, following ``failOnDataLoss``)."""
        return with_retries(self._bounds, "list_offsets", also_retry=is_unknown_partition_error)

    def _bounds(self) -> dict[str, PartitionBounds]:
        keys = self.partitions()
        lows = self._list_offsets({k: OffsetSpec.earliest() for k in keys})
        highs = self._list_offsets({k: OffsetSpec.latest() for k in keys})
        unknown = sorted(k for k in keys if lows[k] < 0 or highs[k] < 0)
        if unknown:  # -1001: no leader answered for the partition yet (a broker restarting), not an end
            raise UnreachableError(
                f"Kafka answered no offsets for {', '.join(unknown)} (no leader known yet: a broker restarting?)"
            )
        return {k: PartitionBounds(lows[k], highs[k]) for k in keys}

    def offsets_for_timestamps(self, timestamps: Mapping[str, int]) -> dict[str, int | None]:
        """First offset at or after each timestamp (ms), through a consumer's ``offsets_for_times``."""
        if not timestamps:
            return {}
        request = [TopicPartition(*split_key(k), int(ts)) for k, ts in timestamps.items()]
        with pooled_consumer(self.config) as consumer:
            found = with_retries(
                lambda: consumer.offsets_for_times(request, timeout=self.request_timeout_s), "offsets_for_times"
            )
        return {f"{tp.topic}:{tp.partition}": (None if tp.offset < 0 else int(tp.offset)) for tp in found}

    def vanished(self, partitions: Iterable[str]) -> set[str]:
        """Which of ``partitions`` the broker's metadata no longer lists (their topic was deleted)."""
        current = set(self.partitions())
        return {key for key in partitions if key not in current}

    def default_store(self) -> OffsetStore:
        """The consumer group ``group_id``, or each query's own (:class:`PerQueryStore`) when none was named."""
        if self.per_query_group:
            return PerQueryStore(
                self.group_id,
                partial(
                    KafkaGroupStore, self.config, partitions=self.partitions, request_timeout_s=self.request_timeout_s
                ),
            )
        return KafkaGroupStore(self.config, self.group_id, self.partitions, self.request_timeout_s)

    def is_transient(self, error: BaseException) -> bool:
        return is_transient_kafka_error(error)

    # -- executor side ---------------------------------------------------------------------------------------
    def read_range(
        self, partition: str, start: int, end: int, on_data_loss: DataLossHandler
    ) -> Iterator[pa.RecordBatch]:
        topic, index = split_key(partition)
        if self._arrow_schema is None:
            self._arrow_schema = arrow_schema(self.schema())
        with pooled_consumer(self.config) as consumer:
            low, high = self._watermarks(consumer, topic, index)
            if high < end:
                self._log_ends_early(partition, start, end, high, on_data_loss)
                return
            if low > start:
                on_data_loss.report(
                    f"offsets [{start}, {min(low, end)}) of {self.describe(partition)} were deleted (retention) "
                    "before they were read"
                )
                start = low
            if start >= end:
                return
            consumer.assign([TopicPartition(topic, index, start)])
            yield from self._consume(consumer, topic, index, start, end, partition, on_data_loss)

    def _log_ends_early(
        self, partition: str, position: int, end: int, high: int, on_data_loss: DataLossHandler
    ) -> None:
        """The log of ``partition`` ends at ``high``, before the planned ``end``: its topic was deleted and created
        again (or the partition truncated) after the batch was planned, so ``[position, end)`` is not there to read.
        As Spark's Kafka source, fail (``failOnDataLoss=true``) or skip the rest of the range with a warning; the
        next batch's plan moves the position to the new log's first offset, so its records are read once."""
        on_data_loss.report(
            f"offsets [{position}, {end}) of {self.describe(partition)} are no longer in the log, which ends at "
            f"{high}: its topic was deleted and created again (or the partition truncated) after the batch was "
            "planned; the next batch reads the partition from its first offset"
        )

    def _low_watermark(self, consumer: Any, topic: str, index: int) -> int:
        """First available offset (:meth:`_watermarks`)."""
        return self._watermarks(consumer, topic, index)[0]

    def _watermarks(self, consumer: Any, topic: str, index: int) -> tuple[int, int]:
        """First available offset and the high watermark, asked of the partition's leader. A pooled consumer may
        not know a partition added since it last looked (its metadata is refreshed, 10 times at most); a transient
        error (the broker restarting, the partition's leader
        down) is retried until ``kafkaConsumer.pollTimeoutMs`` has passed, then fails the task with
        :class:`UnreachableError` (:meth:`_unreachable`)."""
        started = time.monotonic()
        deadline = started + self.poll_timeout_ms / 1000
        unknown = 0
        while True:
            timeout = max(0.1, min(self.request_timeout_s, deadline - time.monotonic()))
            try:
                if unknown:
                    consumer.list_topics(topic, timeout=timeout)  # refresh metadata
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, index), timeout=timeout)
                return int(low), int(high)
            except KafkaException as error:
                code = error.args[0].code()
                if code == KafkaError._UNKNOWN_PARTITION and unknown < 9:
                    unknown += 1
                elif not is_transient_code(error.args[0]):
                    raise
                elif time.monotonic() >= deadline:
                    raise self._unreachable(f"{topic}:{index}", "its first offset", started, error) from None
                else:
                    log.info("waiting for the broker of %s:%d (%s)", topic, index, error)
                time.sleep(0.2)

    def _unreachable(self, partition: str, what: str, started: float, error: object) -> UnreachableError:
        """The one-line error of a read that got no answer for ``kafkaConsumer.pollTimeoutMs`` (the partition's
        leader down, all brokers down), as Spark's Kafka source fails a task whose poll times out."""
        return UnreachableError(
            f"No broker answered for {self.describe(partition)} while reading {what} "
            f"({(time.monotonic() - started) * 1000:.0f} ms, kafkaConsumer.pollTimeoutMs={self.poll_timeout_ms}; "
            f"last error: {error}): its leader is down or unreachable. Spark retries the task "
            "(spark.task.maxFailures), then fails the query; restart it once the partition has a leader "
            "(raise kafkaConsumer.pollTimeoutMs to wait longer)"
        )

    def _consume(
        self, consumer: Any, topic: str, index: int, start: int, end: int, partition: str, on_data_loss: DataLossHandler
    ) -> Iterator[pa.RecordBatch]:
        """Read until ``end``: by records, by the partition-EOF offset, or by the consumer's position, whichever
        shows first that nothing below ``end`` is left (transaction markers, aborted or compacted records leave
        offsets that carry no record).

        Hot path: one partition is assigned, so records arrive in offset order; only the batch's ends and the
        (rare) error events are inspected in Python, never every record.
        """
        position = start
        waiting_since = time.monotonic()
        self._last_transient = None
        self._eof_at = None
        while position < end:
            batch, position = self._poll(consumer, topic, index, position, end, partition, on_data_loss)
            if batch is not None:
                waiting_since = time.monotonic()
                yield batch
                continue
            next_offset = consumer.position([TopicPartition(topic, index)])[0].offset
            if next_offset >= 0:
                position = max(position, next_offset)
            if position >= end:
                break
            timed_out = (time.monotonic() - waiting_since) * 1000 > self.poll_timeout_ms
            if timed_out and self._last_transient is not None:  # the broker said why: its leader is away
                # (asking it for the watermarks would only wait out the timeout a second time)
                what = f"offset {position} (batch ends at {end})"
                raise self._unreachable(partition, what, waiting_since, self._last_transient)
            if timed_out or (self._eof_at is not None and self._eof_at <= position):
                # The log ends before the batch does: was it deleted and created again under the read?
                self._eof_at = None
                high = self._watermarks(consumer, topic, index)[1]
                if high < end and position >= high:
                    self._log_ends_early(partition, position, end, high, on_data_loss)
                    return
            if timed_out:
                raise SpytQueueError(
                    f"Timed out after {self.poll_timeout_ms} ms reading {self.describe(partition)} at offset "
                    f"{position} (batch ends at {end}); raise kafkaConsumer.pollTimeoutMs if the broker is slow"
                )

    def _poll(
        self,
        consumer: Any,
        topic: str,
        index: int,
        position: int,
        end: int,
        partition: str,
        on_data_loss: DataLossHandler,
    ) -> tuple[pa.RecordBatch | None, int]:
        """One ``consume()`` call: the records in ``[position, end)`` as a batch (``None`` if it brought none) and
        the offset below which everything has now been seen. The collector is paused until the messages are gone
        (:func:`gc_paused`)."""
        with gc_paused():
            messages = consumer.consume(num_messages=min(self.consume_batch, end - position), timeout=1.0)
            errors = list(map(Message.error, messages))  # a C loop: no Python frame per record
            records = messages
            seen_to = position  # the partition-EOF offset, applied after this batch's records
            if any(map(operator.is_not, errors, itertools.repeat(None))):  # not errors.count: KafkaError == None raises
                records = list(itertools.compress(messages, [e is None for e in errors]))
                for message in messages:
                    error = message.error()
                    if error is None:
                        continue
                    if error.code() == KafkaError._PARTITION_EOF:
                        seen_to = max(seen_to, message.offset())  # everything before the EOF offset was seen
                        self._eof_at = message.offset()
                    elif is_transient_code(error):  # librdkafka reconnects; _consume bounds the wait
                        self._last_transient = str(error)
                        log.info("%s: %s; waiting for the broker", self.describe(partition), error)
                    elif error.code() == KafkaError._AUTO_OFFSET_RESET:
                        low = self._low_watermark(consumer, topic, index)
                        on_data_loss.report(
                            f"offsets [{position}, {min(low, end)}) of {self.describe(partition)} were deleted "
                            "(retention) while they were being read"
                        )
                        position = seen_to = max(position, low)
                        records = []
                        if position < end:
                            consumer.assign([TopicPartition(topic, index, position)])
                        break
                    else:
                        raise KafkaException(error)
            if records and (records[0].offset() < position or records[-1].offset() >= end):
                records = [m for m in records if position <= m.offset() < end]
            batch = self._to_arrow(records, topic, index) if records else None
            if records:
                seen_to = max(seen_to, records[-1].offset() + 1)
            del messages, records, errors  # freed by reference counting while the collector still sleeps
        return batch, seen_to

    def _to_arrow(self, messages: list[Any], topic: str, index: int) -> pa.RecordBatch:
        """Columns built whole; topic and partition are constants of the range, offsets a range when contiguous."""
        schema = self._arrow_schema
        assert schema is not None
        count = len(messages)
        first, last = messages[0].offset(), messages[-1].offset()
        if last - first + 1 == count:
            offsets = pa.array(np.arange(first, last + 1, dtype=np.int64))
        else:
            offsets = pa.array(list(map(Message.offset, messages)), pa.int64())
        columns = [
            pa.array(list(map(Message.key, messages)), pa.binary()),
            pa.array(list(map(Message.value, messages)), pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), count),
            pa.repeat(pa.scalar(index, pa.int32()), count),
            offsets,
        ]
        if self.include_timestamp:
            columns.extend(self._timestamps(messages, schema))
        if self.include_headers:
            headers = [None if not m.headers() else [{"key": k, "value": v} for k, v in m.headers()] for m in messages]
            columns.append(pa.array(headers, schema.field("headers").type))
        return pa.RecordBatch.from_arrays(columns, schema=schema)

    @staticmethod
    def _timestamps(messages: list[Any], schema: pa.Schema) -> list[pa.Array]:
        """The ``timestamp`` and ``timestampType`` columns (the costliest per-record call: ``Message.timestamp()``
        builds a tuple for each record)."""
        count = len(messages)
        pairs = np.fromiter(
            itertools.chain.from_iterable(map(Message.timestamp, messages)), dtype=np.int64, count=2 * count
        ).reshape(count, 2)
        kinds, millis = pairs[:, 0], pairs[:, 1]
        available = kinds != 0  # TIMESTAMP_NOT_AVAILABLE carries no time
        timestamps = pa.array(millis * 1000, mask=~available).cast(schema.field("timestamp").type)
        if (kinds == kinds[0]).all():
            types = pa.repeat(pa.scalar(int(kinds[0]) - 1 if kinds[0] else None, pa.int32()), count)
        else:
            types = pa.array((kinds - 1).astype(np.int32), mask=~available)
        return [timestamps, types]
