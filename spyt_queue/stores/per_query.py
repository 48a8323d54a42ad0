"""A query's own group: the default of a Kafka query that names none (no ``kafka.group.id``, no ``offsets.group``).

Spark's Kafka source draws a group per query, so two queries with their own checkpoints never interfere. Ours
commits, so its group must also be stable across the restarts of one query: it is named after the query's writer
token (:attr:`~spyt_queue.offsets.StreamOffset.writer`), drawn when the query starts and kept by its checkpoint in
every offset. The store is built before any offset exists; the stream reader tells it the writer of every offset
it handles (:meth:`~spyt_queue.stores.base.OffsetStore.bind_writer`) before it reads or commits positions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from spyt_queue.stores.base import OffsetStore

log = logging.getLogger("spyt_queue.stream")

#: The one line each start of such a query logs, a warning so that it shows in the driver log (Spark copies its Python
#: streaming runner's stderr there) without any logging set up, on every PySpark line (4.0's progress does not show
#: the group).
GROUP_LINE = (
    "spyt-queue: this query commits under its own group %s, kept by its checkpoint "
    "(kafka.group.id, or offsets.group with offsets.store, names one instead)"
)

#: Characters of the writer token in a group name: 64 bits, unique among the queries of one subscription.
WRITER_CHARS = 16


def query_group(base: str, writer: str | None) -> str:
    """The group of the query whose offsets carry ``writer``: ``<base>-<writer's first 16 characters>``; ``base``
    itself for a checkpoint written before writer tokens (it committed under ``base``, and goes on doing so)."""
    return f"{base}-{writer[:WRITER_CHARS]}" if writer else base


def is_query_group(base: str, group: str) -> bool:
    """Whether ``group`` is the group :func:`query_group` names for some query of ``base`` (a store's listing, read
    by ``ytqueue status`` when it is not told which query)."""
    return group.startswith(f"{base}-")


class PerQueryStore(OffsetStore):
    """The store ``open_group(group)`` of the group :func:`query_group` names for the bound writer.

    ``open_group`` must pickle (a :func:`functools.partial` of a class or a module-level function): the store
    travels with the stream reader between Spark's Python processes.
    """

    def __init__(self, base: str, open_group: Callable[[str], OffsetStore]) -> None:
        self.base = base
        self.open_group = open_group
        self.group = base
        self._store: OffsetStore | None = None

    def bind_writer(self, writer: str | None) -> bool:
        """Serve the query whose offsets carry ``writer``; whether this changed the group."""
        group = query_group(self.base, writer)
        if self._store is not None and group == self.group:
            return False
        if self._store is not None:
            self._store.close()
        self.group, self._store = group, self.open_group(group)
        if writer:  # once per start of the query: the line that tells where it commits (`ytqueue status --group`)
            log.warning(GROUP_LINE, group)
        return True

    @property
    def store(self) -> OffsetStore:
        if self._store is None:
            self.bind_writer(None)
        assert self._store is not None
        return self._store

    @property
    def KEEPS_WRITER(self) -> bool:  # type: ignore[override]
        return self.store.KEEPS_WRITER

    def committed(self) -> dict[str, int | None]:
        return self.store.committed()

    def advance(self, old: Mapping[str, int | None], new: Mapping[str, int], writer: str | None = None) -> None:
        self.store.advance(old, new, writer)

    def written_by(self, writer: str, positions: Mapping[str, int]) -> bool | None:
        return self.store.written_by(writer, positions)

    def is_transient(self, error: BaseException) -> bool:
        return self.store.is_transient(error)

    def outcome_unknown(self, error: BaseException) -> bool:
        return self.store.outcome_unknown(error)

    def describe(self) -> str:
        return self.store.describe()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def start_client(self) -> None:
        self.store.start_client()
