"""Transactional exactly-once for ``ytqueue`` -> ``ytqueue`` pipelines (the sink option ``transactional=true``).

The rows a micro-batch writes and the source consumer's advance commit in **one** YTsaurus tablet transaction:

1. The transaction is started on the driver when Spark ships the batch's writer to the executors (the writer is
   built anew for every micro-batch in a driver-side Python worker and pickled; :class:`BatchTransaction` starts its
   transaction when it is first pickled, so the separate worker that later runs ``commit`` starts none).
2. Every task inserts its rows under that transaction (:class:`AttachedConnection`) and returns its id in its
   commit message. Nothing is visible until the commit.
3. ``commit(messages, batchId)`` (another driver-side worker, which shares no memory with the source) learns the
   batch's source range from the journal the source keeps on the consumer node (:mod:`spyt_queue.yt.batch_journal`:
   the task reading the batch's first partition writes the start and end offsets Spark planned, keyed by the
   streaming query id and the batch id, which every task reports). It then advances the consumer per tablet with
   ``advance_consumer(old_offset=...)`` inside the same transaction and commits: rows and advance become visible
   together, or neither does. Spark's checkpoint is never read, so it may be on any filesystem Spark supports.

A replay of a batch whose transaction had committed (the driver died before Spark logged the batch as done) finds
the consumer already at the batch's end: its transaction is aborted, nothing is written twice. That is taken for a
replay only when this query's own earlier attempt of the batch reached ``commit_transaction`` (a marker journaled
on the consumer, ``@spyt_queue_batch_commits/<query id>:<batch id>``, before the commit); a consumer at the
batch's end without one was moved by another query on the same consumer: :class:`ConsumerConflictError`. The
query's writer token is listed in the consumer's ``@spyt_queue_transactional_writers`` so that the source's own
delayed commit recognises the sink's advance as this query's. A consumer moved by
someone else makes the compare-and-set fail (3100, or a row-lock conflict 1700 at commit): the transaction is
aborted, nothing is written, and the query stops with :class:`~spyt_queue.errors.ConsumerConflictError`.

Limits: the source must be one ``ytqueue`` YT queue read through the consumer given here, in
``read_mode=executors`` (the default: the journal is written by an executor task); with a checkpoint on a local path
its offsets log is also checked for other sources (on other filesystems another source in the same query is not
detected, and its rows are written at least once); all of the batch is one transaction, bounded by YT's
``max_rows_per_transaction`` rows per tablet (100,000 by default, error 1717) and by the transaction timeout
(``transaction_timeout``); a failed task can not be retried inside the transaction (its attempt may have inserted
rows already), so it fails the batch, whose transaction is aborted.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark import TaskContext
from yt.wrapper import YtClient
from yt.wrapper.config import set_command_param
from yt.wrapper.errors import YtResponseError

from spyt_queue.errors import CommitError, ConsumerConflictError, OptionError, SpytQueueError
from spyt_queue.offsets import StreamOffset, sorted_partitions
from spyt_queue.options import WRITE, Option, Options
from spyt_queue.yt.batch_journal import SWEEP_EVERY, commit_marker, journaled_plans, mark_commit, sweep
from spyt_queue.yt.client import YtConnection, make_yt_client
from spyt_queue.yt.consumer_store import (
    KEPT_TRANSACTIONAL_WRITERS,
    TRANSACTIONAL_WRITERS_ATTRIBUTE,
    YtConsumerStore,
    advance_consumer_partitions,
)
from spyt_queue.yt.errors import CONSUMER_OFFSET_CONFLICT, has_code
from spyt_queue.yt.options import plain_cypress_path

log = logging.getLogger("spyt_queue.transactional")

DEFAULT_TRANSACTION_TIMEOUT_S = 120
TRANSACTIONAL = Option(
    "transactional",
    "write each micro-batch and advance the source consumer in one tablet transaction (streams only)",
    kind="bool",
    default=False,
    modes=(WRITE,),
)
TRANSACTIONAL_CONSUMER = Option("consumer_path", "with transactional=true: the source's consumer_path", modes=(WRITE,))
TRANSACTION_TIMEOUT = Option(
    "transaction_timeout",
    "seconds a batch's transaction lives without a ping (each task pings when it starts)",
    kind="int",
    default=DEFAULT_TRANSACTION_TIMEOUT_S,
    modes=(WRITE,),
)
#: Sink options of the transactional mode.
TRANSACTIONAL_OPTIONS = (TRANSACTIONAL, TRANSACTIONAL_CONSUMER, TRANSACTION_TIMEOUT)
ROW_LOCK_CONFLICT = 1700
TOO_MANY_ROWS_IN_TRANSACTION = 1717
NO_SUCH_TRANSACTION = 11000
_SIZE_HINT = (
    "the whole micro-batch is one tablet transaction, and YTsaurus refuses more than max_rows_per_transaction rows "
    "(100,000 by default) per tablet of the target: lower max_rows_per_partition/maxOffsetsPerTrigger on the source "
    "or give the target more tablets"
)


@dataclass(frozen=True)
class TransactionalSettings:
    """What the transactional sink needs besides the table writer."""

    consumer_path: str
    timeout_ms: int
    #: The checkpoint when it is a local path: its offsets log is also checked for a second source (a guard only;
    #: the batch's range comes from the journal on the consumer, :mod:`spyt_queue.yt.batch_journal`).
    checkpoint: Path | None = None


def transactional_settings(options: Options) -> TransactionalSettings | None:
    """The transactional mode's settings, ``None`` when ``transactional`` is off (the default).

    Raises :class:`OptionError` for a ``consumer_path`` without ``transactional=true`` or a missing
    ``consumer_path``."""
    enabled = options.value(TRANSACTIONAL)
    consumer = options.value(TRANSACTIONAL_CONSUMER)
    if not enabled:
        for name in (TRANSACTIONAL_CONSUMER.name, TRANSACTION_TIMEOUT.name):
            if name in options:
                raise OptionError(
                    name,
                    "a writer takes it only with transactional=true (a consumer_path to read from belongs on "
                    "spark.readStream)",
                )
        return None
    if not consumer:
        raise OptionError(
            "consumer_path",
            "transactional=true advances the source's consumer in the batch's transaction: give the same "
            "consumer_path as on spark.readStream",
        )
    timeout = options.value(TRANSACTION_TIMEOUT)
    return TransactionalSettings(
        plain_cypress_path("consumer_path", consumer),
        timeout * 1000,
        local_checkpoint(options.get_str("checkpointLocation")),
    )


def local_checkpoint(location: str | None) -> Path | None:
    """``checkpointLocation`` as a local path (plain paths and ``file:`` URIs), ``None`` for other filesystems."""
    if not location:
        return None
    parsed = urllib.parse.urlparse(location)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and location[1:3] in (":\\", ":/")):
        path = urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else location
        return Path(os.path.abspath(path))
    return None


def transactional_connection(connection: YtConnection) -> YtConnection:
    """``connection`` with proxy discovery off unless set explicitly: a tablet transaction started over HTTP lives
    in one proxy process (it is sticky), so the executors' inserts must reach the proxy given, not another one."""
    config = json.loads(json.dumps(connection.config))
    config.setdefault("proxy", {}).setdefault("enable_proxy_discovery", False)
    return YtConnection(connection.proxy, connection.token, config)


# -- the transaction ------------------------------------------------------------------------------------------


def start_transaction(connection: YtConnection, timeout_ms: int) -> str:
    """Start a sticky tablet transaction; its id."""
    client = connection.client()
    try:
        return str(client.start_transaction(type="tablet", sticky=True, timeout=timeout_ms))
    except Exception as error:
        raise CommitError(
            f"Could not start the micro-batch's tablet transaction on {connection.proxy}: {error}"
        ) from error


class BatchTransaction:
    """The tablet transaction of one micro-batch, started on the driver when the writer is shipped to executors.

    Spark builds the stream writer for each micro-batch in a driver-side Python worker and pickles it to the
    executors; the worker that runs ``commit`` builds another writer and never pickles it. Starting the transaction
    in :meth:`__getstate__` therefore starts exactly one per batch, before any task runs."""

    def __init__(self, connection: YtConnection, timeout_ms: int) -> None:
        self.connection = connection
        self.timeout_ms = timeout_ms
        self.id: str | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            if self.id is None:
                self.id = start_transaction(self.connection, self.timeout_ms)
                log.info("started tablet transaction %s for a micro-batch", self.id)
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


_ATTACHED: dict[tuple[Any, ...], YtClient] = {}
_ATTACHED_LOCK = threading.Lock()


@dataclass
class AttachedConnection(YtConnection):
    """A connection whose clients send every command inside the tablet transaction ``transaction_id``.

    One client per process and transaction (only the latest transaction's is kept): tasks of one batch running in
    one Python worker share it; a task runs in one thread."""

    transaction_id: str = ""

    def client(self) -> YtClient:
        """The client bound to the transaction."""
        key = (self.proxy, self.token, repr(sorted(self.config.items())), self.transaction_id)
        with _ATTACHED_LOCK:
            client = _ATTACHED.get(key)
            if client is None:
                _ATTACHED.clear()
                client = make_yt_client(self.proxy, self.token, dict(self.config))
                set_command_param("transaction_id", self.transaction_id, client)
                set_command_param("ping_ancestor_transactions", False, client)
                _ATTACHED[key] = client
            return client

    def thread_client(self) -> YtClient:
        """The same client (it is bound to one transaction; its tasks run one at a time)."""
        return self.client()


def attach(connection: YtConnection, transaction_id: str) -> AttachedConnection:
    """``connection`` inside ``transaction_id``."""
    return AttachedConnection(connection.proxy, connection.token, dict(connection.config), transaction_id)


def ping(connection: YtConnection, transaction_id: str) -> None:
    """Renew the transaction's lease; a clear error when it is gone (expired, aborted, or the server restarted)."""
    try:
        connection.client().ping_transaction(transaction_id)
    except YtResponseError as error:
        if has_code(error, NO_SUCH_TRANSACTION):
            raise CommitError(
                f"The micro-batch's tablet transaction {transaction_id} is gone (expired after transaction_timeout, "
                "aborted, or the server restarted): nothing of this batch is written; the batch fails and a restart "
                "replays it"
            ) from error
        raise


def abort(connection: YtConnection, transaction_id: str) -> None:
    """Abort, ignoring a transaction that is already gone."""
    try:
        connection.client().abort_transaction(transaction_id)
    except YtResponseError as error:
        if not has_code(error, NO_SUCH_TRANSACTION):
            log.warning("could not abort tablet transaction %s: %s", transaction_id, error)


def refuse_retried_attempt() -> None:
    """Fail a retried task: its failed attempt may have inserted rows into the batch's transaction already, and a
    tablet transaction can not take back some of its rows. The batch fails, its transaction is aborted."""
    try:
        context = TaskContext.get()
    except Exception:  # pragma: no cover - pyspark is always importable where this runs
        context = None
    if context is not None and context.attemptNumber() > 0:
        raise CommitError(
            f"Task {context.partitionId()} of a transactional micro-batch is a retry (attempt "
            f"{context.attemptNumber()}): the failed attempt may have inserted rows into the batch's transaction, "
            "so the batch fails instead (nothing of it is committed; restart the query to replay it)"
        )


# -- the batch's source range from Spark's offsets log --------------------------------------------------------


@dataclass(frozen=True)
class BatchRange:
    """The source rows of one micro-batch: ``[start, end)`` per tablet of one YT queue."""

    batch_id: int
    source: str
    queue_path: str
    start: dict[str, int]
    end: dict[str, int]
    first_batch: bool
    baseline: dict[str, int]
    writer: str | None = None

    def is_empty(self) -> bool:
        """Whether the batch covers no row: every tablet ends where it starts (Spark's batch 0 on a caught-up consumer,
        or one delayed by ``minOffsetsPerTrigger`` or a failed first bounds fetch, is such a batch)."""
        return all(self.start.get(key) == value for key, value in self.end.items())


def _sources_in_offsets_log(checkpoint: Path, batch_id: int) -> list[str] | None:
    """The sources of any kind (``ytqueue``, Kafka, Spark's own) ``offsets/<batch_id>`` of a local checkpoint holds,
    one line each after the version and metadata lines, as the ``source`` a ``ytqueue`` offset names (``"?"`` for
    another source's offset); ``None`` if unreadable."""
    try:
        lines = (checkpoint / "offsets" / str(batch_id)).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    sources = []
    for line in lines[2:]:
        if not line.strip():
            continue
        try:
            data = json.loads(line.strip())
        except json.JSONDecodeError:
            data = None
        sources.append(str(data.get("source", "?")) if isinstance(data, dict) else "?")
    return sources


def batch_range(client: YtClient, settings: TransactionalSettings, query_id: str, batch_id: int) -> BatchRange:
    """Where batch ``batch_id`` of query ``query_id`` starts and ends, as its source journaled it on the consumer
    (batch 0 of a query: from the ``batch_start`` its end carries)."""
    consumer = settings.consumer_path
    plans = journaled_plans(client, consumer, query_id, batch_id)
    if not plans:
        raise SpytQueueError(
            f"transactional=true: no range of micro-batch {batch_id} is journaled on consumer {consumer}: the query "
            "must read its YTsaurus queue with format('ytqueue') through this consumer_path, with "
            "read_mode=executors (the default; read_mode=driver reads without executor tasks to journal it)"
        )
    sources = sorted({str(plan.get("source")) for plan in plans})
    in_log = _sources_in_offsets_log(settings.checkpoint, batch_id) if settings.checkpoint else None
    if len(sources) != 1 or (in_log is not None and in_log != sources):
        count = len(sources) if len(sources) != 1 or in_log is None else len(in_log)
        raise SpytQueueError(
            f"transactional=true needs a query reading exactly one source, a YTsaurus queue with format('ytqueue') "
            f"(its consumer's advance joins the batch's transaction); micro-batch {batch_id} reads {count} sources"
        )
    plan = plans[-1]
    end = StreamOffset.from_json(plan["end"])
    if end.batch_start is not None:
        start, first = dict(end.batch_start), True
    else:
        start, first = dict(StreamOffset.from_json(plan["start"]).positions), False
    queue = end.source[len("yt:") :].partition("#")[0]
    return BatchRange(batch_id, end.source, queue, start, dict(end.positions), first, dict(end.baseline), end.writer)


# -- the commit -----------------------------------------------------------------------------------------------


def refuse_start_below_consumer(batch: BatchRange, consumer: str) -> None:
    """Refuse a query that started below its consumer: the source journals the consumer's positions ahead of the
    query's start (``baseline``) in the end of its first batch, and keeps those not reached yet in later ends."""
    if batch.baseline:
        key = sorted_partitions(batch.baseline)[0]
        raise SpytQueueError(
            f"transactional=true: the query started below consumer {consumer} (tablet {key} committed at "
            f"{batch.baseline[key]}, the query started at {batch.start.get(key)}): the transactional mode resumes from "
            "the consumer; use startingOffsets=consumer (the default) or a new consumer"
        )


def expected_positions(batch: BatchRange, current: Mapping[str, int | None], consumer: str) -> dict[str, int | None]:
    """The consumer positions the batch's compare-and-set starts from (``None``: no row yet).

    Each tablet must be at the batch's start; the first batch of a query also accepts a position behind its start
    (``startingOffsets=latest``/JSON, trimmed rows) or none, and a tablet new in this batch any position behind its
    end. Anything else was moved by someone else: :class:`ConsumerConflictError`. A query that started *below* its
    consumer (``startingOffsets=earliest`` under a consumer that is ahead) is refused: its first batch could end
    exactly where the consumer was, and a replay could then not tell whether the batch had committed."""
    refuse_start_below_consumer(batch, consumer)
    old: dict[str, int | None] = {}
    for key in sorted_partitions(batch.end):
        value = current.get(key)
        start = batch.start.get(key)
        if value == start or value is None:
            old[key] = value
        elif start is None and value < batch.end[key]:
            old[key] = value
        elif batch.first_batch and start is not None and value < start:
            old[key] = value
        else:
            raise ConsumerConflictError(
                f"Consumer {consumer} holds {value} for tablet {key} of {batch.queue_path}, but micro-batch "
                f"{batch.batch_id} starts at {start}: another query (or tool) advanced it. Nothing of the batch was "
                "written; use a separate consumer per query"
            )
    return old


def commit_batch(
    connection: YtConnection,
    settings: TransactionalSettings,
    batch_id: int,
    transaction_id: str | None,
    query_id: str | None,
) -> bool:
    """Advance the consumer over batch ``batch_id`` inside ``transaction_id`` (where the tasks inserted its rows) and
    commit; return ``False`` when the batch had already committed (a replay: its transaction is aborted).

    ``query_id`` is the streaming query's id, from the tasks (it keys the batch's journaled range);
    ``transaction_id`` is ``None`` when no task inserted anything: a transaction is started for the advance alone."""
    try:
        if not query_id:
            raise SpytQueueError(
                f"transactional=true: no task of micro-batch {batch_id} reported its streaming query id, so its "
                "journaled range can not be found; nothing of the batch was written"
            )
        batch = batch_range(connection.client(), settings, query_id, batch_id)
        refuse_start_below_consumer(batch, settings.consumer_path)  # before the replay check: the end may equal it
    except BaseException:
        if transaction_id:
            abort(connection, transaction_id)
        raise
    store = YtConsumerStore(connection, batch.queue_path, settings.consumer_path)
    tx = transaction_id or start_transaction(connection, settings.timeout_ms)
    try:
        register_writer(connection, settings.consumer_path, batch.writer)
        current = store.committed()
        if batch.is_empty():
            return _commit_empty_batch(connection, batch, current, settings, tx, transaction_id is not None)
        if batch.end and all(current.get(key) == value for key, value in batch.end.items()):
            if commit_marker(connection.client(), settings.consumer_path, query_id, batch_id) is None:
                raise ConsumerConflictError(
                    f"Consumer {settings.consumer_path} is already at the end of micro-batch {batch_id} "
                    f"({batch.end}), but no attempt of this query committed it: another query reading through the "
                    "same consumer processed these rows. Nothing of the batch was written; use a separate consumer "
                    "per query"
                )
            abort(connection, tx)
            log.info(
                "micro-batch %s had already committed (consumer %s at %s): its replay writes nothing",
                batch_id,
                settings.consumer_path,
                batch.end,
            )
            return False
        old = expected_positions(batch, current, settings.consumer_path)
        client = attach(connection, tx).client()
        advance_consumer_partitions(client, tx, settings.consumer_path, batch.queue_path, old, batch.end)
        mark_commit(connection.client(), settings.consumer_path, query_id, batch_id, tx)
        connection.client().commit_transaction(tx)
    except YtResponseError as error:
        abort(connection, tx)
        raise _commit_error(error, batch, store, settings, tx) from error
    except BaseException:
        abort(connection, tx)
        raise
    log.info(
        "micro-batch %s committed with consumer %s at %s (transaction %s)",
        batch_id,
        settings.consumer_path,
        batch.end,
        tx,
    )
    if batch_id % SWEEP_EVERY == 0:
        try:
            sweep(connection.client(), settings.consumer_path)
        except YtResponseError as error:  # housekeeping only: the batch is committed
            log.warning("could not sweep old journal entries of %s: %s", settings.consumer_path, error)
    return True


def _commit_empty_batch(
    connection: YtConnection,
    batch: BatchRange,
    current: Mapping[str, int | None],
    settings: TransactionalSettings,
    tx: str,
    tasks_wrote: bool,
) -> bool:
    """A batch that covers no source row has nothing to advance: a consumer at its start (which is its end) is where
    this query left it or found it, never another query's commit. Checks the consumer is not moved past the batch
    (:func:`expected_positions`), then commits what the tasks wrote (rows of a stateful step's no-data batch) or
    aborts the unused transaction; returns ``True`` (the batch is done)."""
    expected_positions(batch, current, settings.consumer_path)
    if tasks_wrote:
        connection.client().commit_transaction(tx)
    else:
        abort(connection, tx)
    log.info("micro-batch %s covers no source row: consumer %s left at %s", batch.batch_id, settings.consumer_path,
             dict(current))
    return True


_REGISTERED: set[tuple[str, str]] = set()


def register_writer(connection: YtConnection, consumer: str, writer: str | None) -> None:
    """List ``writer`` in the consumer's ``@spyt_queue_transactional_writers`` (once per process), so that the
    source's delayed commit knows the sink advanced the consumer (see the module docstring)."""
    if not writer or (consumer, writer) in _REGISTERED:
        return
    client = connection.client()
    path = f"{consumer}/@{TRANSACTIONAL_WRITERS_ATTRIBUTE}"
    try:
        writers = client.get(path)
    except YtResponseError as error:
        if not error.is_resolve_error():
            raise
        writers = []
    writers = [w for w in writers if isinstance(w, str)] if isinstance(writers, list) else []
    if writer not in writers:
        client.set(path, [*writers, writer][-KEPT_TRANSACTIONAL_WRITERS:])
    _REGISTERED.add((consumer, writer))


def _commit_error(
    error: YtResponseError, batch: BatchRange, store: Any, settings: TransactionalSettings, tx: str
) -> SpytQueueError | YtResponseError:
    """A one-line error for a failed advance or commit (the transaction is already aborted)."""
    if has_code(error, CONSUMER_OFFSET_CONFLICT) or has_code(error, ROW_LOCK_CONFLICT):
        try:
            now = store.committed()
        except Exception:  # the conflict itself is the message
            now = {}
        return ConsumerConflictError(
            f"Consumer {settings.consumer_path} was advanced by someone else while micro-batch {batch.batch_id} ran "
            f"(it holds {dict(now) or 'unknown'}, the batch covers {batch.start} -> {batch.end}): its transaction "
            "was aborted and nothing of the batch was written; use a separate consumer per query"
        )
    if has_code(error, TOO_MANY_ROWS_IN_TRANSACTION):
        limit = _attribute(error, "limit")
        return CommitError(
            f"Micro-batch {batch.batch_id} is too large for one tablet transaction (YT error 1717, limit "
            f"{limit} rows per tablet): nothing of it was written; {_SIZE_HINT}"
        )
    if has_code(error, NO_SUCH_TRANSACTION):
        return CommitError(
            f"The tablet transaction {tx} of micro-batch {batch.batch_id} is gone before its commit (it expired "
            f"after transaction_timeout={settings.timeout_ms // 1000} s, or the server restarted): nothing of the "
            "batch was written; a restart replays it (raise transaction_timeout or make batches smaller)"
        )
    return error


def _attribute(error: YtResponseError, name: str) -> Any:
    stack: list[Any] = [error.error]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            attributes = node.get("attributes") or {}
            if name in attributes:
                return attributes[name]
            stack.extend(node.get("inner_errors") or [])
    return "?"
