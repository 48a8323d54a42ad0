"""The interface every offset store implements, shared by the committer and ``ytqueue status``."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar


class OffsetStore(ABC):
    """Committed positions (the next unread row per partition) of one source for one group.

    The contract (checked by ``tests/contract/stores/``, run against each store's real server):

    * :meth:`committed` returns what is stored; partitions never committed are absent (or ``None``).
    * :meth:`advance` moves every partition of ``new`` from its value in ``old`` (``None`` = not committed yet)
      atomically: all partitions move or none does. If any stored value differs from ``old`` it raises
      :class:`~spyt_queue.errors.ConsumerConflictError` and changes nothing. ``new`` may hold partitions
      whose value does not change (``old[k] == new[k]``): a store whose entries expire when not rewritten
      rewrites them, others may skip them.
    * Transient failures (network, leader moves, lock conflicts) raise errors for which :meth:`is_transient` is
      true; the caller retries, and a retry after a lost response finds ``new`` already stored.
    * ``writer`` (the query's token, see :attr:`~spyt_queue.offsets.StreamOffset.writer`) is stored with the
      positions in the same atomic write by stores that can keep one (:attr:`KEEPS_WRITER`), and
      :meth:`written_by` tells whether the stored positions were written by that writer. Finding positions equal to
      one's own target proves nothing by itself: another query on the same group may have moved them there.
    * Stores for different groups (or different sources) on one server never see each other's positions.
    * Unreadable content (garbage written by someone else) raises :class:`~spyt_queue.errors.SpytQueueError`
      naming the place.
    """

    @abstractmethod
    def committed(self) -> dict[str, int | None]:
        """The committed position per partition key; partitions without one may be absent or ``None``."""

    #: Whether :meth:`advance` stores its ``writer`` with the positions, so that :meth:`written_by` can answer.
    KEEPS_WRITER: ClassVar[bool] = False

    @abstractmethod
    def advance(self, old: Mapping[str, int | None], new: Mapping[str, int], writer: str | None = None) -> None:
        """Atomically move the positions from ``old`` to ``new`` (compare-and-set across partitions), recording
        ``writer`` with them where the store keeps writers."""

    def written_by(self, writer: str, positions: Mapping[str, int]) -> bool | None:
        """Whether ``positions`` (all stored now) were last written by ``writer``: ``True``/``False`` for stores
        that keep writers, ``None`` when the store can not tell (it keeps none, or the positions were written
        without one)."""
        return None

    def bind_writer(self, writer: str | None) -> bool:
        """Serve the query whose offsets carry ``writer`` (called before positions are read or committed for an
        offset); whether the positions now live somewhere else. Only a query's own group depends on it
        (:class:`~spyt_queue.stores.per_query.PerQueryStore`); every other store is one place for any query."""
        return False

    @abstractmethod
    def is_transient(self, error: BaseException) -> bool:
        """Whether ``error`` is worth retrying."""

    def outcome_unknown(self, error: BaseException) -> bool:
        """Whether an :meth:`advance` that raised ``error`` may nevertheless have been applied (its reply lost):
        by default every transient error; a store whose server answers definite refusals says which are not."""
        return self.is_transient(error)

    @abstractmethod
    def describe(self) -> str:
        """Where the positions live, for messages and ``ytqueue status`` (e.g. ``zookeeper://h:2181/root``)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections (stores are created per query on the driver)."""

    def groups(self) -> list[str] | None:
        """The groups this store holds positions for, where the store can list them (``ytqueue status`` shows them
        when a group has none); ``None`` for a store that cannot."""
        return None

    def start_client(self) -> None:  # noqa: B027 - optional hook
        """Start what this process needs to talk to the store without talking to it (the Kudu client's JVM), so a
        caller timing the store's answer (``ytqueue status``) does not count a slow start-up as a silent server."""


class ConnectedStore(OffsetStore):
    """A store that opens its client on first use (under ``self._lock``) and travels pickled with its settings only:
    Spark ships the stream reader, and with it the store, between Python processes.

    Subclasses name the attributes holding live state in ``_LIVE`` with the value they get after unpickling.
    """

    _LIVE: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.__dict__.update(self._LIVE)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(self._LIVE)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
