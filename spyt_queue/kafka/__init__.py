"""The Kafka-compatible backend: Kafka topics (or any Kafka-protocol endpoint) under the ytqueue offset contract."""
