"""The delayed, idempotent advance of the committed position (YT consumer or Kafka group).

Spark tells a source that a batch is safely in the sink in two ways: ``commit(end)`` of batch N when batch
N+1 is planned, and the ``start`` handed to ``latestOffset`` (the end of the last fully committed batch, on
every trigger, idle ones and the last AvailableNow check included). Both call :meth:`Committer.advance_to`.

Every advance is a compare-and-set from the position this query last saw, so another query moving the same
consumer is detected and reported instead of silently overwritten. Transient store errors are retried
with exponential backoff.

Positions found already at the target after a failed compare-and-set are this query's own write only when that is
*proven*: the store holds this query's writer token with them (:meth:`OffsetStore.written_by`), or, for a store
that keeps no writer, an earlier attempt of the same advance failed in a way that may have applied it (its reply was
lost). Otherwise two queries planning the same range on one consumer would each take the other's advance for their
own and both process every row: that is a :class:`ConsumerConflictError`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from spyt_queue.errors import CommitError, ConsumerConflictError
from spyt_queue.errors import error_text as _text
from spyt_queue.offsets import sorted_partitions
from spyt_queue.stores.base import OffsetStore

log = logging.getLogger("spyt_queue.commit")



class Committer:
    """Moves a store's committed positions forward to offsets Spark has committed."""

    def __init__(
        self,
        store: OffsetStore,
        retries: int = 5,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 10.0,
    ) -> None:
        self.store = store
        self.retries = retries
        self.backoff_seconds = backoff_seconds
        self.max_backoff_seconds = max_backoff_seconds
        self._known: dict[str, int | None] | None = None

    def forget(self) -> None:
        """Re-read the store's positions before the next advance (they now live elsewhere: a query's own group)."""
        self._known = None

    def remember(self, positions: Mapping[str, int | None]) -> None:
        """Record positions just read from the store (e.g. by ``initialOffset``) as the CAS baseline."""
        self._known = dict(positions)

    def _baseline(
        self, target: Mapping[str, int], own: Mapping[str, int], writer: str | None
    ) -> dict[str, int | None]:
        """The positions to compare-and-set from. After a restart they are re-read; a position ahead of the
        target is another query's progress unless it is ``own[key]``, the value the store held when this query
        started below it (journaled in the query's offsets). Positions found exactly at the target (beyond
        ``own``) must carry this query's writer where the store keeps writers."""
        if self._known is None:
            current = self.store.committed()
            for key in sorted_partitions(target):
                value = current.get(key)
                if value is not None and value > target[key] and value != own.get(key):
                    raise ConsumerConflictError(
                        f"The committed position of {key} is {value}, ahead of this query's committed "
                        f"offset {target[key]}: another query is advancing the same consumer, or the "
                        "checkpoint is older than the consumer. Use a separate consumer per query, or "
                        "delete the checkpoint to resume from the consumer."
                    )
            reached = {k: target[k] for k in target if current.get(k) == target[k] and own.get(k) != target[k]}
            if reached and writer and self.store.written_by(writer, reached) is False:
                raise ConsumerConflictError(
                    f"{self.store.describe()} is already at this query's committed offsets {reached}, but another "
                    "query wrote them: two queries are reading through the same consumer (or group). Use a "
                    "separate consumer per query."
                )
            self._known = current
        return self._known

    def _proven_own(self, new: Mapping[str, int], writer: str | None, maybe_applied: bool) -> bool:
        """Whether ``new``, found stored after a failed compare-and-set, was written by this query."""
        if not writer:  # a checkpoint written before writer tokens: only a possibly applied attempt is evidence
            return maybe_applied
        verdict = self.store.written_by(writer, new)
        if verdict is not None:
            return verdict
        # A store keeping writers stores this query's with every advance: positions without one are someone else's.
        return False if self.store.KEEPS_WRITER else maybe_applied

    def advance_to(
        self, target: Mapping[str, int], own: Mapping[str, int] | None = None, writer: str | None = None
    ) -> bool:
        """Advance the committed positions to ``target``; return whether anything moved.

        When any partition differs from its known position, the store gets *every* partition of ``target``
        (unchanged ones with ``old == new``): stores whose entries expire when not rewritten (Kafka groups)
        recommit them, others skip them. Idempotent: calling it again with the same target does nothing.
        ``own`` holds the store's positions from before this query started (see :meth:`_baseline`); ``writer`` is
        the query's writer token, stored with the positions where the store keeps writers (see the module docstring).
        Raises :class:`ConsumerConflictError` if someone else moved a position, :class:`CommitError` when
        retries are exhausted.
        """
        try:
            known = self._baseline(target, own or {}, writer)
        except ConsumerConflictError:
            raise
        except Exception as error:
            if not self.store.is_transient(error):
                raise
            raise CommitError(
                f"Could not read the committed positions from {self.store.describe()}: {_text(error)}. The checkpoint "
                "still holds the progress; the next trigger retries."
            ) from error
        if all(known.get(key) == target[key] for key in target):
            return False
        old = {key: known.get(key) for key in target}
        new = {key: int(target[key]) for key in target}
        moved = [key for key in sorted_partitions(new) if old[key] != new[key]]
        delay = self.backoff_seconds
        maybe_applied = False  # whether a failed attempt may have been applied (its reply lost)
        for attempt in range(1, self.retries + 2):
            try:
                self.store.advance(old, new, writer)
                break
            except ConsumerConflictError as conflict:
                current = self.store.committed()
                if all(current.get(key) == value for key, value in new.items()):
                    if self._proven_own(new, writer, maybe_applied):
                        # A lost reply, or the sink's transaction (transactional=true) moved it with the batch.
                        log.info("the committed position is already %s (this query's own advance)", new)
                        break
                    self._known = None
                    raise ConsumerConflictError(
                        f"{self.store.describe()} is already at {new}, the end of this query's batch, but this "
                        "query did not write it: another query reading through the same consumer (or group) "
                        "processed the same rows. Use a separate consumer per query."
                    ) from conflict
                self._known = None
                raise
            except Exception as error:
                maybe_applied = maybe_applied or self.store.outcome_unknown(error)
                if not self.store.is_transient(error) or attempt > self.retries:
                    # A timed-out attempt may have been applied: re-read the position before the next CAS.
                    self._known = None
                    raise CommitError(
                        f"Could not advance the committed position to {new} after {attempt} attempt(s): "
                        f"{_text(error)}. The checkpoint still holds the progress; the next trigger retries."
                    ) from error
                log.warning("advance to %s failed (attempt %d): %s; retrying in %.1fs", new, attempt, error, delay)
                time.sleep(delay)
                delay = min(delay * 2, self.max_backoff_seconds)
        known.update(new)
        log.info("advanced %s", ", ".join(f"{k}: {old[k]} -> {new[k]}" for k in moved))
        return True
