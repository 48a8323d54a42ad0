"""``read_mode=driver``: the stream read by the driver's Python runner, with no Python task on executors.

Spark's simple-reader path (``SimpleDataSourceStreamReader``, SPARK-47793): the runner calls :meth:`read` inside
``latestOffset``, sends the rows to the JVM, which keeps them in its block manager until the batch is committed;
executor tasks read that block. A batch then costs no Python task set-up, which is most of a small batch's latency.

All planning and committing is :class:`~spyt_queue.spark.stream_reader.QueueStreamReader`'s: the same offsets
(writer token, ``batch_start`` of batch 0, baseline), caps, ``minOffsetsPerTrigger``, AvailableNow target, data-loss
policy and delayed commit after the sink. This class only reads the planned ranges where it runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition, SimpleDataSourceStreamReader

from spyt_queue.backend import QueueBackend
from spyt_queue.errors import OptionError
from spyt_queue.offsets import LATEST_ENDS
from spyt_queue.spark.compat import SupportsTriggerAvailableNow
from spyt_queue.spark.errors import one_line
from spyt_queue.spark.partitions import JournaledPartition, PackedRanges, RangePartition
from spyt_queue.spark.stream_reader import QueueStreamReader

#: Most ranges of one batch the driver reads side by side (each thread with its own copy of the backend, so its
#: own client): the reads are mostly waits on the server (YT pulls are HTTP round trips), and a small pool keeps
#: a 2-core driver from oversubscribing.
DRIVER_READ_THREADS = 4


class DriverStreamReader(SimpleDataSourceStreamReader, SupportsTriggerAvailableNow):
    """A :class:`QueueStreamReader` whose batches are read in the driver's runner (``read_mode=driver``).

    Spark passes no read limit on this path, so every batch is planned with the reader's own default limit
    (``maxOffsetsPerTrigger``, ``max_rows_per_partition``, ``minOffsetsPerTrigger``): the caps hold for every
    trigger, Trigger.Once included (it reads one capped batch; AvailableNow reads everything in capped batches).
    """

    def __init__(self, planner: QueueStreamReader) -> None:
        self.planner = planner
        self._checked = False
        self._pool: ThreadPoolExecutor | None = None
        self._thread_backends: dict[tuple[int, int], QueueBackend] = {}  # (thread, backend id) -> thread copy

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_pool"] = None  # threads and clients of the driver's runner stay there
        state["_thread_backends"] = {}
        return state

    def _refuse_a_journal_request(self) -> None:
        """Refuse, at the query's first call, a consumer whose batch journal a transactional sink asked for: only
        executor tasks journal batch ranges, so that sink's first commit would fail after writing the batch into a
        transaction it then aborts. Checked once per run (one ``exists`` request)."""
        if self._checked:
            return
        self._checked = True
        journal = self.planner.backend.batch_journal()
        if journal is not None and journal.requested():
            raise one_line(
                OptionError(
                    "read_mode",
                    "read_mode=driver can not feed a transactional=true sink: its consumer carries the batch journal "
                    "that sink asks for (@spyt_queue_batch_plans), which only executor tasks write; use "
                    "read_mode=executors (or, if no transactional query reads through this consumer any more, remove "
                    "that attribute)",
                )
            )

    def initialOffset(self) -> dict[str, Any]:
        """:meth:`QueueStreamReader.initialOffset`."""
        self._refuse_a_journal_request()
        return self.planner.initialOffset()

    def prepareForTriggerAvailableNow(self) -> None:
        """:meth:`QueueStreamReader.prepareForTriggerAvailableNow`: freeze the AvailableNow target."""
        self.planner.prepareForTriggerAvailableNow()

    def read(self, start: dict[str, Any]) -> tuple[Iterator[pa.RecordBatch], dict[str, Any]]:
        """Commit ``start``, plan the next batch after it and read its rows here; ``start`` again when there is none.

        Returns an iterator over a list (Spark copies it to resend the batch) and the batch's end offset.
        """
        self._refuse_a_journal_request()
        end = self.planner.latestOffset(start, self.planner.getDefaultReadLimit())
        if end is start or end == start:
            return iter(()), start
        batches = self._batches(start, end)
        return iter(batches), self._with_latest_ends(end)

    def _with_latest_ends(self, end: dict[str, Any]) -> dict[str, Any]:
        """``end`` with the end of every partition seen while planning it (:data:`~spyt_queue.offsets.LATEST_ENDS`).

        PySpark's runner never asks a simple reader for ``reportLatestOffset`` (it answers "none" for it), so the
        query progress of this mode has no ``latestOffset``; the batch's end offset, which the progress shows as
        ``endOffset``, carries the ends instead, for :func:`spyt_queue.lag.lag_from_progress`. Only ends of batches
        with rows carry them: a trigger with nothing new must return ``start`` unchanged.
        """
        latest = self.planner.reportLatestOffset()
        if not latest:
            return end
        return {**end, LATEST_ENDS: latest["partitions"]}

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """:meth:`QueueStreamReader.reportLatestOffset`, for a PySpark that asks simple readers for it (4.3 does
        not: see :meth:`_with_latest_ends`)."""
        return self.planner.reportLatestOffset()

    def readBetweenOffsets(self, start: dict[str, Any], end: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        """Re-read a batch of the offset log after a restart (exactly its ranges, batch 0 from its ``batch_start``)."""
        self._refuse_a_journal_request()
        return iter(self._batches(start, end))

    def _batches(self, start: dict[str, Any], end: dict[str, Any]) -> list[pa.RecordBatch]:
        """The batch's rows, range after range in the planned order; the ranges are read side by side.

        Each range is read as a task would read it (:meth:`QueueStreamReader.read`: the same exactness and data-loss
        checks, retries and one-line errors), by a thread of a small pool with its own copy of the backend
        (:meth:`~spyt_queue.backend.QueueBackend.thread_copy`). A failing batch raises what reading the ranges one
        after the other would raise: the error of the first failing range in the planned order (ranges not started
        yet are dropped, and those running are waited for, so no read outlives the batch)."""
        ranges = self._ranges(self.planner.partitions(start, end))
        if len(ranges) <= 1:
            return [batch for part in ranges for batch in self.planner.read(part)]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=DRIVER_READ_THREADS, thread_name_prefix="spyt-queue-read")
        futures: list[Future[list[pa.RecordBatch]]] = [self._pool.submit(self._read_here, part) for part in ranges]
        try:
            return [batch for future in futures for batch in future.result()]
        finally:
            for future in futures:
                future.cancel()
            wait(futures)

    @staticmethod
    def _ranges(partitions: Sequence[InputPartition]) -> list[RangePartition]:
        """The ranges of a batch's input partitions in their order (packed ones unpacked); a journaling partition
        journals first, as its task would before reading."""
        ranges: list[RangePartition] = []
        for partition in partitions:
            inner: InputPartition | None = partition
            if isinstance(partition, JournaledPartition):
                partition.journal.record(partition.plan)
                inner = partition.inner
            if isinstance(inner, PackedRanges):
                ranges.extend(inner.ranges)
            elif inner is not None:
                assert isinstance(inner, RangePartition), inner
                ranges.append(inner)
        return ranges

    def _read_here(self, part: RangePartition) -> list[pa.RecordBatch]:
        """One range read on this thread, with this thread's copy of its backend."""
        key = (threading.get_ident(), id(part.backend))
        backend = self._thread_backends.get(key)
        if backend is None:
            backend = self._thread_backends[key] = part.backend.thread_copy()
        own = RangePartition(backend, part.partition, part.start, part.end, part.fail_on_data_loss)
        return list(self.planner.read(own))

    def commit(self, end: dict[str, Any]) -> None:
        """Spark's delayed commit: :meth:`QueueStreamReader.commit`."""
        self.planner.commit(end)

    def stop(self) -> None:
        """Ends the planner's commit thread and the read threads (Spark does not call this on the simple path;
        nothing depends on it)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self.planner.stop()
