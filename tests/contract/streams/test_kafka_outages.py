"""The outage scenarios on a Kafka topic of a broker of its own (``kafka_behind_proxy``: its clients reach it only
through a :class:`~integration.fault_proxy.FaultProxy`), read into parquet files by Spark's file sink (exactly-once
by its own log), committing to the query's consumer group.

Short outages: the whole broker is gone for 2 s under the clients' default retries. Long ones are affordable only
where an option bounds the wait: a read gives up after ``kafkaConsumer.pollTimeoutMs`` (3 s here, instead of 120 s),
so the reading outage is the whole broker for 10 s. The bounds of a topic are fetched six times with requests bounded
by ``kafka.default.api.timeout.ms`` (1 s here instead of 30 s) and ``fetchOffset.numRetries=0``: the long planning
outage cuts off the bounds requests (``ListOffsets`` for every partition: the partitions' leader unreachable while
the rest of the cluster answers) for 20 s, longer than those attempts. A long commit outage is not run: the
committer's six attempts, each after a committed-offsets fetch with its own six, take minutes even with short
requests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.contract.streams.outages import Case, Fault, OutageLog, OutageScenarios
from tests.kafka.helpers import FILES_SCHEMA, Topic, start_to_files

pytestmark = pytest.mark.spark

REQUESTS = {"planning": "ListOffsets/2", "reading": "Fetch", "commit": "OffsetCommit"}


class KafkaOutageLog(OutageLog):
    """A two-partition topic on the broker behind ``broker.proxy``; the query bootstraps at the proxy, the checks
    (producing, ends, the group's offsets) use the broker's direct listener."""

    def __init__(self, spark: Any, broker: Any, checkpoint: str, workdir: Path, read_mode: str) -> None:
        self.spark, self.checkpoint, self.read_mode = spark, checkpoint, read_mode
        self.proxy = broker.proxy
        self.topic = Topic(broker.direct, checkpoint)
        self.source_name = self.topic.name
        self.output = str(workdir / "out")

    def produce(self, count: int) -> list[int]:
        return self.topic.produce(count)

    def start(self, spark: Any, trigger: dict[str, Any], **options: Any) -> Any:
        reader = (
            spark.readStream.format("ytqueue")
            .option("kafka.bootstrap.servers", self.proxy.address)
            .option("subscribe", self.topic.name)
            .option("kafka.group.id", self.topic.group)
            .option("startingOffsets", "earliest")
            .option("read_mode", self.read_mode)
        )
        for key, value in options.items():
            reader = reader.option(key, str(value))
        return start_to_files(reader.load(), self.checkpoint, self.output, trigger)

    def sink_ids(self) -> list[int]:
        if not Path(self.output).exists():
            return []
        return sorted(int(r.value) for r in self.spark.read.schema(FILES_SCHEMA).parquet(self.output).collect())

    def committed(self) -> dict[int, int]:
        return self.topic.group_offsets()

    def ends(self) -> dict[int, int]:
        return self.topic.ends()

    def fault(self, phase: str, length: str) -> Fault:
        if length == "short":
            return Fault(frozenset({REQUESTS[phase]}), 2.0)
        assert phase != "commit", "a long commit outage is not affordable on Kafka (see the module docstring)"
        if phase == "planning":
            return Fault(frozenset({REQUESTS[phase]}), 20.0, "requests")
        return Fault(frozenset({REQUESTS[phase]}), 10.0, "server")

    def retry_options(self, length: str) -> dict[str, Any]:
        if length == "short":
            return {}
        # each bounds fetch: six requests of at most 1 s with backoff (about 12 s), then no further attempt
        return {
            "kafkaConsumer.pollTimeoutMs": 3000,
            "kafka.default.api.timeout.ms": 1000,
            "fetchOffset.numRetries": 0,
        }


#: Every phase x length x trigger that is affordable (no long commit outage, see the module docstring), read modes
#: alternating; the long planning outage (bug 2) under AvailableNow in driver mode and continuous in executor mode.
CASES = (
    Case("test_planning_outage_available_now", "short", "executors"),
    Case("test_planning_outage_available_now", "long", "driver"),
    Case("test_planning_outage_continuous", "long", "executors"),
    Case("test_reading_outage_available_now", "short", "driver"),
    Case("test_reading_outage_available_now", "long", "executors"),
    Case("test_reading_outage_continuous", "long", "driver"),
    Case("test_commit_outage_available_now", "short", "executors"),
    Case("test_commit_outage_continuous", "short", "driver"),
)


class TestKafkaTopicOutages(OutageScenarios):
    """The outage scenarios on a Kafka topic; the combinations are listed in :data:`CASES`."""

    OUTAGE_CASES = CASES

    @pytest.fixture
    def log(self, case: Case, spark, kafka_behind_proxy, checkpoint, tmp_path) -> Any:
        log = KafkaOutageLog(spark, kafka_behind_proxy, checkpoint, tmp_path, case.read_mode)
        yield log
        log.proxy.disarm()
        log.proxy.heal()
        log.proxy.outages.clear()
