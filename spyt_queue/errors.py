"""Typed exceptions of spyt-queue: callers branch on the class; every message names what failed and the fix."""

from __future__ import annotations


class SpytQueueError(Exception):
    """Base class of every error raised by spyt-queue itself."""


class OptionError(SpytQueueError, ValueError):
    """An option of a source or sink is missing, malformed or conflicts with another one."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(f"Invalid option '{option}': {message}")


class DataLossError(SpytQueueError):
    """Rows that the query should have read are gone (trimmed, expired, or the partition vanished)."""


class AvailableNowTargetLostError(DataLossError):
    """An AvailableNow run's frozen target is no longer in the log (a topic recreated with fewer records, a
    partition gone): the run can not read up to it, and must not end as if it had."""


class ConsumerConflictError(SpytQueueError):
    """The committed position (YT consumer or Kafka group) was moved by someone else than this query."""


class CommitError(SpytQueueError):
    """Advancing the committed position failed permanently (after retries)."""


class SchemaMismatchError(SpytQueueError):
    """A DataFrame does not fit the schema of the table it is written to."""


class BadRecordError(SpytQueueError):
    """A record could not be converted or written; the message names the record."""


class ProducerSequenceError(SpytQueueError):
    """Rows pushed through a producer session would leave a gap in its sequence numbers (rows YT would then skip
    for good): one source tablet split across tasks, a repartition, or rows missing from the input."""


class UnreachableError(SpytQueueError):
    """A YTsaurus proxy or Kafka broker did not answer in time (``connect_timeout``, a Kafka request timeout); the
    message names it. Transient: a server that is restarting answers again."""


class ConsumerNotRegisteredError(SpytQueueError):
    """The consumer table of a stream is missing or not registered for the queue; the message says how to fix it."""


class SourceUnavailableError(SpytQueueError):
    """A data source of spyt-queue cannot run in this Python environment: an extra is not installed or its module
    failed to import; the message names the format, what failed and the ``pip install`` that fixes it."""


def error_text(error: BaseException) -> str:
    """``error`` for a one-line message: its text with whitespace folded, and its type always named, since some
    clients raise errors without text (kazoo's ``NoAuthError()``, ``KazooTimeoutError()``)."""
    text = " ".join(str(error).split())
    name = type(error).__name__
    return f"{name}: {text}" if text and name not in text else text or name
