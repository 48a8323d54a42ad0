"""The outage scenarios on a YT queue of the session's embedded server, reached through a
:class:`~integration.fault_proxy.FaultProxy` of its own (source and sink alike: the cluster is what goes away), into
each exactly-once YT sink of ``docs/writing-yt.md`` ("Delivery modes").

Short outages last 2 s under the clients' default retries (``yt.wrapper``'s, only with a quicker backoff). Long ones
turn ``yt.wrapper``'s retries off on the source (``yt.proxy.retries.enable=false``,
``yt.dynamic_table_retries.enable=false``: a refused connection fails the call at once), so that spyt-queue's own
retries are all that is left: ``fetchOffset.numRetries`` (3, 1 s apart) for the bounds, the committer's five
(about 15 s of backoff) for the store. A long outage lasts 8 s (planning: longer than the bounds' retries; reading: a
pull has no retries beyond its client's) or, for the commit, 20 s (longer than the committer's).
"""

from __future__ import annotations

from typing import Any

import pytest

from integration.fault_proxy import FaultProxy
from spyt_queue.yt.admin import column, create_consumer, create_producer, create_queue, create_sorted_table
from tests.contract.streams.outages import Case, Fault, OutageLog, OutageScenarios
from tests.yt.helpers import EVENT_SCHEMA, produce_ids

pytestmark = pytest.mark.spark

#: ``yt.wrapper`` retries as configured by default, with a backoff of 0.3-1 s instead of 2-20 s (short outages).
QUICK_BACKOFF = {
    "yt.proxy.retries.backoff.exponential_policy.start_timeout": 300,
    "yt.proxy.retries.backoff.exponential_policy.max_timeout": 1000,
    "yt.dynamic_table_retries.backoff.exponential_policy.start_timeout": 300,
    "yt.dynamic_table_retries.backoff.exponential_policy.max_timeout": 1000,
}
#: No ``yt.wrapper`` retries (long outages): what is left are spyt-queue's own.
NO_CLIENT_RETRIES = {"yt.proxy.retries.enable": "false", "yt.dynamic_table_retries.enable": "false"}
REQUESTS = {"planning": "get_tablet_infos", "reading": "pull_consumer", "commit": "execute_batch"}


class YtOutageLog(OutageLog):
    """A two-tablet queue with a consumer, read into ``sink``: ``sorted`` (a sorted target keyed by the source's
    service columns), ``producer`` (an ordered target through producer sessions) or ``transactional`` (an ordered
    target; rows and consumer advance in one transaction). The query talks to :attr:`proxy`; the checks use
    ``yt``, which talks to the server directly."""

    def __init__(self, yt: Any, server: str, root: str, checkpoint: str, read_mode: str, sink: str) -> None:
        self.yt, self.root, self.checkpoint = yt, root, checkpoint
        self.read_mode, self.sink = read_mode, sink
        self.queue, self.consumer, self.target = f"{root}/queue", f"{root}/consumer", f"{root}/target"
        self.source_name = self.queue
        self.next_id = 0
        create_queue(yt, self.queue, EVENT_SCHEMA, tablet_count=2)
        create_consumer(yt, self.consumer, self.queue)
        payload = [column("id", "int64"), column("payload", "string")]
        if sink == "sorted":
            keys = [
                column("__spyt_streaming_src_tablet_index", "int64", sort_order="ascending"),
                column("__spyt_streaming_src_row_index", "int64", sort_order="ascending"),
            ]
            create_sorted_table(yt, self.target, keys + payload)
        else:
            create_queue(yt, self.target, payload)
        if sink == "producer":
            self.producer = f"{root}/producer"
            create_producer(yt, self.producer)
        self.proxy = FaultProxy(server, protocol="http").start()

    def produce(self, count: int) -> list[int]:
        ids = produce_ids(self.yt, self.queue, self.next_id, count)
        self.next_id += count
        return ids

    def start(self, spark: Any, trigger: dict[str, Any], **options: Any) -> Any:
        reader = (
            spark.readStream.format("ytqueue")
            .option("proxy", self.proxy.address)
            .option("consumer_path", self.consumer)
            .option("read_mode", self.read_mode)
            .option("include_service_columns", str(self.sink != "transactional").lower())
        )
        for key, value in options.items():
            reader = reader.option(key, str(value))
        columns = ["id", "payload"]
        if self.sink != "transactional":  # the sorted target's key; the producer sessions' sequence numbers
            columns += ["__spyt_streaming_src_tablet_index", "__spyt_streaming_src_row_index"]
        writer = (
            reader.load(self.queue)
            .selectExpr(*columns)
            .writeStream.format("ytqueue")
            .option("proxy", self.proxy.address)
            .option("path", self.target)
            .option("checkpointLocation", self.checkpoint)
        )
        for key, value in QUICK_BACKOFF.items():  # the sink rides out every outage with its client's retries
            writer = writer.option(key, str(value))
        if self.sink == "producer":
            writer = writer.option("producer_path", self.producer)
        elif self.sink == "transactional":
            writer = writer.option("transactional", "true").option("consumer_path", self.consumer)
        return writer.trigger(**trigger).start()

    def sink_ids(self) -> list[int]:
        return sorted(int(r["id"]) for r in self.yt.select_rows(f"id from [{self.target}]"))

    def committed(self) -> dict[int, int]:
        rows = self.yt.select_rows(f'* from [{self.consumer}] where queue_path = "{self.queue}"')
        return {int(r["partition_index"]): int(r["offset"]) for r in rows}

    def ends(self) -> dict[int, int]:
        infos = self.yt.get_tablet_infos(self.queue, [0, 1])["tablets"]
        return {i: int(t["total_row_count"]) for i, t in enumerate(infos)}

    def fault(self, phase: str, length: str) -> Fault:
        seconds = 2.0 if length == "short" else 20.0 if phase == "commit" else 8.0
        return Fault(frozenset({REQUESTS[phase]}), seconds)

    def retry_options(self, length: str) -> dict[str, Any]:
        return dict(QUICK_BACKOFF) if length == "short" else dict(NO_CLIENT_RETRIES)


def _cases() -> tuple[Case, ...]:
    """Every phase x length x trigger, with the sorted target unless said otherwise; the read mode alternates where
    the phase does not depend on it. Both read modes for the long outages under AvailableNow while planning (bug 2)
    and reading (the pulls themselves differ); the producer-session and transactional sinks on the long AvailableNow
    outages where a batch is in flight (reading, commit: a failed run is restarted and a replay could write twice)
    and, for the transactional sink, on a short commit outage of a running query (its own advance meets it). Left
    out for the suite's time: a short planning outage under AvailableNow (the continuous one covers the retries) and a
    long executor read into the sorted target (the producer and transactional sinks cover it)."""
    sorted_target = [
        Case("test_planning_outage_available_now", "long", "executors"),
        Case("test_planning_outage_available_now", "long", "driver"),
        Case("test_reading_outage_available_now", "short", "driver"),
        Case("test_reading_outage_available_now", "long", "driver"),
        Case("test_commit_outage_available_now", "short", "executors"),
        Case("test_commit_outage_available_now", "long", "executors"),
        Case("test_planning_outage_continuous", "short", "driver"),
        Case("test_planning_outage_continuous", "long", "executors"),
        Case("test_reading_outage_continuous", "long", "driver"),
        Case("test_commit_outage_continuous", "long", "executors"),
    ]
    other_sinks = [
        Case(test, "long", "executors", sink)
        for sink in ("producer", "transactional")
        for test in ("test_reading_outage_available_now", "test_commit_outage_available_now")
    ]
    return (
        *(Case(c.test, c.length, c.read_mode, "sorted") for c in sorted_target),
        *other_sinks,
        Case("test_commit_outage_continuous", "short", "executors", "transactional"),
    )


class TestYtQueueOutages(OutageScenarios):
    """The outage scenarios on a YT queue; the combinations are listed (and justified) in :func:`_cases`."""

    OUTAGE_CASES = _cases()

    @pytest.fixture
    def log(self, case: Case, yt, yt_proxy, yt_root, checkpoint) -> Any:
        log = YtOutageLog(yt, yt_proxy, yt_root, checkpoint, case.read_mode, case.sink)
        yield log
        log.proxy.stop()
