"""Where the Kudu client jars come from (no JVM is started here)."""

from __future__ import annotations

import os

import pytest

from spyt_queue.sinks.kudu.client import KUDU_JARS_ENV, KuduUnavailableError, kudu_jars


def test_explicit_directory_wins_over_the_environment(tmp_path, monkeypatch) -> None:
    given, env = tmp_path / "given", tmp_path / "env"
    for d in (given, env):
        d.mkdir()
        (d / "kudu-client-1.18.1.jar").write_bytes(b"")
        (d / "async-1.4.1.jar").write_bytes(b"")
    monkeypatch.setenv(KUDU_JARS_ENV, str(env))
    assert kudu_jars(str(given)) == [str(given / "async-1.4.1.jar"), str(given / "kudu-client-1.18.1.jar")]
    assert kudu_jars() == [str(env / "async-1.4.1.jar"), str(env / "kudu-client-1.18.1.jar")]
    paths = os.pathsep.join([str(env / "kudu-client-1.18.1.jar"), str(given / "async-1.4.1.jar")])
    assert kudu_jars(paths) == [str(env / "kudu-client-1.18.1.jar"), str(given / "async-1.4.1.jar")]


def test_no_client_jar_says_how_to_get_one(tmp_path) -> None:
    with pytest.raises(KuduUnavailableError, match=r"no kudu-client jar .*install\.sh --kudu-only.*kudu\.jars"):
        kudu_jars(str(tmp_path))
