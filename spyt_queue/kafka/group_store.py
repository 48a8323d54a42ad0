"""A Kafka consumer group as an offset store (the default for Kafka sources)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition

from spyt_queue.errors import ConsumerConflictError
from spyt_queue.kafka.clients import admin_client, discard_admin_client, pooled_consumer
from spyt_queue.kafka.errors import admin_result, is_transient_kafka_error, with_retries
from spyt_queue.kafka.subscription import split_key
from spyt_queue.offsets import sorted_partitions
from spyt_queue.stores.base import OffsetStore

log = logging.getLogger("spyt_queue.kafka")


class KafkaGroupStore(OffsetStore):
    """Committed offsets of a subscription's partitions in one consumer group.

    ``partitions`` lists the partition keys (``topic:N``) to look up: a group's offsets are fetched per partition.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        group_id: str,
        partitions: Callable[[], list[str]],
        request_timeout_s: float = 30.0,
    ) -> None:
        self.config = {k: v for k, v in config.items() if k != "group.id"}
        self.group_id = group_id
        self.partitions = partitions
        self.request_timeout_s = request_timeout_s

    def describe(self) -> str:
        return f"Kafka consumer group {self.group_id}"

    def committed(self) -> dict[str, int | None]:
        return with_retries(self._committed, "fetching committed offsets")

    KEEPS_WRITER = True

    def _committed(self) -> dict[str, int | None]:
        return {key: offset for key, (offset, _) in self._committed_with_metadata().items()}

    def written_by(self, writer: str, positions: Mapping[str, int]) -> bool | None:
        """Whether every partition of ``positions`` holds its value with ``writer`` as its commit metadata."""
        found = with_retries(self._committed_with_metadata, "fetching committed offsets")
        writers = {found.get(key, (None, ""))[1] for key in positions}
        if "" in writers:
            return None
        return writers == {writer} and all(found[key][0] == value for key, value in positions.items())

    def _committed_with_metadata(self) -> dict[str, tuple[int | None, str]]:
        """The group's offsets, fetched by a consumer of the group that never joins it.

        Not through ``AdminClient.list_consumer_group_offsets``: librdkafka (2.16 included) crashes the process
        when that request meets a coordinator still loading the group (a NULL consumer-group handle in
        ``rd_kafka_handle_OffsetFetch``), which happens on the first query of a group on a fresh broker and
        killed Spark's Python source process (``java.io.EOFException`` in ``initialOffset``).
        """
        keys = self.partitions()
        if not keys:
            return {}
        request = [TopicPartition(*split_key(k)) for k in keys]
        with pooled_consumer(self.config, group_id=self.group_id) as consumer:
            answer = consumer.committed(request, timeout=self.request_timeout_s)
        failed = [tp for tp in answer if tp.error is not None]
        if failed:
            raise KafkaException(failed[0].error)
        return {
            f"{tp.topic}:{tp.partition}": (int(tp.offset) if tp.offset >= 0 else None, tp.metadata or "")
            for tp in answer
        }

    def advance(self, old: Mapping[str, int | None], new: Mapping[str, int], writer: str | None = None) -> None:
        """Commit every partition of ``new`` to the group after checking it still holds ``old``; ``writer`` travels
        as every partition's commit metadata (Kafka's ``OffsetAndMetadata``).

        ``new`` holds every partition of the committed target, unchanged ones too: recommitting them keeps the
        broker from expiring an idle partition's offset (``offsets.retention.minutes`` counts from its last
        commit). A partition found without an offset where ``old`` had one has expired, which is not another
        consumer's progress: it is logged and committed again. Kafka has no compare-and-set on group offsets:
        the check and the commit are two requests, so this detects another query's progress between batches,
        not within the few milliseconds in between.
        """
        if not new:
            return
        current = self.committed()
        expired = sorted_partitions(k for k in new if current.get(k) is None and old.get(k) is not None)
        moved = {k: current.get(k) for k in new if current.get(k) != old.get(k) and k not in expired}
        if moved:
            raise ConsumerConflictError(
                f"Consumer group {self.group_id} was moved by someone else (expected {dict(old)}, found {moved}): "
                "another query or consumer uses the same group.id"
            )
        if expired:
            log.warning(
                "committed offsets of group %s expired on the broker (offsets.retention.minutes) for %s; "
                "committing them again",
                self.group_id,
                ", ".join(f"{k} (was {old[k]})" for k in expired),
            )
        request = ConsumerGroupTopicPartitions(
            self.group_id,
            [TopicPartition(*split_key(k), int(v), metadata=writer or "") for k, v in new.items()],
        )
        admin = admin_client(self.config)
        try:
            futures = admin.alter_consumer_group_offsets([request], request_timeout=self.request_timeout_s)
            answer = admin_result(futures[self.group_id], "alter_consumer_group_offsets", self.request_timeout_s)
        except Exception as error:
            if is_transient_kafka_error(error):  # this client may never answer another alter (see the function)
                discard_admin_client(self.config, admin)
            raise
        failed = [tp for tp in answer.topic_partitions if tp.error is not None]
        if failed:
            raise KafkaException(failed[0].error)

    def is_transient(self, error: BaseException) -> bool:
        return is_transient_kafka_error(error)
