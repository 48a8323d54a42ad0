"""Test and local-development infrastructure: real Apache Kafka (KRaft) and ZooKeeper servers from Maven jars.

See ``integration/README.md``. The launcher they share is :mod:`integration.java_server`; the servers are
:mod:`integration.kafka_broker` and :mod:`integration.zookeeper`.
"""
