"""Offset stores: where committed positions live (YT consumer, Kafka group, ZooKeeper, HBase, Kudu, memory).

A store keeps, for one source and one group, the next unread row of every partition, and moves them by an atomic
multi-partition compare-and-set. Stores are picked by URI scheme through :mod:`spyt_queue.stores.registry`.
"""

from spyt_queue.stores.base import OffsetStore

__all__ = ["OffsetStore"]
