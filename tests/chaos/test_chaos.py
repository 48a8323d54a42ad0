"""The short chaos run of CI: a producer keeps writing while the streaming driver is SIGKILLed (with its
checkpoints deleted: the restart resumes from every store), the embedded YT server is SIGKILLed and the Kafka broker
too, each restarted, and, the driver running on the session's standalone Spark cluster, an executor and a whole worker
are SIGKILLed mid-batch; every exactly-once pipeline must end with nothing lost and nothing twice, the at-least-once
one with nothing lost, every store at the source's end, and no acknowledged write missing from a server.
``bench/chaos.py`` runs the same harness longer."""

from __future__ import annotations

import pytest

from tests.chaos.harness import EXACTLY_ONCE, PIPELINES, ChaosConfig, missing_requirements, run_chaos
from tests.conftest import require_or_skip

pytestmark = pytest.mark.spark


def _require_servers() -> None:
    reason = missing_requirements(PIPELINES)
    if not reason:
        return
    require_or_skip(reason)


@pytest.mark.timeout(1800)  # JVM restarts of the driver and executors: minutes on a loaded 2-core machine
def test_every_pipeline_keeps_its_guarantee_through_sigkills(tmp_path, spark_cluster) -> None:
    _require_servers()
    # Every pipeline in one driver (spyt_queue.register makes concurrent starts safe): one JVM to restart per event.
    config = ChaosConfig(
        work_dir=tmp_path / "chaos",
        kills=3,  # a driver kill (its checkpoints deleted), a YT server kill, a broker restart
        executor_kills=1,
        worker_kills=1,
        cluster=spark_cluster,
        rows=1500,
        seconds=30,
        seed=13,
        max_pause_s=1.0,  # CI time: the longer pauses of bench/chaos.py add nothing a short run can show
        queries_per_driver=len(PIPELINES),
    )
    report = run_chaos(config)
    lines = "\n".join(report.lines())
    print(lines)
    assert sorted(report.events) == sorted(
        ["driver-fresh", "kafka-broker", "yt-server", "executor", "worker"]
    ), lines
    assert report.executors_lost >= 2, lines  # the drivers saw every executor and worker kill
    assert {p.name for p in report.pipelines} == set(PIPELINES), lines
    for result in report.pipelines:
        assert result.rows > 0, lines
        assert result.lost == 0, lines
        assert result.committed_at_end, lines
        if result.guarantee == EXACTLY_ONCE:
            assert result.duplicated == 0, lines
    for server in report.servers:
        assert server.acknowledged > 0 and server.lost_acknowledged == 0, lines
