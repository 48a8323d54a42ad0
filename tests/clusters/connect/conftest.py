"""One Spark Connect server per test session (``integration/spark_connect.py``, from the installed PySpark) and one
client session of it.

The server's driver Python is this interpreter, so it discovers spyt-queue's sources through the ``pyspark_*``
modules as any classic session does. The client lives in this process beside the classic ``spark`` fixture of other
tests: PySpark marks a process as a Connect client with the environment variable ``SPARK_CONNECT_MODE_ENABLED``
(``pyspark.sql.functions`` and friends then build Connect columns), so that variable is set for each test here only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import serve
from tests.yt.helpers import Pipeline, make_pipeline

pytestmark = pytest.mark.spark


@pytest.fixture(scope="session")
def connect_event_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of the session's Connect server's Spark event log (what its UI and history server show)."""
    return tmp_path_factory.mktemp("connect-event-log")


@pytest.fixture(scope="session")
def connect_server(connect_event_log: Path) -> Iterator[Any]:
    """A Spark Connect server on loopback (``local[2]``), started once for the session and stopped at its end, with
    its event log in ``connect_event_log``.

    Fails with the reason when Java or the Connect client's packages are missing (``pip install
    'spyt-queue[connect]'``) (skipped instead with ``SPYT_ALLOW_MISSING_SERVERS=1``).
    """
    from integration.spark_connect import SparkConnectServer, missing_requirements

    # without this process's YT_PROXY: test_client_environment_is_not_the_servers shows the client's is not used
    event_log = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": connect_event_log.as_uri(),
        "spark.eventLog.compress": "false",  # searched as text
    }
    server = lambda: SparkConnectServer(env={"YT_PROXY": None}, start_timeout=300, config=event_log)  # noqa: E731
    yield from serve(server, missing_requirements())


@pytest.fixture(scope="session")
def connect_spark(connect_server: Any) -> Iterator[Any]:
    """A Spark Connect client session of the session's server (what ``SparkSession.builder.remote(url)`` gives)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    session = ConnectSession.builder.remote(connect_server.url).getOrCreate()
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def connect_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mark this process as a Spark Connect client for one test (as ``SparkSession.builder.remote`` does)."""
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")


@pytest.fixture
def pipe(yt: Any, yt_proxy: str, yt_root: str, checkpoint: str) -> Pipeline:
    """A queue (2 tablets) with a registered consumer, an ordered output table and a checkpoint path (the server runs
    on this machine, so a local path of the test is also one of the server's)."""
    return make_pipeline(yt, yt_proxy, yt_root, checkpoint)
