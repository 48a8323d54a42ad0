"""Stores that keep positions as a log of immutable commits (HBase, Kudu): the shared compare-and-set advance.

Each advance reads the newest commit ``n``, compares every partition of ``new`` with ``old``, and writes commit
``n + 1`` (every partition's position, in one atomic single-row write) with a put-if-absent. Two writers that read
the same ``n`` aim at the same commit ``n + 1``: exactly one creates it, the other raises
:class:`~spyt_queue.errors.ConsumerConflictError` without writing anything. The newest commit is the head, so there is
no pointer to keep consistent; old commits are pruned every :data:`PRUNE_EVERY` commits beyond ``keep``.
A store supplies how to find the newest commit, how to put one if absent, and how to prune.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from spyt_queue.errors import ConsumerConflictError, OptionError
from spyt_queue.redaction import shown, split_uri
from spyt_queue.stores.base import ConnectedStore

#: Old commits are pruned every this many commits.
PRUNE_EVERY = 16
#: Version of the JSON document each commit holds.
FORMAT_VERSION = 1


class CommitLogStore(ConnectedStore):
    """An :class:`~spyt_queue.stores.base.OffsetStore` whose positions are the newest of a log of commits."""

    #: What a commit is called in the store's documents and messages ("commit", "generation").
    NUMBER: ClassVar[str] = "commit"
    keep: int

    KEEPS_WRITER = True

    @abstractmethod
    def newest(self) -> tuple[int, dict[str, int]]:
        """``(number, positions)`` of the newest commit; ``(0, {})`` before the first one."""

    @abstractmethod
    def newest_document(self) -> tuple[int, dict[str, Any]]:
        """``(number, parsed JSON document)`` of the newest commit; ``(0, {})`` before the first one."""

    @abstractmethod
    def _put_if_absent(self, number: int, document: str) -> bool:
        """Write commit ``number`` holding ``document`` unless it exists; ``False`` when someone else wrote it."""

    @abstractmethod
    def _prune(self, newest: int) -> None:
        """Delete commits older than the newest ``keep`` (never the head); failures to prune are not fatal."""

    def _before_advance(self) -> None:
        """Called first by :meth:`advance` (a store may create its table here, or refuse a missing one)."""

    def _after_put(self, number: int, previous: int) -> None:
        """Called once commit ``number`` is written (a store may check it really became the head)."""

    def document(self, number: int, positions: Mapping[str, int], writer: str | None = None) -> str:
        """The JSON a commit holds: format version, its number, every partition's next offset and (when known) the
        writer token of the query that wrote it."""
        doc: dict[str, Any] = {
            "version": FORMAT_VERSION,
            self.NUMBER: number,
            "positions": dict(sorted(positions.items())),
        }
        if writer:
            doc["writer"] = writer
        return json.dumps(doc, separators=(",", ":"))

    def written_by(self, writer: str, positions: Mapping[str, int]) -> bool | None:
        """Whether the newest commit holds ``positions`` and was written by ``writer`` (``None``: no writer in it).

        The newest commit holds every partition, and a commit moving a partition carries its writer, so the newest
        one's writer wrote every value the committer compares with its target."""
        _, doc = self.newest_document()
        stored = doc.get("writer")
        if not stored:
            return None
        held = doc.get("positions") or {}
        return stored == writer and all(held.get(key) == value for key, value in positions.items())

    def committed(self) -> dict[str, int | None]:
        """Every partition of the newest commit, and its next offset."""
        return dict(sorted(self.newest()[1].items()))

    def advance(self, old: Mapping[str, int | None], new: Mapping[str, int], writer: str | None = None) -> None:
        """Write commit ``n + 1`` with every partition if commit ``n`` matches ``old`` (see the module docstring)."""
        if not new:
            return
        self._before_advance()
        number, current = self.newest()
        stale = {key: current.get(key) for key in new if current.get(key) != old.get(key)}
        if stale:
            raise ConsumerConflictError(
                f"{self.describe()}: expected positions { ({k: old.get(k) for k in stale}) }, found {stale} in "
                f"{self.NUMBER} {number}: another query (or tool) moved them. Use a separate group per query."
            )
        if all(current.get(key) == value for key, value in new.items()):
            return  # nothing moves
        mine = number + 1
        positions = {**current, **{key: int(value) for key, value in new.items()}}
        if not self._put_if_absent(mine, self.document(mine, positions, writer)):
            raise ConsumerConflictError(
                f"{self.describe()}: {self.NUMBER} {mine} was written by someone else while advancing from "
                f"{self.NUMBER} {number}; nothing was written. Another query (or tool) is moving the same "
                "positions: use a separate group per query."
            )
        self._after_put(mine, number)
        if self.keep and mine % PRUNE_EVERY == 0 and mine > self.keep:
            self._prune(mine)


def uri_flag(option: str, name: str, value: str) -> bool:
    """A boolean URI parameter (``create=true``)."""
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise OptionError(option, f"{name} must be true or false, got {shown(option, value)}")


def refuse_credentials(option: str, uri: str, why: str) -> None:
    """Refuse ``user[:password]@`` in the URI of a store that takes no credentials, saying ``why`` (the URI is
    shown with its password masked)."""
    parts = split_uri(uri)
    if parts is not None and parts.userinfo is not None:
        raise OptionError(option, f"{shown(option, uri)}: this store takes no credentials; {why}")
