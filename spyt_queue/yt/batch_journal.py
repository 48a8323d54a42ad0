"""Each micro-batch's range, journaled on the YTsaurus cluster, where the transactional sink's commit reads it.

The transactional sink (:mod:`spyt_queue.yt.transactional`) advances the source consumer over exactly one batch's rows
inside that batch's tablet transaction, so its commit must know where the batch starts and ends. Spark keeps that in
the query's offsets log, in a checkpoint the commit (a Python worker on the driver) may not be able to read (HDFS, an
object store). So the source journals it on the consumer node, keyed by what Spark gives every task of a micro-batch:
the query id and the batch id (the local properties ``sql.streaming.queryId`` and ``streaming.sql.batchId``).

* The source's planner marks the first input partition of a batch with the batch's start and end offsets (as Spark
  hands them to ``partitions``) when the consumer asks for a journal (its ``@spyt_queue_batch_plans`` exists: the
  transactional sink creates it when it is built) and always for the first batch a reader plans (Spark builds the
  sink's writer only after the first batch is planned).
* The task reading that partition writes them, before its first row, to
  ``<consumer>/@spyt_queue_batch_plans/<query id>:<batch id>:<source>`` and drops the entry two batches back; where
  no sink asked (the attribute does not exist), it writes nothing.
* The sink's commit (same query id, from its tasks; batch id from Spark) reads the entry, and before
  ``commit_transaction`` journals its attempt in ``@spyt_queue_batch_commits`` (a replay finding the consumer at the
  batch's end accepts that as its own commit only with this marker).

Spark replays an unfinished batch with the same query id (kept in the checkpoint), batch id and offsets, so a replay
writes the same entry again. Entries of queries that stopped are removed by :func:`sweep` after a week.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from pyspark import TaskContext
from yt.wrapper.errors import YtResponseError

from spyt_queue.backend import BatchJournal
from spyt_queue.yt.client import YtConnection

log = logging.getLogger("spyt_queue.transactional")

PLANS_ATTRIBUTE = "spyt_queue_batch_plans"
COMMITS_ATTRIBUTE = "spyt_queue_batch_commits"
#: Local properties Spark sets on every task of a streaming micro-batch.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
#: Entries older than this are removed by :func:`sweep` (queries stopped for good, checkpoints deleted).
KEEP_S = 7 * 24 * 3600
#: :func:`sweep` runs when a commit's batch id is a multiple of this.
SWEEP_EVERY = 64


def task_batch() -> tuple[str, int] | None:
    """``(query id, batch id)`` of the streaming micro-batch the current task belongs to, ``None`` outside one (a
    batch read, the driver)."""
    context = TaskContext.get()
    if context is None:
        return None
    query, batch = context.getLocalProperty(QUERY_ID_PROPERTY), context.getLocalProperty(BATCH_ID_PROPERTY)
    if not query or batch is None:
        return None
    return str(query), int(batch)


def batch_key(query_id: str, batch_id: int) -> str:
    """The prefix of a batch's entries: ``<query id>:<batch id>``."""
    return f"{query_id}:{batch_id}"


def source_key(source_id: str) -> str:
    """A short, attribute-key-safe name of a source (its id holds slashes)."""
    return hashlib.sha1(source_id.encode()).hexdigest()[:12]


def attribute_path(consumer_path: str, attribute: str, key: str | None = None) -> str:
    """``<consumer>/@<attribute>[/<key>]``."""
    return f"{consumer_path}/@{attribute}" + (f"/{key}" if key else "")


class YtBatchJournal(BatchJournal):
    """The journal of one source on its consumer node (picklable: executors get the connection's settings)."""

    def __init__(self, connection: YtConnection, consumer_path: str, source_id: str) -> None:
        self.connection = connection
        self.consumer_path = consumer_path
        self.source_id = source_id

    def requested(self) -> bool:
        """Whether the consumer asks for a journal (a transactional sink has been built for it)."""
        return bool(self.connection.client().exists(attribute_path(self.consumer_path, PLANS_ATTRIBUTE)))

    def record(self, plan: Mapping[str, Any]) -> None:
        """Journal ``plan`` (``start``, ``end``) for the micro-batch of the running task; nothing outside a stream."""
        batch = task_batch()
        if batch is None:
            return
        query_id, batch_id = batch
        client = self.connection.client()
        entry = {**plan, "source": self.source_id, "at": time.time()}
        key = f"{batch_key(query_id, batch_id)}:{source_key(self.source_id)}"
        stale = f"{batch_key(query_id, batch_id - 2)}:{source_key(self.source_id)}"
        plans = attribute_path(self.consumer_path, PLANS_ATTRIBUTE)
        try:
            client.set(f"{plans}/{key}", entry)
        except YtResponseError as error:
            if not error.is_resolve_error():
                raise
            return  # no sink asked for a journal on this consumer (request_journal creates the attribute)
        client.remove(f"{plans}/{stale}", force=True)
        log.debug("journaled micro-batch %s of query %s on %s", batch_id, query_id, self.consumer_path)


# -- the sink's side -------------------------------------------------------------------------------------------


def request_journal(client: Any, consumer_path: str) -> None:
    """Ask the sources reading through ``consumer_path`` to journal their batches (idempotent)."""
    plans = attribute_path(consumer_path, PLANS_ATTRIBUTE)
    if not client.exists(plans):
        try:
            client.set(plans, {})
        except YtResponseError as error:
            log.warning("could not create %s: %s", plans, error)
            raise


def journaled_plans(client: Any, consumer_path: str, query_id: str, batch_id: int) -> list[dict[str, Any]]:
    """Every plan journaled for micro-batch ``batch_id`` of query ``query_id`` (one per source reading through the
    consumer), oldest first."""
    try:
        entries = client.get(attribute_path(consumer_path, PLANS_ATTRIBUTE))
    except YtResponseError as error:
        if error.is_resolve_error():
            return []
        raise
    prefix = batch_key(query_id, batch_id) + ":"
    found = [dict(value) for key, value in dict(entries).items() if str(key).startswith(prefix)]
    return sorted(found, key=lambda entry: float(entry.get("at", 0)))


def commit_marker(client: Any, consumer_path: str, query_id: str, batch_id: int) -> str | None:
    """The transaction id this query journaled before committing micro-batch ``batch_id``, ``None`` if none."""
    path = attribute_path(consumer_path, COMMITS_ATTRIBUTE, batch_key(query_id, batch_id))
    try:
        value = client.get(path)
    except YtResponseError as error:
        if error.is_resolve_error():
            return None
        raise
    return str(dict(value).get("tx")) if isinstance(value, Mapping) else str(value)


def mark_commit(client: Any, consumer_path: str, query_id: str, batch_id: int, transaction_id: str) -> None:
    """Journal, before ``commit_transaction``, that this query commits micro-batch ``batch_id`` in
    ``transaction_id``; drops the marker two batches back."""
    commits = attribute_path(consumer_path, COMMITS_ATTRIBUTE)
    entry = {"tx": transaction_id, "at": time.time()}
    key = batch_key(query_id, batch_id)
    try:
        client.set(f"{commits}/{key}", entry)
    except YtResponseError as error:
        if not error.is_resolve_error():
            raise
        client.set(commits, {key: entry})
    client.remove(f"{commits}/{batch_key(query_id, batch_id - 2)}", force=True)


def sweep(client: Any, consumer_path: str, now: float | None = None) -> int:
    """Remove plans and commit markers older than :data:`KEEP_S` (queries stopped for good); return how many."""
    limit = (now if now is not None else time.time()) - KEEP_S
    removed = 0
    for attribute in (PLANS_ATTRIBUTE, COMMITS_ATTRIBUTE):
        try:
            entries = dict(client.get(attribute_path(consumer_path, attribute)))
        except YtResponseError as error:
            if error.is_resolve_error():
                continue
            raise
        for key, value in entries.items():
            if isinstance(value, Mapping) and float(value.get("at", 0)) < limit:
                client.remove(attribute_path(consumer_path, attribute, str(key)), force=True)
                removed += 1
    return removed
