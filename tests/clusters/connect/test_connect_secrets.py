"""Secrets a Spark Connect client passes as options (issue 31, item 1): Connect records each request's plan as text
in the server's event log and UI (Connect and SQL tabs), redacted only by ``spark.sql.redaction.string.regex``,
which Spark leaves unset; the launcher sets it. The test sends ``token``, ``deadLetter.token``,
``offsets.store.password`` and ``kafka.sasl.password`` from a client and searches the server's event log, its log
and its work directory for them; the launcher's own files hold no secret of its environment either."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.yt.helpers import Pipeline

pytestmark = pytest.mark.spark

#: Realistic secrets no word of Spark's redaction regex matches.
SECRETS = {
    "token": "y0_AgAAAAB3kQ9zAATuwQAAAAEN7rTbAAD5Xq2Lm4vPs8RdHj1ZcW",
    "deadLetter.token": "y0_AgAAAAC9Wd8pLq3Rt5Zx2Mn7Kv1Hs4Gb6Jf0YcXe8Ua",
    "offsets.store.password": "zkpw9876connect",
    "kafka.sasl.password": "kf7Hq2mZ9wPdConnect",
}


def _event_log_text(directory: Path) -> str:
    return "\n".join(path.read_text(errors="replace") for path in sorted(directory.rglob("*")) if path.is_file())


def test_option_secrets_are_redacted_in_the_connect_servers_event_log(
    connect_server, connect_spark, connect_event_log: Path, pipe: Pipeline
) -> None:
    """Reads with each secret option (those that fail do so after the server recorded the request): the event log
    holds the requests (the queue path is there) but none of the secrets; nor do the server's log and files."""
    yt_read = (
        connect_spark.read.format("ytqueue")
        .option("proxy", pipe.proxy)
        .option("token", SECRETS["token"])
        .option("deadLetter.path", f"{pipe.queue}_dead")
        .option("deadLetter.proxy", pipe.proxy)
        .option("deadLetter.token", SECRETS["deadLetter.token"])
        .option("deadLetter.create", "true")
    )
    assert yt_read.load(pipe.queue).count() >= 0
    with pytest.raises(Exception, match=r"offsets\.store"):
        (
            connect_spark.read.format("ytqueue")
            .option("proxy", pipe.proxy)
            .option("offsets.store.password", SECRETS["offsets.store.password"])
            .load(pipe.queue)
            .collect()
        )
    with pytest.raises(Exception):  # noqa: B017 - whatever the unreachable broker makes of it
        (
            connect_spark.read.format("ytqueue")
            .option("kafka.bootstrap.servers", "127.0.0.1:1")
            .option("subscribe", "events")
            .option("connect_timeout", "2")
            .option("kafka.sasl.password", SECRETS["kafka.sasl.password"])
            .load()
            .collect()
        )
    event_log = _event_log_text(connect_event_log)
    assert pipe.queue in event_log, "the event log does not hold the requests: the search would prove nothing"
    where = {"event log": event_log, "server log": connect_server.log_tail(100000)}
    assert connect_server.work_dir is not None
    for path in connect_server.work_dir.rglob("*"):
        if path.is_file() and path.stat().st_size < 50_000_000:
            where[str(path)] = path.read_text(errors="replace")
    for name, secret in SECRETS.items():
        for place, text in where.items():
            assert secret not in text, f"{name} is written in the Connect server's {place}"


def test_the_launchers_files_hold_no_secret_of_its_environment(tmp_path: Path) -> None:
    """The launcher's command file names the environment it sets without secret values, readable by its owner
    only; the server's environment does not go through a command line (``ps`` shows those)."""
    from integration.java_server import find_java
    from integration.spark_connect import SparkConnectServer

    secret = "y0_AgAAAAB3kQ9zLauncherSecretZcW"
    server = SparkConnectServer(env={"YT_TOKEN": secret, "YT_PROXY": "localhost:1"}, work_dir=tmp_path / "work")
    server.java = find_java()
    server._prepare_work_dir()
    server._pick_ports()
    server._write_configs()
    command = server._command()
    assert not any(secret in part for part in command), command
    assert server._environment()["YT_TOKEN"] == secret
    text = server.command_text(command)
    assert "YT_TOKEN" in text and secret not in text and "YT_PROXY=localhost:1" in text, text
    path = server.write_command_file(command)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and secret not in path.read_text()


def test_the_documented_server_setting_is_the_launchers() -> None:
    """docs/security.md gives Connect users the regex the tested launcher sets."""
    from integration.spark_connect import CONNECT_REDACTION_REGEX

    page = (Path(__file__).parents[3] / "docs" / "security.md").read_text()
    assert f"spark.sql.redaction.string.regex={CONNECT_REDACTION_REGEX}'" in page
