"""The names every part of the Kafka adapter spells the same way, with no import of a client or backend (so the
clients, the options and the sinks can all import them). The adapter's options are declared in
:mod:`spyt_queue.kafka.options`."""

from __future__ import annotations

#: Options starting with it are librdkafka settings (``kafka.`` removed).
KAFKA_PREFIX = "kafka."
#: The option naming the brokers; its presence makes a source or sink a Kafka one
#: (:func:`spyt_queue.connect.source_kind`).
BOOTSTRAP_SERVERS = KAFKA_PREFIX + "bootstrap.servers"
