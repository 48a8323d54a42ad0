"""The micro-batch reader: plans offsets on the driver and commits them to the backend after the sink.

One long-lived instance per query run lives in Spark's driver-side Python runner; ``read`` runs on other
copies in executors, so every input partition carries all it needs.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from spyt_queue.backend import BatchJournal, PartitionBounds, QueueBackend
from spyt_queue.committer import Committer
from spyt_queue.errors import (
    AvailableNowTargetLostError,
    CommitError,
    ConsumerConflictError,
    OptionError,
    SpytQueueError,
    UnreachableError,
)
from spyt_queue.errors import error_text as _text
from spyt_queue.offsets import StreamOffset, new_writer_token
from spyt_queue.planner import OffsetPlanner
from spyt_queue.positions import resolve_positions
from spyt_queue.settings import ReaderSettings
from spyt_queue.spark.compat import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow
from spyt_queue.spark.errors import one_line_errors, one_line_rows
from spyt_queue.spark.partitions import (
    DataLossPolicy,
    JournaledPartition,
    PackedRanges,
    RangePartition,
    split_ranges,
)
from spyt_queue.spark.partitions import attach as attach_journal
from spyt_queue.stores.base import OffsetStore

log = logging.getLogger("spyt_queue.stream")

UNLIMITED = sys.maxsize


def _nothing_processed(offset: StreamOffset) -> bool:
    """Whether ``offset`` ends no processed row: an initial offset, or a batch 0 whose end is its start."""
    return offset.initial or (offset.batch_start is not None and dict(offset.batch_start) == dict(offset.positions))



class QueueStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Spark's view of a queue backend: offsets, admission control, AvailableNow and the delayed commit."""

    def __init__(self, backend: QueueBackend, settings: ReaderSettings, store: OffsetStore) -> None:
        self.backend = backend
        self.settings = settings
        self.store = store
        self.planner = OffsetPlanner(settings.max_rows_per_partition, describe=getattr(backend, "describe", str))
        self.committer = Committer(store)
        self._initial: dict[str, Any] | None = None
        self._target: dict[str, int] | None = None
        self._last_bounds: dict[str, PartitionBounds] | None = None
        self._last_batch_at: float | None = None  # when a trigger last fired; None: none yet in this run
        self._commits: ThreadPoolExecutor | None = None
        self._writer: str | None = None  # this run's token for offsets of checkpoints written before tokens
        self._batches_planned = 0  # batches planned by this reader (the batch journal: see _batch_journal)
        self._journal_wanted: bool | None = None
        backend.schema()  # fetched once here, then carried to executors inside every input partition

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_commits"] = None  # a thread of the driver's runner; executors never commit
        return state

    def _commit_in_background(self, offset: StreamOffset) -> Future[bool]:
        """Start committing ``offset`` on the reader's one commit thread (commits stay serial and in order)."""
        if self._commits is None:
            self._commits = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spyt-queue-commit")
        return self._commits.submit(self._commit, offset, "latestOffset")

    # -- offsets -----------------------------------------------------------------------------------------
    def _parse(self, data: dict[str, Any]) -> StreamOffset:
        return StreamOffset.from_json(data, expected_source=self.backend.source_id)

    @one_line_errors
    def initialOffset(self) -> dict[str, Any]:
        """Where a new query starts: the consumer's position by default (``startingOffsets``).

        Spark does not log this offset and asks again when it replays batch 0, so it is marked ``initial`` and
        the first batch's end journals it (``batch_start``). Committed positions found *ahead* of it are
        journaled as the query's ``baseline`` (see :class:`~spyt_queue.offsets.StreamOffset`).
        """
        if self._initial is None:
            writer = new_writer_token()
            self._bind(writer)
            bounds = self._fetch_bounds()
            committed = self._committed_positions()
            self.committer.remember(committed)
            positions = resolve_positions(self.settings.starting, bounds, committed, self.backend)
            for key, position in positions.items():
                if position > bounds[key].upper:
                    raise OptionError(
                        "startingOffsets",
                        f"offset {position} of {key} is beyond its end {bounds[key].upper}",
                    )
            ahead = {k: v for k, v in committed.items() if v is not None and k in positions and v > positions[k]}
            self._initial = StreamOffset(
                self.backend.source_id, positions, baseline=ahead, initial=True, writer=writer
            ).to_json()
            log.info("initial offset %s", self._initial)
        return self._initial

    def _bind(self, writer: str | None) -> None:
        """Tell the store which query an offset belongs to (a query without a named group commits under its own,
        named after its writer token: :class:`~spyt_queue.stores.per_query.PerQueryStore`)."""
        if self.store.bind_writer(writer):
            self.committer.forget()

    def _committed_positions(self) -> dict[str, int | None]:
        """The store's committed positions; a store that does not answer is :class:`UnreachableError` naming it."""
        try:
            return self.store.committed()
        except SpytQueueError:
            raise
        except Exception as error:
            if not self.store.is_transient(error):
                raise
            raise UnreachableError(
                f"Could not read the committed positions from {self.store.describe()} ({_text(error)}): is it "
                "running and reachable from the driver? The query starts once it answers"
            ) from None

    def getDefaultReadLimit(self) -> Any:
        """``maxOffsetsPerTrigger`` as Spark's ``ReadMaxRows``.

        Any configured cap or minimum yields a limit other than ``ReadAllAvailable``, so that
        ``ReadAllAvailable`` reaching :meth:`latestOffset` always means Trigger.Once (read everything, no delay).
        """
        if self.settings.max_rows_per_trigger:
            return ReadMaxRows(self.settings.max_rows_per_trigger)
        if self.settings.max_rows_per_partition or self.settings.min_rows_per_trigger:
            return ReadMaxRows(UNLIMITED)
        return ReadAllAvailable()

    @one_line_errors
    def prepareForTriggerAvailableNow(self) -> None:
        """Freeze the end of every partition: an AvailableNow run reads up to it and stops."""
        self._target = {key: b.upper for key, b in self.backend.bounds().items()}
        log.info("AvailableNow target %s", self._target)

    @one_line_errors
    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        """Plan the next batch after ``start``; first commit ``start`` (the sink has committed up to it).

        The initial offset of a fresh query is not committed: nothing has been processed yet, so a consumer
        that is ahead (``startingOffsets=earliest``) is only moved once the first batch is in the sink.
        """
        current = self._parse(start)
        # The commit of ``start`` and the bounds of the next batch are independent: they run side by side (the
        # commit on the reader's commit thread), and this call waits for both, so the commit still completes (or
        # fails) within the call, before anything is returned, exactly as if it ran first.
        pending = None if _nothing_processed(current) else self._commit_in_background(current)
        try:
            bounds = self._fetch_bounds()
        finally:
            committed = True if pending is None else pending.result()
        self._last_bounds = bounds
        if self._target is not None:
            self._check_target_in_log(current.positions, bounds)
        if isinstance(limit, ReadAllAvailable):
            planner, max_rows = OffsetPlanner(None, self.planner.describe), None
        else:
            planner = self.planner
            max_rows = getattr(limit, "max_rows", None)
            if max_rows is None:
                max_rows = self.settings.max_rows_per_trigger
            if max_rows is not None and max_rows >= UNLIMITED:
                max_rows = None
        if self._should_delay(current.positions, bounds, limit):
            return start
        plan = planner.plan(
            current.positions,
            bounds,
            DataLossPolicy(self.settings.fail_on_data_loss),
            max_rows=max_rows,
            target=self._target,
        )
        for note in plan.notes:
            log.info("%s: %s", self.backend.source_id, note)
        if plan.end == dict(current.positions) and not current.initial:
            if self._target is not None and not committed:
                raise CommitError(
                    f"The AvailableNow run of {self.backend.source_id} read everything up to its target, but its "
                    f"final commit of {dict(current.positions)} failed (see the log). The checkpoint holds the "
                    "progress: run the query again to commit it."
                )
            return start  # nothing new: keep the offset, so Spark plans no batch
        # The end of batch 0 keeps the whole baseline (the transactional sink reads it there to refuse a query that
        # started below its consumer); later ends keep the entries the query has not reached yet.
        baseline = (
            dict(current.baseline)
            if current.initial
            else {k: v for k, v in current.baseline.items() if plan.end.get(k, v) < v}
        )
        batch_start = dict(current.positions) if current.initial else None
        if current.writer is None and self._writer is None:
            self._writer = new_writer_token()  # a checkpoint written before writer tokens: this run draws one
        writer = current.writer or self._writer
        return StreamOffset(
            self.backend.source_id, plan.end, batch_start=batch_start, baseline=baseline, writer=writer
        ).to_json()

    def _check_target_in_log(self, positions: Mapping[str, int], bounds: dict[str, PartitionBounds]) -> None:
        """The AvailableNow target, frozen when the run started, must still be in the log where the run has not
        reached it: a partition now ending before it (a topic recreated with fewer records) or gone stops the run with
        :class:`AvailableNowTargetLostError`, whatever ``failOnDataLoss`` says, as Spark's Kafka source does."""
        assert self._target is not None
        lost = [
            f"{self.planner.describe(key)} ends at {bounds[key].upper}" if key in bounds else f"{key} no longer exists"
            for key, target in sorted(self._target.items())
            if positions.get(key, 0) < target and (key not in bounds or bounds[key].upper < target)
        ]
        if lost:
            raise AvailableNowTargetLostError(
                f"The AvailableNow run of {self.backend.source_id} can not read up to the target it froze when it "
                f"started ({dict(sorted(self._target.items()))}): {'; '.join(lost)} (recreated or truncated since). "
                "The run stops here instead of ending as if it had read everything; run it again to read what the "
                "log holds now"
            )

    def _fetch_bounds(self) -> dict[str, PartitionBounds]:
        """The partitions' bounds, retried ``fetchOffset.numRetries`` times ``fetchOffset.retryIntervalMs`` apart when
        the log is unreachable (as Spark's Kafka source does); then :class:`UnreachableError`.

        Never "no new batch this trigger": Spark would read that as caught up, and end an AvailableNow run in the
        middle of its backlog as if it had read everything.
        """
        attempts = self.settings.fetch_retries + 1
        interval = self.settings.fetch_retry_interval_ms
        for attempt in range(1, attempts + 1):
            try:
                return self.backend.bounds()
            except Exception as error:
                if not self.backend.is_transient(error):
                    raise
                if attempt == attempts:
                    short = " short of its AvailableNow target" if self._target is not None else ""
                    raise UnreachableError(
                        f"Could not fetch the ends of the partitions of {self.backend.source_id} in {attempts} "
                        f"attempt(s) {interval} ms apart ({_text(error)}): the query stops here{short}, with nothing "
                        "lost; restart it to resume from its checkpoint, and raise fetchOffset.numRetries or "
                        "fetchOffset.retryIntervalMs to ride out longer outages"
                    ) from None
                log.warning(
                    "could not fetch the bounds of %s (attempt %d of %d): %s; retrying in %d ms",
                    self.backend.source_id,
                    attempt,
                    attempts,
                    error,
                    interval,
                )
                time.sleep(interval / 1000)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _should_delay(self, start: dict[str, int], bounds: dict[str, PartitionBounds], limit: Any) -> bool:
        """``minOffsetsPerTrigger``: wait for enough new rows, but no longer than ``maxTriggerDelay`` since the last
        trigger that was not delayed. As in Spark's Kafka source (its last-trigger time starts at 0), the first trigger
        of a run, a start or a restart, is never delayed."""
        minimum = self.settings.min_rows_per_trigger
        if not minimum or self._target is not None:
            return False
        if isinstance(limit, ReadAllAvailable):
            return False
        backlog = sum(max(0, b.upper - max(start.get(key, b.lower), b.lower)) for key, b in bounds.items())
        now = time.monotonic()
        waited_ms = None if self._last_batch_at is None else (now - self._last_batch_at) * 1000
        if backlog >= minimum or waited_ms is None or waited_ms >= self.settings.max_trigger_delay_ms:
            self._last_batch_at = now
            return False
        log.info(
            "%d new rows < minOffsetsPerTrigger %d; delaying the batch (%.0f ms waited)", backlog, minimum, waited_ms
        )
        return True

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The end of every partition at the last trigger, shown in the query progress as ``latestOffset``."""
        if self._last_bounds is None:
            return None
        ends = StreamOffset(self.backend.source_id, {key: b.upper for key, b in self._last_bounds.items()}).to_json()
        group = getattr(self.store, "group", None) or getattr(self.store, "group_id", None)
        if isinstance(group, str) and group:
            ends["group"] = group  # where this query commits: what `ytqueue status --group` takes
        return ends

    # -- planning and reading ------------------------------------------------------------------------------
    @one_line_errors
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The input partitions for the rows between ``start`` and ``end``: one range per partition with rows, cut
        by ``maxRecordsPerPartition``/``minPartitions``, short ranges packed into shared tasks (``min_rows_per_task``).

        The first batch reads from the start journaled in its end (``batch_start``), not from ``start``: on a
        replay Spark hands a freshly computed initial offset, which may have moved since the first run.
        """
        begin, stop = self._parse(start), self._parse(end)
        first = stop.batch_start if stop.batch_start is not None else begin.positions
        partitions = split_ranges(
            self.backend,
            dict(first),
            dict(stop.positions),
            self.settings.fail_on_data_loss,
            self.settings.max_rows_per_task,
            self.settings.min_tasks,
            self.settings.min_rows_per_task,
        )
        journal = self._batch_journal()
        if journal is None:
            return partitions
        return attach_journal(partitions, journal, {"start": dict(start), "end": dict(end)})

    def _batch_journal(self) -> BatchJournal | None:
        """The backend's batch journal when a sink asks for it (:mod:`spyt_queue.yt.batch_journal`): always for the
        first batch this reader plans (Spark builds the sink's writer only after that), then as the journal says,
        asked once."""
        journal = self.backend.batch_journal()
        if journal is None:
            return None
        self._batches_planned += 1
        if self._batches_planned == 1:
            return journal
        if self._journal_wanted is None:
            try:
                self._journal_wanted = journal.requested()
            except Exception as error:
                if isinstance(error, SpytQueueError) or not self.backend.is_transient(error):
                    raise
                raise UnreachableError(
                    f"Could not check the batch journal of {self.backend.source_id} ({_text(error)}): the query stops "
                    "here with nothing lost; restart it to resume from its checkpoint"
                ) from None
        return journal if self._journal_wanted else None

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Read one range, or several packed ranges one after the other (on an executor)."""
        assert isinstance(partition, (RangePartition, PackedRanges, JournaledPartition))
        return one_line_rows(partition.read())

    # -- committing ------------------------------------------------------------------------------------------
    def _commit(self, offset: StreamOffset, caller: str) -> bool:
        """Advance the store to ``offset``; return ``False`` when a transient failure left it for the next try.

        The end of a batch 0 that read nothing (an initial offset, or an end equal to its ``batch_start``) is not
        committed: nothing is in the sink, and a consumer ahead of the query's start must not move back."""
        if _nothing_processed(offset):
            return True
        self._bind(offset.writer)
        try:
            self.committer.advance_to(dict(offset.positions), own=offset.baseline, writer=offset.writer)
        except ConsumerConflictError:
            raise
        except CommitError as error:
            remaining = self._without_vanished(offset)
            if remaining is not None:
                return self._commit(remaining, caller)
            if error.__cause__ is not None and self.store.is_transient(error.__cause__):
                log.error("%s: %s", caller, error)
                return False
            raise
        return True

    def _without_vanished(self, offset: StreamOffset) -> StreamOffset | None:
        """``offset`` without its partitions that no longer exist (a deleted Kafka topic), ``None`` if none vanished.

        Asked after a failed commit: a Kafka group refuses the offsets of a deleted topic's partitions. Their rows
        up to ``offset`` are in the sink, so the remaining partitions are committed; the rows they lost are reported
        by the planner of this trigger, following ``failOnDataLoss`` (fail, or warn and drop them).
        """
        try:
            gone = self.backend.vanished(offset.positions)
        except Exception as error:
            log.warning("could not check whether partitions of %s still exist: %s", self.backend.source_id, error)
            return None
        if not gone:
            return None
        log.warning(
            "%s: not committing the positions of %s: they no longer exist",
            self.backend.source_id,
            ", ".join(sorted(gone)),
        )
        return dataclasses.replace(offset, positions={k: v for k, v in offset.positions.items() if k not in gone})

    @one_line_errors
    def commit(self, end: dict[str, Any]) -> None:
        """Spark's (delayed) commit of a finished batch: advance the store to ``end`` (idempotent)."""
        self._commit(self._parse(end), "commit")

    def stop(self) -> None:
        """Nothing to flush: every commit has completed within the call that started it. Ends the commit thread."""
        if self._commits is not None:
            self._commits.shutdown(wait=True)
            self._commits = None
