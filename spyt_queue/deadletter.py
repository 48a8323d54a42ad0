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

This module holds what every source and sink shares: the records, the target interface, the bound target tasks
carry and the per-batch helpers. The targets live beside their technology (:mod:`spyt_queue.yt.deadletter`,
:mod:`spyt_queue.kafka.deadletter`); :mod:`spyt_queue.deadletter_targets` builds one from a query's options.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yt.yson as yson

from spyt_queue.errors import SpytQueueError
from spyt_queue.options import READ, WRITE, Option, Options
from spyt_queue.records import row_coordinates, task_label, task_partition

log = logging.getLogger("spyt_queue.deadletter")

PATH_OPTION = "deadLetter.path"
TOPIC_OPTION = "deadLetter.topic"
CREATE_OPTION = "deadLetter.create"
PROXY_OPTION = "deadLetter.proxy"
TOKEN_OPTION = "deadLetter.token"
KAFKA_PREFIX = "deadLetter.kafka."
_EVERYWHERE = (*READ, WRITE)
#: Options every YT source and every sink accepts (plus ``deadLetter.kafka.*``, :data:`DEAD_LETTER_KAFKA`).
DEAD_LETTER_OPTIONS = (
    Option(PATH_OPTION, "YT ordered dynamic table for records that are refused", modes=_EVERYWHERE),
    Option(TOPIC_OPTION, "Kafka topic for records that are refused (instead of a table)", modes=_EVERYWHERE),
    Option(CREATE_OPTION, "create the table or topic when missing", kind="bool", default=False, modes=_EVERYWHERE),
    Option(PROXY_OPTION, "cluster of deadLetter.path; default: the query's proxy", modes=_EVERYWHERE),
    Option(
        TOKEN_OPTION,
        "token for deadLetter.proxy; default: the query's token on the query's cluster, else YT_TOKEN",
        modes=_EVERYWHERE,
    ),
)
#: librdkafka settings of the dead-letter producer (checked by :mod:`spyt_queue.deadletter_targets`).
DEAD_LETTER_KAFKA = Option(
    KAFKA_PREFIX, "librdkafka settings of the dead-letter producer", kind="prefix", modes=_EVERYWHERE
)

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
#: Characters of a dead letter's ``error`` that are kept.
ERROR_LIMIT = 4000


class DeadLetterError(SpytQueueError):
    """Dead letters could not be written durably: the task fails and its batch is not committed."""


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
            "error": self.error[:ERROR_LIMIT],
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


class DeadLetterCollector:
    """One sink task's bad records on their way to its dead-letter target: what every sink's dead-letter path
    shares. A sink creates one per task only when ``deadLetter.*`` is configured (its plain path, without a
    target, has no per-row cost and fails on the first bad record with its own error); each bad record is added
    with its coordinates (``partition``, ``offset``: :mod:`spyt_queue.records`), the one-line reason and the
    record, and :meth:`flush` writes them all durably before the task returns its commit message, whose
    ``dead_letters`` is the count it returns."""

    def __init__(self, dead: BoundDeadLetters) -> None:
        """``dead``: the task's bound target (``WriteTask.dead_letters``)."""
        self.dead = dead
        self.letters: list[DeadLetter] = []
        self._task: str | None = None

    def __len__(self) -> int:
        return len(self.letters)

    @property
    def task(self) -> str:
        """The task's ``spark-partition-N`` (:func:`~spyt_queue.records.task_partition`), looked up once: the
        ``partition`` of records without the source's service columns."""
        if self._task is None:
            self._task = task_partition()
        return self._task

    def add(self, where: tuple[str, int], error: BaseException | str, record: Any) -> None:
        """A bad record at ``where`` (``partition``, ``offset``); ``record`` is the row (a mapping, kept as binary
        YSON: :func:`yson_payload`) or its payload as ``bytes``."""
        payload = record if isinstance(record, bytes) else yson_payload(record)
        self.letters.append(self.dead.letter(where[0], where[1], error, payload))

    def add_row(self, row: Mapping[str, Any], position: int, error: BaseException | str) -> None:
        """A bad row at ``position`` in the task, at the coordinates it carries
        (:func:`~spyt_queue.records.row_coordinates`)."""
        self.add(row_coordinates(row, position, self.task), error, row)

    def add_batch_row(self, where: tuple[str, int], error: BaseException | str, batch: Any, position: int) -> None:
        """Row ``position`` of an Arrow ``batch``, at ``where``."""
        self.add(where, error, batch.slice(position, 1).to_pylist()[0])

    def flush(self) -> int:
        """Write the collected letters durably (:meth:`BoundDeadLetters.write`, nothing when there are none) and
        return how many: the commit message's ``dead_letters``. A target that can not be written raises
        :class:`DeadLetterError`, failing the task, so its batch is not committed."""
        written = self.dead.write(self.letters, f" ({task_label()})")
        self.letters = []
        return written


def is_configured(options: Options) -> bool:
    """Whether the options name a dead-letter target."""
    return PATH_OPTION in options or TOPIC_OPTION in options


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
