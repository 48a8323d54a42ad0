"""The ZooKeeper offset store (``offsets.store=zookeeper://...``), through ``kazoo``, which it imports lazily."""
