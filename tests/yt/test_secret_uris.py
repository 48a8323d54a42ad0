"""Secrets in URIs (issue 31, items 3 and 4): a store password holding characters that mean something in a URI
(``?``, ``#``, ``@``, ``/``, ``%``, a space) and the password of a proxy URI in a ``yt.*`` option. Each test searches
what a user sees (``load()`` errors, ``ytqueue status`` output, "unknown parameter" errors, query plans,
``repr()``) for both halves of the secret."""

from __future__ import annotations

import contextlib
import io
import uuid

import pytest
from typer.testing import CliRunner

from spyt_queue.cli import app
from spyt_queue.errors import OptionError
from spyt_queue.stores.registry import check_uri
from spyt_queue.yt.admin import create_queue
from spyt_queue.zookeeper.store import ZooKeeperStore, parse_uri
from tests.yt.helpers import EVENT_SCHEMA

pytestmark = pytest.mark.spark

#: Passwords as people write them, each holding one character a naive URI split cuts at: both halves are searched.
PASSWORDS = ["Xy7?k2Lq", "Xy7#k2Lq", "Xy7@k2Lq", "Xy7/k2Lq", "Xy7%k2Lq", "Xy7 k2Lq"]
HALVES = ("Xy7", "k2Lq")


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"}, prog_name="ytqueue")
    return f"exit {result.exit_code}\n{result.output}"


def _assert_hidden(**outputs: str) -> None:
    for where, text in outputs.items():
        assert text, f"nothing captured from {where}: the search would prove nothing"
        for half in HALVES:
            assert half not in text, f"a part of the password ({half!r}) is printed in {where}:\n{text}"


def _explained(query) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        query.explain(True)
    return out.getvalue()


@pytest.mark.parametrize("password", PASSWORDS, ids=["question", "hash", "at", "slash", "percent", "space"])
def test_store_password_with_uri_characters_is_never_printed(
    spark, yt, yt_proxy, yt_root, zookeeper, password: str
) -> None:
    """``zookeeper://``, ``hbase://`` and ``kudu://`` URIs whose password holds a URI character: the Spark source
    refuses the password in the URI (``load()``), the stores refuse or mask it, ``ytqueue status --store`` masks it,
    and an unknown URI parameter is named without a part of the password."""
    queue = f"{yt_root}/queue"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=1)
    zk_root = f"/spyt-uri-{uuid.uuid4().hex[:8]}"
    uris = {
        "zookeeper": f"zookeeper://alice:{password}@{zookeeper.hosts}{zk_root}",
        "hbase": f"hbase://alice:{password}@127.0.0.1:9090/offsets",
        "kudu": f"kudu://alice:{password}@127.0.0.1:7051/offsets",
    }
    seen: dict[str, str] = {}
    for scheme, uri in uris.items():
        reader = spark.readStream.format("ytqueue").option("proxy", yt_proxy).option("offsets.store", uri)
        with pytest.raises(Exception) as raised:
            reader.load(queue)
        seen[f"{scheme}_load"] = str(raised.value)
        assert "offsets.store" in seen[f"{scheme}_load"], seen[f"{scheme}_load"]
        with pytest.raises(OptionError) as raised:
            check_uri(f"{uri}?bogus=1")
        seen[f"{scheme}_unknown_parameter"] = str(raised.value)
        seen[f"{scheme}_status_unknown_parameter"] = _cli(
            "status", "--proxy", yt_proxy, "--queue", queue, "--store", f"{uri}?bogus=1"
        )
    assert "bogus" in seen["zookeeper_unknown_parameter"], seen["zookeeper_unknown_parameter"]
    assert "offsets.store.password" in seen["zookeeper_load"], seen["zookeeper_load"]
    for scheme in ("hbase", "kudu"):
        assert "takes no credentials" in seen[f"{scheme}_load"], seen[f"{scheme}_load"]
        seen[f"{scheme}_status"] = _cli("status", "--proxy", yt_proxy, "--queue", queue, "--store", uris[scheme])

    # the Python API and the CLI take a password in a ZooKeeper URI: the one the user meant, masked when shown
    assert parse_uri(uris["zookeeper"])["auth"] == [("digest", f"alice:{password}")]
    assert parse_uri(uris["zookeeper"])["hosts"] == zookeeper.hosts
    store = ZooKeeperStore.from_uri(uris["zookeeper"], "src", "g")
    try:
        seen["describe"], seen["repr"] = store.describe(), repr(store)
    finally:
        store.close()
    status = _cli("status", "--proxy", yt_proxy, "--queue", queue, "--store", uris["zookeeper"])
    assert status.startswith("exit 0") and "zookeeper://" in status, status
    seen["zookeeper_status"] = status
    _assert_hidden(**seen)


PROXY_PASSWORD = "Pq9zR4tw"  # a proxy password: no word Spark's redaction regex knows


def test_a_proxy_uri_password_is_refused_and_masked(spark, yt, yt_proxy, yt_root, tmp_path) -> None:
    """``yt.proxy.http_proxy=http://user:pw@corp:3128`` (which yt.wrapper honours): Spark would print it in every
    plan, so sources and sinks refuse a password in any option value, naming the option and the environment
    variables to use instead; ``repr(YtConnection)`` masks it."""
    from spyt_queue.yt.client import YtConnection

    queue = f"{yt_root}/queue"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=1)
    url = f"http://alice:{PROXY_PASSWORD}@corp.example:3128"
    seen: dict[str, str] = {}
    for name, reader in {
        "stream": spark.readStream.format("ytqueue"),
        "batch": spark.read.format("ytqueue"),
    }.items():
        with pytest.raises(Exception) as raised:
            reader.option("proxy", yt_proxy).option("yt.proxy.http_proxy", url).load(queue)
        seen[name] = str(raised.value)
        assert "yt.proxy.http_proxy" in seen[name] and "HTTPS_PROXY" in seen[name], seen[name]
    rows = spark.range(1).selectExpr("id", "'p' AS payload")
    with pytest.raises(Exception) as raised:
        (
            rows.write.format("ytqueue")
            .option("proxy", yt_proxy)
            .option("yt.proxy.https_proxy", url.replace("http:", "https:"))
            .mode("append")
            .save(f"{yt_root}/out")
        )
    seen["sink"] = str(raised.value)
    assert "yt.proxy.https_proxy" in seen["sink"], seen["sink"]
    connection = YtConnection(yt_proxy, "t", {"proxy": {"http_proxy": url, "request_timeout": 5}})
    seen["repr"] = repr(connection)
    assert "alice:***@corp.example:3128" in seen["repr"] and "request_timeout" in seen["repr"], seen["repr"]
    for where, text in seen.items():
        assert PROXY_PASSWORD not in text, f"the proxy password is printed in {where}:\n{text}"
