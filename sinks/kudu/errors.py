"""Errors of the Kudu client: unavailable client jars, a failed call, a missing table, rows Kudu refused."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spyt_queue.errors import BadRecordError, SpytQueueError


class KuduUnavailableError(SpytQueueError):
    """JPype1 or the Kudu Java client jars are missing; the message says how to get them."""


class KuduError(SpytQueueError):
    """A Kudu call failed (the Java exception's message is included); ``transient`` when worth retrying (timed
    out, service unavailable, network error)."""

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class KuduTableNotFoundError(SpytQueueError):
    """A Kudu table does not exist (and was not to be created); the message names it."""


@dataclass(frozen=True)
class RowError:
    """One operation Kudu refused: its kind, the row's key, Kudu's status (``already_present``, ``not_found``...)."""

    kind: str
    key: str
    status: str
    message: str
    already_present: bool = False
    not_found: bool = False
    #: Timed out / service unavailable / network error: the operation may or may not have been applied.
    transient: bool = False

    def __str__(self) -> str:
        return f"{self.kind} ({self.key}): {self.message}"


class KuduWriteError(BadRecordError):
    """Kudu refused some operations of a flush; ``errors`` lists them (the message names the first ones)."""

    def __init__(self, message: str, errors: Sequence[RowError] = (), overflowed: bool = False) -> None:
        super().__init__(message)
        self.errors = list(errors)
        self.overflowed = overflowed
        #: Every refused operation failed for a transient reason (a retry may succeed).
        self.transient = bool(self.errors) and all(e.transient for e in self.errors)
