"""Dead-letter targets: where the rows a source can not convert or a sink refuses go, instead of stopping the query.

Opt-in with ``deadLetter.path`` (a YTsaurus ordered dynamic table) or ``deadLetter.topic`` (a Kafka topic). Every
source and sink shares this module: a task collects its bad rows as :class:`DeadLetter` records and writes them
durably (``insert_rows`` returned / every Kafka record acknowledged) **before** it yields the good rows of the same
chunk (sources) or returns its commit message (sinks). So a micro-batch commits only when its dead letters are
durable, and a dead-letter target that can not be written fails the task: never a silent drop.

A replayed batch writes its dead letters again: delivery into the dead-letter target is at-least-once, and every
record carries its coordinates (``source``, ``partition``, ``offset``) to deduplicate on.

A dead letter's fields: ``source`` (the source id ``yt://...``/``kafka:...`` or the sink's target), ``stage``
(``source``/``sink``), ``partition`` (tablet, ``topic:partition``, or for a sink the source tablet / Spark
partition), ``offset`` (row index, Kafka offset, or the row's position in the task), ``error`` (one line),
``payload`` (the raw record: binary YSON of the row as read or as it was to be written) and ``time_us``.
In a Kafka topic the payload is the record's value, the key is ``source/partition/offset`` and the other fields are
headers ``deadletter.<field>``.
"""

from __future__ import annotations

import logging
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yt.yson as yson

from spyt_queue.errors import OptionError, SpytQueueError
from spyt_queue.options import Options
from spyt_queue.redaction import shown

log = logging.getLogger("spyt_queue.deadletter")

PATH_OPTION = "deadLetter.path"
TOPIC_OPTION = "deadLetter.topic"
CREATE_OPTION = "deadLetter.create"
PROXY_OPTION = "deadLetter.proxy"
TOKEN_OPTION = "deadLetter.token"
KAFKA_PREFIX = "deadLetter.kafka."
#: Options every source and sink accepts (plus ``deadLetter.kafka.*``).
DEAD_LETTER_OPTIONS = (PATH_OPTION, TOPIC_OPTION, CREATE_OPTION, PROXY_OPTION, TOKEN_OPTION)

#: Schema of a dead-letter table (``deadLetter.create=true`` creates it; an existing one needs these columns).
DEAD_LETTER_SCHEMA: list[dict[str, Any]] = [
    {"name": "source", "type": "string"},
    {"name": "stage", "type": "string"},
    {"name": "partition", "type": "string"},
    {"name": "offset", "type": "int64"},
    {"name": "error", "type": "string"},
    {"name": "payload", "type": "string"},
    {"name": "time_us", "type": "int64"},
]
_ERROR_LIMIT = 4000


class DeadLetterError(SpytQueueError):
    """Dead letters could not be written durably: the task fails and its batch is not committed."""

    code = "DEAD_LETTER_FAILED"


@dataclass(frozen=True)
class DeadLetter:
    """One bad record with its coordinates, the reason and the raw payload."""

    source: str
    stage: str
    partition: str
    offset: int | None
    error: str
    payload: bytes
    time_us: int = field(default_factory=lambda: int(time.time() * 1_000_000))

    def row(self) -> dict[str, Any]:
        """The record as a row of the dead-letter table."""
        return {
            "source": self.source,
            "stage": self.stage,
            "partition": self.partition,
            "offset": self.offset,
            "error": self.error[:_ERROR_LIMIT],
            "payload": self.payload,
            "time_us": self.time_us,
        }


def _plain(value: Any) -> Any:
    """``value`` with what YSON can not hold (dates, decimals, ...) turned into text."""
    if value is None or isinstance(value, (bool, int, float, bytes, str)):
        return value
    if isinstance(value, Mapping):
        return {(k if isinstance(k, (str, bytes)) else str(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


def yson_payload(record: Any) -> bytes:
    """A record (a row as a mapping, parsed YSON included) as binary YSON, the payload of its dead letter."""
    try:
        return yson.dumps(record, yson_format="binary")
    except Exception:  # a Python value YSON has no type for: keep it as text
        return yson.dumps(_plain(record), yson_format="binary")


class DeadLetterTarget(ABC):
    """Where dead letters go. Picklable (configuration only); clients are created in each process."""

    @abstractmethod
    def describe(self) -> str:
        """``yt://path`` or ``kafka:topic``, for messages."""

    @abstractmethod
    def check(self) -> None:
        """On the driver, before the query starts: the target exists (or is created with ``deadLetter.create``)."""

    @abstractmethod
    def write(self, letters: Sequence[DeadLetter]) -> None:
        """Write ``letters`` durably, or raise :class:`DeadLetterError`."""

    @abstractmethod
    def count(self) -> dict[str, int]:
        """Dead letters held, per partition of the target (for ``ytqueue status``)."""

    def bind(self, source: str, stage: str) -> BoundDeadLetters:
        """This target for records of ``source`` at ``stage`` (``source`` or ``sink``)."""
        return BoundDeadLetters(self, source, stage)


@dataclass
class BoundDeadLetters:
    """A target bound to a source (or sink target) and a stage: what readers and writers carry to executors."""

    target: DeadLetterTarget
    source: str
    stage: str

    def letter(self, partition: Any, offset: int | None, error: BaseException | str, payload: bytes) -> DeadLetter:
        """A dead letter of this source."""
        text = str(error) if not isinstance(error, BaseException) else f"{type(error).__name__}: {error}"
        return DeadLetter(self.source, self.stage, str(partition), offset, " ".join(text.split()), payload)

    def write(self, letters: Sequence[DeadLetter], where: str = "") -> int:
        """Write ``letters`` durably (nothing to do when empty) and log how many; returns the count."""
        if not letters:
            return 0
        try:
            self.target.write(letters)
        except DeadLetterError:
            raise
        except Exception as error:
            raise DeadLetterError(
                f"Could not write {len(letters)} dead letter(s) of {self.source}{where} to "
                f"{self.target.describe()}: {error}. The batch is not committed; first bad record: "
                f"{letters[0].error}"
            ) from error
        log.warning(
            "dead-lettered %d row(s) of %s%s to %s (first: partition %s, offset %s: %s)",
            len(letters),
            self.source,
            where,
            self.target.describe(),
            letters[0].partition,
            letters[0].offset,
            letters[0].error,
        )
        return len(letters)


class YtDeadLetterTarget(DeadLetterTarget):
    """An ordered dynamic table, appended to with ``insert_rows`` (durable when it returns)."""

    def __init__(self, connection: Any, path: str, create: bool = False) -> None:
        self.connection = connection
        self.path = path
        self.create = create

    def describe(self) -> str:
        return f"yt:{self.path}"

    def check(self) -> None:
        client = self.connection.client()
        if not client.exists(self.path):
            if not self.create:
                raise OptionError(
                    PATH_OPTION,
                    f"{self.path} does not exist on {self.connection.proxy}: create an ordered dynamic table with "
                    f"columns {', '.join(c['name'] for c in DEAD_LETTER_SCHEMA)} (ytqueue create-table {self.path} "
                    f"--schema {_schema_text()}) or set deadLetter.create=true",
                )
            from spyt_queue.yt.admin import create_queue

            create_queue(client, self.path, DEAD_LETTER_SCHEMA)
            log.info("created dead-letter table %s", self.path)
            return
        attrs = client.get(self.path, attributes=["type", "dynamic", "sorted", "schema", "tablet_state"]).attributes
        if attrs.get("type") != "table" or not attrs.get("dynamic") or attrs.get("sorted"):
            raise OptionError(PATH_OPTION, f"{self.path} is not an ordered dynamic table (a queue)")
        if attrs.get("tablet_state") != "mounted":
            raise OptionError(PATH_OPTION, f"{self.path} is not mounted (tablet_state={attrs.get('tablet_state')})")
        names = {str(c.get("name")) for c in attrs.get("schema", [])}
        missing = [c["name"] for c in DEAD_LETTER_SCHEMA if c["name"] not in names]
        if missing:
            raise OptionError(PATH_OPTION, f"{self.path} lacks the dead-letter column(s) {', '.join(missing)}")

    def write(self, letters: Sequence[DeadLetter]) -> None:
        self.connection.client().insert_rows(self.path, [letter.row() for letter in letters])

    def count(self) -> dict[str, int]:
        client = self.connection.client()
        tablets = int(client.get(f"{self.path}/@tablet_count"))
        infos = client.get_tablet_infos(self.path, list(range(tablets)))["tablets"]
        return {str(i): int(t["total_row_count"]) - int(t["trimmed_row_count"]) for i, t in enumerate(infos)}


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
        return {"bootstrap.servers": self.config["bootstrap.servers"]}

    def check(self) -> None:
        from spyt_queue.kafka.clients import admin_client

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
        from confluent_kafka.admin import NewTopic

        futures = admin.create_topics([NewTopic(self.topic, num_partitions=1)], request_timeout=self.timeout_s)
        try:
            futures[self.topic].result(timeout=self.timeout_s)
        except Exception as error:
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise
        log.info("created dead-letter topic %s", self.topic)

    def write(self, letters: Sequence[DeadLetter]) -> None:
        from spyt_queue.kafka.clients import pooled_producer

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
                    ("deadletter.error", letter.error[:_ERROR_LIMIT].encode()),
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
        from confluent_kafka import TopicPartition

        from spyt_queue.kafka.clients import pooled_consumer

        with pooled_consumer(self._admin_config()) as consumer:
            metadata = consumer.list_topics(self.topic, timeout=self.timeout_s).topics.get(self.topic)
            if metadata is None or metadata.error is not None:
                raise SpytQueueError(f"dead-letter topic {self.topic!r} does not exist")
            result = {}
            for index in sorted(metadata.partitions):
                low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, index), timeout=self.timeout_s)
                result[f"{self.topic}:{index}"] = int(high) - int(low)
            return result


def _schema_text() -> str:
    return ",".join(f"{c['name']}:{c['type']}" for c in DEAD_LETTER_SCHEMA)


def is_configured(options: Options) -> bool:
    """Whether the options name a dead-letter target."""
    return PATH_OPTION in options or TOPIC_OPTION in options


def dead_letter_target(options: Options) -> DeadLetterTarget | None:
    """The target the options name, validated (not yet checked on its server), or ``None`` (fail on bad rows).

    ``deadLetter.path`` connects with ``deadLetter.proxy``/``deadLetter.token``, else the query's ``proxy``/``token``
    (and ``yt.*``), else ``YT_PROXY``. ``deadLetter.topic`` produces with ``deadLetter.kafka.*``, whose
    ``bootstrap.servers`` defaults to the query's ``kafka.bootstrap.servers``."""
    path, topic = options.get_str(PATH_OPTION), options.get_str(TOPIC_OPTION)
    create = options.get_bool(CREATE_OPTION, False)
    kafka = options.with_prefix(KAFKA_PREFIX)
    if path and topic:
        raise OptionError(PATH_OPTION, "give either deadLetter.path (a YT table) or deadLetter.topic (Kafka), not both")
    if not path and not topic:
        for option in (CREATE_OPTION, PROXY_OPTION, TOKEN_OPTION):
            if option in options:
                raise OptionError(option, "needs deadLetter.path or deadLetter.topic: say where bad rows go")
        if kafka:
            raise OptionError(KAFKA_PREFIX + next(iter(kafka)), "needs deadLetter.topic")
        return None
    if path:
        if kafka:
            raise OptionError(KAFKA_PREFIX + next(iter(kafka)), "applies to deadLetter.topic, not deadLetter.path")
        from spyt_queue.yt.options import connection_from_options, plain_cypress_path

        path = plain_cypress_path(PATH_OPTION, path)
        raw = options.raw()
        proxy = options.get_str(PROXY_OPTION) or options.get_str("proxy", None, "cluster") or os.environ.get("YT_PROXY")
        if not proxy:
            raise OptionError(PROXY_OPTION, "deadLetter.path needs a YT proxy: set deadLetter.proxy (or YT_PROXY)")
        raw["proxy"] = proxy
        token = options.get_str(TOKEN_OPTION)
        if token:
            raw["token"] = token
        return YtDeadLetterTarget(connection_from_options(Options(raw)), path, create)
    assert topic is not None
    for option in (PROXY_OPTION, TOKEN_OPTION):
        if option in options:
            raise OptionError(option, "applies to deadLetter.path, not deadLetter.topic")
    if not topic.strip() or any(ch.isspace() for ch in topic):
        raise OptionError(TOPIC_OPTION, f"not a valid topic name: {shown(TOPIC_OPTION, topic)}")
    config = dict(kafka)
    if "bootstrap.servers" not in config:
        servers = options.get_str("kafka.bootstrap.servers")
        if not servers:
            raise OptionError(
                KAFKA_PREFIX + "bootstrap.servers",
                "deadLetter.topic needs brokers: set deadLetter.kafka.bootstrap.servers (a Kafka query's "
                "kafka.bootstrap.servers is used when present)",
            )
        config["bootstrap.servers"] = servers
    return KafkaDeadLetterTarget(config, topic.strip(), create)


def prepared_target(options: Options) -> DeadLetterTarget | None:
    """:func:`dead_letter_target`, checked on its server (created with ``deadLetter.create=true``)."""
    target = dead_letter_target(options)
    if target is not None:
        target.check()
    return target


def sink_dead_letters(options: Options, target_name: str, refused_by: str = "") -> BoundDeadLetters | None:
    """The dead letters of a sink writing to ``target_name``, checked on their server; ``refused_by`` names an
    option the dead-letter target can not be combined with (``producer_path``: a diverted row would leave a gap in
    the producer session's sequence)."""
    target = dead_letter_target(options)
    if target is None:
        return None
    if refused_by:
        option = PATH_OPTION if PATH_OPTION in options else TOPIC_OPTION
        raise OptionError(
            option,
            f"can not be combined with {refused_by}: exactly-once producer sessions need every source row, a bad row "
            "stops the query there",
        )
    target.check()
    return target.bind(target_name, "sink")


def dead_letter_count(messages: Iterable[Any]) -> int:
    """Dead letters reported by the commit messages of a batch's tasks (``dead_letters`` attribute)."""
    return sum(int(getattr(m, "dead_letters", 0) or 0) for m in messages if m is not None)


def log_batch(messages: Iterable[Any], batch_id: int | None, target: BoundDeadLetters | None) -> int:
    """On the driver at commit: log the batch's dead-letter count (one line when there are any); returns it."""
    count = dead_letter_count(messages)
    if count and target is not None:
        what = f"micro-batch {batch_id}" if batch_id is not None else "write"
        log.warning("%s: %d row(s) dead-lettered to %s", what, count, target.target.describe())
    return count


def task_partition() -> str:
    """``spark-partition-N`` inside a Spark task, else ``this task``: a sink record's partition when the rows do not
    carry the source's service columns."""
    try:
        from pyspark import TaskContext

        context = TaskContext.get()
    except Exception:  # pragma: no cover - pyspark is always importable where this runs
        context = None
    return f"spark-partition-{context.partitionId()}" if context is not None else "this task"


def batch_coordinates(batch: Any, first_row: int) -> list[tuple[str, int]]:
    """Per row of an Arrow ``batch`` (rows ``first_row``... of this task): the source tablet and row index when the
    batch carries the ``ytqueue`` service columns (and they are set), else (:func:`task_partition`, the row's
    position in the task). The ``partition``/``offset`` of a sink's dead letters."""
    from spyt_queue.yt.schema import SERVICE_ROW_COLUMN, SERVICE_TABLET_COLUMN

    task = task_partition()
    names = batch.schema.names
    if SERVICE_TABLET_COLUMN in names and SERVICE_ROW_COLUMN in names:
        tablets = batch.column(names.index(SERVICE_TABLET_COLUMN)).to_pylist()
        rows = batch.column(names.index(SERVICE_ROW_COLUMN)).to_pylist()
        return [
            (str(t), int(r)) if t is not None and r is not None else (task, first_row + i)
            for i, (t, r) in enumerate(zip(tablets, rows, strict=True))
        ]
    return [(task, first_row + i) for i in range(batch.num_rows)]
