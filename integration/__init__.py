"""Test and local-development infrastructure: a real Apache Kafka broker (KRaft) from Maven jars.

See ``integration/README.md``; the broker itself lives in :mod:`integration.kafka_broker`.
"""
