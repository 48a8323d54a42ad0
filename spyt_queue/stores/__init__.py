"""Offset stores: where committed positions live, and the contract every store keeps.

A store keeps, for one source and one group, the next unread row of every partition, and moves them by an atomic
multi-partition compare-and-set. This package holds what the stores share: the interface (:mod:`.base`), the
commit-log store that the table stores build on (:mod:`.commit_log`), the in-memory test store (:mod:`.memory`) and
the URI-scheme registry (:mod:`.registry`), which imports a store's module only when its scheme is used. Each store
lives beside its technology: :mod:`spyt_queue.yt.consumer_store`, :mod:`spyt_queue.kafka.group_store`,
:mod:`spyt_queue.zookeeper.store`, :mod:`spyt_queue.sinks.kudu.store`, :mod:`spyt_queue.sinks.hbase.store`.
"""

from spyt_queue.stores.base import OffsetStore

__all__ = ["OffsetStore"]
