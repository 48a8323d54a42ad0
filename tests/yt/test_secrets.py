"""Secrets are never printed (issue 24): a ZooKeeper password, a token pasted into the wrong option, the YT token in
``repr()``, and store credentials on the ``ytqueue`` command line. Each test uses a realistic secret that Spark's
own redaction (``spark.redaction.regex`` on option names and values) would not catch, checks that it was really
used where it should be, and searches every output a user can see for it: query plans (``explain``), progress
JSON, error messages, Python logs at DEBUG (kazoo's included) and the CLI's output."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spyt_queue.cli import app
from spyt_queue.errors import OptionError
from spyt_queue.yt.admin import create_queue
from spyt_queue.zookeeper.store import ZooKeeperStore
from tests.yt.helpers import EVENT_SCHEMA, OUTPUT_SCHEMA, produce_ids, store_stream

pytestmark = pytest.mark.spark

ZK_PASSWORD = "zkpw9876"  # a ZooKeeper digest password: no word Spark's redaction regex knows
YT_TOKEN = "y0_AgAAAAB3kQ9zAATuwQAAAAEN7rTbAAD5Xq2Lm4vPs8RdHj1ZcW"  # the shape of a real YTsaurus OAuth token


OTHER_TOOL = "tests.other-tool"


def _logged(caplog) -> str:
    """Every captured log message, but those of the test's own plain kazoo client (:func:`_read_as`)."""
    return "\n".join(r.getMessage() for r in caplog.records if r.name != OTHER_TOOL)


def _explained(df_or_query) -> str:
    """What ``explain(True)`` prints (a DataFrame's or a streaming query's plans)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df_or_query.explain(True)
    return out.getvalue()


def _cli(*args: str, env: dict[str, str | None] | None = None):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", **(env or {})}, prog_name="ytqueue")


def _assert_hidden(secret: str, **outputs: str) -> None:
    for where, text in outputs.items():
        assert text, f"nothing captured from {where}: the search would prove nothing"
        assert secret not in text, f"the secret is printed in {where}:\n{text}"


def _debug_logs(caplog) -> None:
    """Capture every Python log record at DEBUG (kazoo's, spyt-queue's), but py4j's chatter with the JVM."""
    caplog.set_level(logging.WARNING, logger="py4j")
    caplog.set_level(logging.DEBUG)  # second: it sets the capturing handler's level too


def _creator_only_root(zookeeper) -> str:
    """The URI of a fresh root whose znodes only the authenticated creator may read (``acl=creator``)."""
    return zookeeper.uri(f"/spyt-creds-{uuid.uuid4().hex[:8]}?acl=creator")


def _read_as(zookeeper, path: str, password: str | None) -> bytes:
    from kazoo.client import KazooClient

    auth = [("digest", f"alice:{password}")] if password else None
    # another tool, logging to a logger of its own that the searches leave out
    client = KazooClient(hosts=zookeeper.hosts, timeout=15, auth_data=auth, logger=logging.getLogger(OTHER_TOOL))
    client.start(timeout=15)
    try:
        return client.get(path)[0]
    finally:
        client.stop()
        client.close()


# ------------------------------------------------------------------------------- 1. ZooKeeper password


def test_zookeeper_credential_options_are_used_and_never_printed(
    spark, yt, yt_proxy, yt_root, zookeeper, tmp_path, caplog
) -> None:
    """``offsets.store.user``/``offsets.store.password`` authenticate the store (its znodes are creator-only), and the
    password appears in no plan, progress, log, error or CLI output. (No path or URI here holds a word of Spark's
    redaction regex, which would make Spark hide the whole value and the test prove nothing.)"""
    from kazoo.exceptions import NoAuthError

    _debug_logs(caplog)
    queue, output = f"{yt_root}/queue", f"{yt_root}/out"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=2)
    create_queue(yt, output, OUTPUT_SCHEMA, tablet_count=1)
    produce_ids(yt, queue, 0, 20)
    uri = _creator_only_root(zookeeper)
    credentials = {"offsets.store.user": "alice", "offsets.store.password": ZK_PASSWORD}
    df = store_stream(spark, yt_proxy, queue, uri, "enricher", max_rows_per_partition=4, **credentials)
    plan = _explained(df)
    assert "offsets.store" in plan and "zookeeper://" in plan, plan
    query = (
        df.writeStream.format("ytqueue")
        .option("proxy", yt_proxy)
        .option("path", output)
        .option("checkpointLocation", str(tmp_path / "chk"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    progress = "\n".join(p.json for p in query.recentProgress) + json.dumps(query.lastProgress, default=str)
    assert '"numInputRows"' in progress, progress
    query_plan = _explained(query)

    source = f"yt:{queue}#{yt.get(queue + '/@id')}"
    store = ZooKeeperStore.from_uri(uri, source, "enricher", user="alice", password=ZK_PASSWORD)
    try:
        assert store.committed() == {"0": 10, "1": 10}
        described, shown = store.describe(), repr(store)
        logged_store = _logged(caplog)
        assert "Sending request" in logged_store, "kazoo's DEBUG log was captured (it logs the Auth request)"
        path = store.path_of("0")
    finally:
        store.close()
    assert _read_as(zookeeper, path, ZK_PASSWORD) == b"10", "the password authenticated the store"
    with pytest.raises(NoAuthError):
        _read_as(zookeeper, path, None)

    # the CLI reads the same creator-only positions with the password from the environment, then from a file
    env_run = _cli(
        "status", "--proxy", yt_proxy, "--queue", queue, "--store", uri, "--store-user", "alice",
        "--offsets-group", "enricher", env={"SPYT_STORE_PASSWORD": ZK_PASSWORD},
    )  # fmt: skip
    assert env_run.exit_code == 0, env_run.output
    assert "zookeeper://" in env_run.stdout and "10" in env_run.stdout
    secret_file = tmp_path / "zk-password"
    secret_file.write_text(ZK_PASSWORD + "\n")
    file_run = _cli(
        "status", "--proxy", yt_proxy, "--queue", queue, "--store", uri.replace("://", "://alice@"),
        "--store-password-file", str(secret_file), "--offsets-group", "enricher", env={"SPYT_STORE_PASSWORD": None},
    )  # fmt: skip
    assert file_run.exit_code == 0, file_run.output
    assert "10" in file_run.stdout
    no_password = _cli(
        "status", "--proxy", yt_proxy, "--queue", queue, "--store", uri.replace("?acl=creator", ""),
        "--offsets-group", "enricher",
        env={"SPYT_STORE_PASSWORD": None},
    )  # fmt: skip
    assert no_password.exit_code == 1 and "NoAuth" in no_password.output, no_password.output

    _assert_hidden(
        ZK_PASSWORD,
        plan=plan,
        streaming_query_plan=query_plan,
        progress=progress,
        describe=described,
        repr=shown,
        logs=_logged(caplog),
        cli_env=env_run.output,
        cli_file=file_run.output,
        cli_refused=no_password.output,
    )


def test_zookeeper_uri_userinfo_is_masked_in_every_message(spark, zookeeper, yt_proxy, caplog) -> None:
    """A password in the ``offsets.store`` URI: Spark would print the URI in every plan, so the Spark source refuses
    it (naming the options to use instead) without repeating it; the store's own errors, ``describe()`` and
    ``repr()`` mask it; the CLI still takes it and reads with it, and masks it too."""
    _debug_logs(caplog)
    # a root of this test's own: its creator-only znodes must not lock other tests (and the docs' /spyt) out
    secret_uri = f"zookeeper://alice:{ZK_PASSWORD}@{zookeeper.hosts}/spyt-masked-{uuid.uuid4().hex[:8]}"
    messages: dict[str, str] = {}
    for name, uri in {
        "valid_uri": secret_uri,
        "no_host": f"zookeeper://alice:{ZK_PASSWORD}@/spyt",
        "bad_port": f"zookeeper://alice:{ZK_PASSWORD}@zk:x2181/spyt",
        "slash_in_password": f"zookeeper://alice:{ZK_PASSWORD}/x@zk/spyt",
        "bad_layout": f"zookeeper://alice:{ZK_PASSWORD}@zk/spyt?layout=storm",
        "unknown_scheme": f"zk://alice:{ZK_PASSWORD}@zk/spyt",
    }.items():
        reader = spark.readStream.format("ytqueue").option("proxy", yt_proxy).option("offsets.store", uri)
        with pytest.raises(Exception) as raised:
            reader.load("//tmp/spyt-never-read")
        messages[f"spark_{name}"] = str(raised.value)
        assert "offsets.store" in messages[f"spark_{name}"], messages[f"spark_{name}"]
    assert "offsets.store.password" in messages["spark_valid_uri"], messages["spark_valid_uri"]

    for name, uri in {
        "no_host": f"zookeeper://alice:{ZK_PASSWORD}@/spyt",
        "both_passwords": secret_uri,
    }.items():
        with pytest.raises(OptionError) as raised:
            ZooKeeperStore.from_uri(uri, "src", "g", password="other" if name == "both_passwords" else None)
        messages[f"store_{name}"] = str(raised.value)
    store = ZooKeeperStore.from_uri(f"{secret_uri}/{uuid.uuid4().hex[:8]}?acl=creator", "src", "g")
    try:
        store.advance({"0": None}, {"0": 3})
        assert store.committed() == {"0": 3}
        messages["describe"], messages["repr"] = store.describe(), repr(store)
    finally:
        store.close()
    cli = _cli("status", "--proxy", yt_proxy, "--queue", "//tmp/nope", "--store", f"zookeeper://alice:{ZK_PASSWORD}@/x")
    messages["cli_error"] = cli.output
    assert cli.exit_code == 1 and "alice:***@" in cli.output, cli.output
    messages["logs"] = _logged(caplog)
    _assert_hidden(ZK_PASSWORD, **messages)


def test_hbase_and_kudu_stores_take_no_credentials(spark, yt_proxy) -> None:
    """The HBase Thrift gateway and Kudu (Kerberos) take no password: credentials given anyway are refused, without
    repeating them."""
    from spyt_queue.stores.registry import StoreCredentials, check_uri

    messages = {}
    for uri in (f"hbase://alice:{ZK_PASSWORD}@thrift:9090/t", f"kudu://alice:{ZK_PASSWORD}@master:7051/t"):
        with pytest.raises(OptionError, match="takes no credentials") as raised:
            check_uri(uri)
        messages[uri.split(":")[0] + "_uri"] = str(raised.value)
        with pytest.raises(OptionError, match="takes no credentials") as raised:
            check_uri(uri.replace(f"alice:{ZK_PASSWORD}@", ""), StoreCredentials("alice", ZK_PASSWORD))
        messages[uri.split(":")[0] + "_option"] = str(raised.value)
    reader = (
        spark.readStream.format("ytqueue")
        .option("proxy", yt_proxy)
        .option("offsets.store", "hbase://thrift:9090/t")
        .option("offsets.store.password", ZK_PASSWORD)
    )
    with pytest.raises(Exception, match="takes no credentials") as raised:
        reader.load("//tmp/spyt-never-read")
    messages["spark"] = str(raised.value)
    _assert_hidden(ZK_PASSWORD, **messages)


# -------------------------------------------------------------------------------- 2. echoed option values


@pytest.mark.parametrize(
    "option", ["max_rows_per_partition", "maxTriggerDelay", "startingOffsets", "failOnDataLoss", "connect_timeout"]
)
def test_a_long_value_in_the_wrong_option_is_not_echoed(spark, yt, yt_proxy, yt_root, option: str) -> None:
    """A token pasted into the wrong option: the error names the option and shows the value's first characters and
    length, never the token."""
    create_queue(yt, f"{yt_root}/queue", EVENT_SCHEMA, tablet_count=1)
    reader = spark.read.format("ytqueue").option("proxy", yt_proxy).option(option, YT_TOKEN)
    with pytest.raises(Exception) as raised:
        reader.load(f"{yt_root}/queue")
    message = str(raised.value)
    assert f"Invalid option '{option}'" in message and f"({len(YT_TOKEN)} characters)" in message, message
    assert "'y0_…'" in message, message
    _assert_hidden(YT_TOKEN, error=message)


def test_short_values_are_still_shown(spark, yt, yt_proxy, yt_root) -> None:
    create_queue(yt, f"{yt_root}/queue", EVENT_SCHEMA, tablet_count=1)
    reader = spark.read.format("ytqueue").option("proxy", yt_proxy).option("max_rows_per_partition", "10k")
    with pytest.raises(Exception, match=r"expected an integer >= 1, got '10k'"):
        reader.load(f"{yt_root}/queue")


# ----------------------------------------------------------------------------------- 3. repr of connections


def test_repr_of_connections_and_stores_hides_credentials(zookeeper) -> None:
    from spyt_queue.options import Options
    from spyt_queue.yt.options import connection_from_options
    from spyt_queue.yt.transactional import AttachedConnection

    connection = connection_from_options(
        Options({"proxy": "localhost:1", "token": YT_TOKEN, "yt.token": YT_TOKEN, "yt.proxy.request_timeout": "5"})
    )
    assert connection.token == YT_TOKEN and connection.config["token"] == YT_TOKEN  # still there for the client
    attached = AttachedConnection("localhost:1", YT_TOKEN, {"token": YT_TOKEN}, transaction_id="1-2-3-4")
    store = ZooKeeperStore.from_uri(zookeeper.uri("/r"), "src", "g", user="alice", password=ZK_PASSWORD)
    texts = {
        "repr": repr(connection),
        "str": str(connection),
        "attached": repr(attached),
        "store_repr": repr(store),
    }
    assert "localhost:1" in texts["repr"] and "request_timeout" in texts["repr"], texts["repr"]
    _assert_hidden(YT_TOKEN, **{k: v for k, v in texts.items() if not k.startswith("store")})
    _assert_hidden(ZK_PASSWORD, store_repr=texts["store_repr"])


# ---------------------------------------------------------------------------------------- 4. CLI credentials


def test_cli_takes_store_credentials_outside_the_command_line(yt_proxy, yt, yt_root, zookeeper, tmp_path) -> None:
    """``ytqueue status`` reads a creator-only store with the password from ``SPYT_STORE_PASSWORD`` (a subprocess,
    as a user runs it): the password is on no command line (``ps``) and in none of the output; a password in
    ``--store`` still works, with a hint on stderr to move it out of the command line."""
    queue = f"{yt_root}/queue"
    create_queue(yt, queue, EVENT_SCHEMA, tablet_count=1)
    uri = _creator_only_root(zookeeper)
    source = f"yt:{queue}#{yt.get(queue + '/@id')}"
    store = ZooKeeperStore.from_uri(uri, source, "g", user="alice", password=ZK_PASSWORD)
    try:
        store.advance({"0": None}, {"0": 0})
    finally:
        store.close()
    argv = [sys.executable, "-m", "spyt_queue.cli", "status", "--proxy", yt_proxy, "--queue", queue, "--store",
            uri, "--store-user", "alice", "--offsets-group", "g"]  # fmt: skip
    env = {**os.environ, "SPYT_STORE_PASSWORD": ZK_PASSWORD, "COLUMNS": "200"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "zookeeper://" in done.stdout
    in_uri = _cli(
        "status", "--proxy", yt_proxy, "--queue", queue, "--store", uri.replace("://", f"://alice:{ZK_PASSWORD}@"),
        "--offsets-group", "g", env={"SPYT_STORE_PASSWORD": None},
    )  # fmt: skip
    assert in_uri.exit_code == 0, in_uri.output
    assert "SPYT_STORE_PASSWORD" in in_uri.stderr, in_uri.stderr
    help_text = _cli("status", "--help").output
    assert "SPYT_STORE_PASSWORD" in help_text and "--store-password-file" in help_text
    _assert_hidden(ZK_PASSWORD, argv=" ".join(argv), stdout=done.stdout, stderr=done.stderr + "-", in_uri=in_uri.output)
