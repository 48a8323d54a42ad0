"""Credentials the ``ytqueue`` command and the dead-letter targets handle (issue 31, item 7): Kafka security settings
reach every client (not only the producer), the query's YT token goes to the query's cluster only, and a secret file
others may read is warned of."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spyt_queue.cli import app
from spyt_queue.kafka.deadletter import KafkaDeadLetterTarget
from spyt_queue.options import Options
from spyt_queue.yt.deadletter import target_from_options

SASL_PASSWORD = "kf7Hq2mZ9wPd"  # searched for in the output
SASL = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.username": "alice",
    "sasl.password": SASL_PASSWORD,
}


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"}, prog_name="ytqueue")
    return result.exit_code, result.stdout, result.stderr


def _private(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_dead_letter_check_connects_with_the_producers_security_settings(kafka_bootstrap) -> None:
    """A SASL dead-letter producer's start-up check used ``bootstrap.servers`` alone, so it passed on a plaintext
    listener (and could only time out on a secured one): it now speaks SASL like the producer, and fails here."""
    plain = KafkaDeadLetterTarget({"bootstrap.servers": kafka_bootstrap}, f"dlq-{uuid.uuid4().hex[:8]}", create=True)
    plain.check()
    secured = KafkaDeadLetterTarget({"bootstrap.servers": kafka_bootstrap, **SASL}, "dlq-secured", timeout_s=5)
    assert {key: secured._admin_config().get(key) for key in SASL} == SASL
    assert "acks" not in secured._admin_config() and "enable.idempotence" not in secured._admin_config()
    with pytest.raises(Exception) as raised:
        secured.check()
    assert SASL_PASSWORD not in str(raised.value)


def test_status_takes_kafka_security_settings_from_a_file(kafka_bootstrap, tmp_path: Path) -> None:
    """``ytqueue status --kafka-config FILE`` connects with the file's settings: a plaintext client id works, SASL on
    the plaintext listener fails in one line; the password is never printed."""
    topic = f"status-{uuid.uuid4().hex[:8]}"
    ok_file = _private(tmp_path / "plain.properties", "# a client properties file\nclient.id=ytqueue-status\n")
    code, out, err = _cli("status", "--bootstrap-servers", kafka_bootstrap, "--topic", topic, "--group", "g",
                          "--kafka-config", str(ok_file))  # fmt: skip
    assert "Traceback" not in out + err and "readable by others" not in err, out + err
    sasl_file = _private(tmp_path / "sasl.properties", "".join(f"{k}={v}\n" for k, v in SASL.items()))
    code, out, err = _cli("status", "--bootstrap-servers", kafka_bootstrap, "--topic", topic, "--group", "g",
                          "--kafka-config", str(sasl_file))  # fmt: skip
    assert code == 1 and "answered no metadata request" in out + err, out + err
    assert SASL_PASSWORD not in out + err


def test_the_query_token_goes_to_the_query_cluster_only() -> None:
    """``deadLetter.proxy`` naming another cluster: the query's ``token`` (and ``yt.token``) is not sent there;
    ``deadLetter.token`` is. On the query's own cluster the query's token is used as before."""
    query = {"proxy": "prod:80", "token": "query-token", "yt.token": "query-token", "deadLetter.path": "//dlq"}
    elsewhere = target_from_options(Options({**query, "deadLetter.proxy": "other:80"}), "//dlq", False)
    assert elsewhere.connection.proxy == "other:80"
    assert elsewhere.connection.token != "query-token" and "token" not in elsewhere.connection.config
    given = target_from_options(
        Options({**query, "deadLetter.proxy": "other:80", "deadLetter.token": "dlq-token"}), "//dlq", False
    )
    assert given.connection.token == "dlq-token"
    same = target_from_options(Options({**query, "deadLetter.proxy": "http://PROD:80/"}), "//dlq", False)
    assert same.connection.token == "query-token"
    default = target_from_options(Options(query), "//dlq", False)
    assert default.connection.proxy == "prod:80" and default.connection.token == "query-token"


def test_a_secret_file_others_can_read_is_warned_of(tmp_path: Path) -> None:
    """``--store-password-file`` (and ``--kafka-config``) readable by group or world: a warning naming ``chmod 600``,
    as ssh warns of a private key; none for a 0600 file. The password is never printed."""
    loose = _private(tmp_path / "loose", "zkpw-loose-1\n", 0o644)
    tight = _private(tmp_path / "tight", "zkpw-tight-1\n", 0o600)
    outputs = {}
    for name, path in (("loose", loose), ("tight", tight)):
        # a store nobody listens on: the file is read (and checked) first, then the command fails in one line
        outputs[name] = _cli("status", "--proxy", "127.0.0.1:1", "--queue", "//q", "--store",
                             "zookeeper://127.0.0.1:1/spyt", "--store-password-file", str(path))  # fmt: skip
    assert f"chmod 600 {loose}" in outputs["loose"][2] and "0644" in outputs["loose"][2], outputs["loose"]
    assert "readable by others" not in outputs["tight"][2], outputs["tight"]
    for _, out, err in outputs.values():
        assert "zkpw-" not in out + err, out + err
