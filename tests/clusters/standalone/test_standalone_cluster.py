"""The plugin on a real Spark standalone cluster: a master and two workers on loopback (the session's
``spark_cluster``), the driver in a subprocess, every task in an executor process of a worker.

The driver subprocess is a pytest session of its own whose SparkSession connects to the cluster (see the
``SPYT_TEST_SPARK_*`` variables in tests/conftest.py) and which uses this session's YT server and Kafka broker. It runs
the shared stream scenarios on the YT and Kafka sources (tests/contract/streams) and the exactly-once sinks through a
forced replay: YT -> sorted YT table keyed by the source coordinates, Kafka -> sorted YT table, and the transactional
mode.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import KAFKA_BOOTSTRAP_ENV, SPARK_APP_NAME_ENV, SPARK_CONF_ENV, SPARK_MASTER_ENV

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[3]

#: What the driver session runs: a representative subset, kept small for CI time (each test runs several queries;
#: the scenario chosen covers a Trigger.Once batch, capped AvailableNow batches resumed from the checkpoint, exact
#: per-partition ranges and the store at the end).
ON_CLUSTER = [
    "tests/contract/streams/test_yt.py::TestYtQueueStream::test_once_reads_everything_then_available_now_caps_every_batch",
    "tests/contract/streams/test_kafka.py::TestKafkaTopicStream::test_once_reads_everything_then_available_now_caps_every_batch",
    "tests/yt/test_exactly_once.py::test_sorted_target_keyed_by_service_columns_is_idempotent",
    "tests/clusters/standalone/kafka_to_yt.py::test_kafka_into_a_sorted_yt_table_is_exactly_once_through_a_replay",
    "tests/yt/test_transactional.py::test_filter_pipeline_commits_with_its_consumer_and_a_replay_writes_nothing",
]


@pytest.mark.timeout(900)
def test_stream_scenarios_and_exactly_once_sinks_run_on_a_standalone_cluster(
    spark_cluster, yt_proxy, kafka_bootstrap, tmp_path
) -> None:
    app = f"spyt-queue-on-cluster-{uuid.uuid4().hex[:8]}"
    conf = {**spark_cluster.driver_conf(), "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
    env = dict(
        os.environ,
        **{
            SPARK_MASTER_ENV: spark_cluster.master_url,
            SPARK_CONF_ENV: json.dumps(conf),
            SPARK_APP_NAME_ENV: app,
            KAFKA_BOOTSTRAP_ENV: kafka_bootstrap,
            "YT_PROXY": yt_proxy,
            "SPYT_REQUIRE_SERVERS": "1",
            "PYSPARK_PYTHON": spark_cluster.python,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
        },
    )
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "driver")]
    done = subprocess.run([*argv, *ON_CLUSTER], cwd=ROOT, env=env, capture_output=True, text=True, timeout=840)
    report = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, report
    summary = done.stdout.strip().splitlines()[-1]
    passed = re.search(r"\b(\d+) passed\b", summary)
    # A scenario may be parametrized into several tests: at least one per id, none skipped, deselected or failed.
    assert passed and int(passed.group(1)) >= len(ON_CLUSTER), report
    assert not re.search(r"skipped|deselected|failed|error", summary), report

    # The tasks ran in executor processes of both workers, under this application.
    apps = [a for a in spark_cluster.state().get("completedapps", []) if a.get("name") == app]
    assert len(apps) == 1, spark_cluster.state()
    app_dirs = sorted(spark_cluster.work_dir.glob(f"worker-*/{apps[0]['id']}"))
    assert [d.parent.name for d in app_dirs] == ["worker-0", "worker-1"], app_dirs
    for app_dir in app_dirs:
        logs = "".join(p.read_text(errors="replace") for p in app_dir.glob("*/stderr"))
        assert "Running task" in logs, f"no task ran in an executor of {app_dir.parent.name}"
