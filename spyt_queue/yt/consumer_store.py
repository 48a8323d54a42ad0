"""The YTsaurus consumer table as an offset store: ``advance_consumer(old_offset=...)`` in one tablet transaction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from yt.wrapper.errors import YtResponseError, create_response_error

from spyt_queue.errors import ConsumerConflictError, SpytQueueError
from spyt_queue.stores.base import OffsetStore
from spyt_queue.yt.client import YtConnection
from spyt_queue.yt.errors import CONSUMER_OFFSET_CONFLICT, has_code, is_transient_yt_error

#: Attribute of a consumer table listing the writer tokens of queries whose transactional sink advances the consumer
#: inside each batch's transaction (``transactional=true``), newest last.
TRANSACTIONAL_WRITERS_ATTRIBUTE = "spyt_queue_transactional_writers"
#: How many writer tokens the attribute keeps.
KEPT_TRANSACTIONAL_WRITERS = 32


def advance_consumer_partitions(
    client: Any,
    transaction_id: str,
    consumer_path: str,
    queue_path: str,
    old: Mapping[str, int | None],
    new: Mapping[str, int],
) -> None:
    """Advance the consumer's partitions from ``old`` to ``new`` (each an ``old_offset`` compare-and-set) inside the
    tablet transaction ``client`` works in: one ``advance_consumer``, or every one in a single ``execute_batch``
    round trip whatever the number of partitions; the first failed part is raised as the ``YtResponseError`` it is."""
    if len(new) == 1:
        for key, value in new.items():
            client.advance_consumer(
                consumer_path,
                queue_path,
                partition_index=int(key),
                old_offset=int(old.get(key) or 0),
                new_offset=int(value),
            )
        return
    if not new:
        return
    requests = [
        {
            "command": "advance_consumer",
            "parameters": {
                "consumer_path": consumer_path,
                "queue_path": queue_path,
                "partition_index": int(key),
                "old_offset": int(old.get(key) or 0),
                "new_offset": int(value),
                "client_side": True,
                "transaction_id": transaction_id,
            },
        }
        for key, value in new.items()
    ]
    answer = client.execute_batch(requests=requests)
    results = answer["results"] if isinstance(answer, Mapping) else answer
    for result in results:
        if result.get("error"):
            raise create_response_error(result["error"])

class YtConsumerStore(OffsetStore):
    """Committed positions of one queue in a consumer table registered for it (the default for YT sources).

    The group is the consumer itself: two queries must not share a consumer.
    """

    def __init__(self, connection: YtConnection, queue_path: str, consumer_path: str) -> None:
        self.connection = connection
        self.queue_path = queue_path
        self.consumer_path = consumer_path

    def describe(self) -> str:
        return f"consumer {self.consumer_path} of {self.queue_path}"

    def committed(self) -> dict[str, int | None]:
        """Offsets from the consumer table's rows for this queue (one ``select_rows``)."""
        query = f'* from [{self.consumer_path}] where queue_path = "{_escape(self.queue_path)}"'
        rows = list(self.connection.thread_client().select_rows(query))  # commits may run on a thread of their own
        positions: dict[str, int | None] = {}
        clusters: dict[str, set[str]] = {}
        for row in rows:
            key = str(int(row["partition_index"]))
            clusters.setdefault(key, set()).add(str(row.get("queue_cluster")))
            offset = row.get("offset")
            positions[key] = None if offset is None else int(offset)
        ambiguous = [key for key, names in clusters.items() if len(names) > 1]
        if ambiguous:
            raise SpytQueueError(
                f"Consumer {self.consumer_path} holds rows for {self.queue_path} from several clusters "
                f"({sorted(clusters[ambiguous[0]])}); use one consumer per queue"
            )
        return positions

    def written_by(self, writer: str, positions: Mapping[str, int]) -> bool | None:
        """``True`` when ``writer``'s transactional sink advances this consumer inside its batches' transactions (it
        is listed in the consumer's ``@spyt_queue_transactional_writers``, and each such advance is a compare-and-set
        from the batch's start); otherwise ``None``: a consumer row holds no writer (its ``meta`` column belongs to
        YTsaurus), so positions found at a target can not be attributed."""
        try:
            writers = self.connection.thread_client().get(
                f"{self.consumer_path}/@{TRANSACTIONAL_WRITERS_ATTRIBUTE}"
            )
        except YtResponseError as error:
            if error.is_resolve_error():
                return None
            raise
        return True if isinstance(writers, list) and writer in writers else None

    def advance(self, old: Mapping[str, int | None], new: Mapping[str, int], writer: str | None = None) -> None:
        """Every partition of ``new`` with ``advance_consumer(old_offset=...)``, in one tablet transaction; with
        several partitions the advances travel in one ``execute_batch`` request (one round trip for any count).
        ``writer`` is not stored (see :meth:`written_by`): a reply lost on the way is recovered by yt.wrapper, which
        retries ``commit_transaction`` with the same mutation id and gets the kept answer.

        Unchanged partitions (``old[k] == new[k]``) are advanced too, from and to the same offset: that is their
        compare-and-set, so another writer that moved one makes the whole advance fail.
        """
        client = self.connection.thread_client()
        try:
            # No pinger: the transaction lives for the few milliseconds of one advance, far inside its timeout.
            # yt.wrapper's pinger would cost a client copy, a ping_transaction round trip and up to 100 ms of
            # waiting for its thread at commit (its sleep step): the largest fixed cost of a micro-batch.
            with client.Transaction(type="tablet", ping=False) as transaction:
                advance_consumer_partitions(
                    client, transaction.transaction_id, self.consumer_path, self.queue_path, old, new
                )
        except YtResponseError as error:
            if has_code(error, CONSUMER_OFFSET_CONFLICT):
                raise ConsumerConflictError(
                    f"Consumer {self.consumer_path} was advanced by someone else while this query read "
                    f"{self.queue_path} (expected {dict(old)}): two queries must not share a consumer. "
                    f"YT said: {error.message if hasattr(error, 'message') else error}"
                ) from error
            raise

    def outcome_unknown(self, error: BaseException) -> bool:
        """An answer from the server (a row lock conflict, an unmounted tablet, ...) means the tablet transaction did
        not commit; only a timeout, a lost connection or a transaction gone at a retried commit leave it open."""
        if isinstance(error, YtResponseError):
            return error.is_request_timed_out() or error.is_no_such_transaction()
        return self.is_transient(error)

    def is_transient(self, error: BaseException) -> bool:
        return is_transient_yt_error(error)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
