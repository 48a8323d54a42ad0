"""Typed exceptions of spyt-queue; each carries a stable ``code`` so callers can branch on it."""

from __future__ import annotations


class SpytQueueError(Exception):
    """Base class of every error raised by spyt-queue itself."""

    code = "SPYT_QUEUE_ERROR"


class OptionError(SpytQueueError, ValueError):
    """An option of a source or sink is missing, malformed or conflicts with another one."""

    code = "INVALID_OPTION"

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(f"Invalid option '{option}': {message}")


class DataLossError(SpytQueueError):
    """Rows that the query should have read are gone (trimmed, expired, or the partition vanished)."""

    code = "DATA_LOSS"


class ConsumerConflictError(SpytQueueError):
    """The committed position (YT consumer or Kafka group) was moved by someone else than this query."""

    code = "CONSUMER_CONFLICT"


class CommitError(SpytQueueError):
    """Advancing the committed position failed permanently (after retries)."""

    code = "COMMIT_FAILED"


class SchemaMismatchError(SpytQueueError):
    """A DataFrame does not fit the schema of the table it is written to."""

    code = "SCHEMA_MISMATCH"


class BadRecordError(SpytQueueError):
    """A record could not be converted or written; the message names the record."""

    code = "BAD_RECORD"


class ProducerSequenceError(SpytQueueError):
    """Rows pushed through a producer session would leave a gap in its sequence numbers (rows YT would then skip
    for good): one source tablet split across tasks, a repartition, or rows missing from the input."""

    code = "PRODUCER_SEQUENCE"


class UnreachableError(SpytQueueError):
    """A YTsaurus proxy or Kafka broker did not answer in time (``connect_timeout``, a Kafka request timeout); the
    message names it. Transient: a server that is restarting answers again."""

    code = "UNREACHABLE"


class ConsumerNotRegisteredError(SpytQueueError):
    """The consumer table of a stream is missing or not registered for the queue; the message says how to fix it."""

    code = "CONSUMER_NOT_REGISTERED"


class SourceUnavailableError(SpytQueueError):
    """A data source of spyt-queue cannot run in this Python environment: an extra is not installed or its module
    failed to import; the message names the format, what failed and the ``pip install`` that fixes it."""

    code = "SOURCE_UNAVAILABLE"
