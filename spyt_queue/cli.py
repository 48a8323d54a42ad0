"""The ``ytqueue`` command: create what a pipeline needs, run the embedded local server, show consumer lag, run
the demo.

Every error is printed as one line (``Error: ...``) with exit code 1; ``--debug`` (anywhere on the command line)
shows the traceback instead.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

DEFAULT_DATA_DIR = Path("ytqueue-data")
# The commands talk to a cluster interactively: fail fast instead of yt.wrapper's minutes of retries.
CLI_YT_CONFIG: dict[str, Any] = {"proxy": {"retries": {"enable": False}, "connect_timeout": 10_000}}
#: :data:`CLI_YT_CONFIG` as a query's ``yt.*`` options (without the prefix), for the library's option parser.
CLI_YT_OPTIONS: dict[str, str] = {"proxy.retries.enable": "false", "proxy.connect_timeout": "10000"}
_PROXY_HELP = "YT proxy, e.g. localhost:8000 (default: $YT_PROXY)."
#: Where ``ytqueue status`` reads the password of ``--store`` (as yt.wrapper reads ``YT_TOKEN``).
STORE_PASSWORD_ENV = "SPYT_STORE_PASSWORD"
#: Seconds the commands wait for a Kafka broker, ZooKeeper, a Kudu master or an HBase gateway to accept a connection.
CONNECT_TIMEOUT_S = 10.0
#: Seconds ``status`` waits for an offset store that accepted the connection to answer (a hung or wrong server).
STORE_ANSWER_TIMEOUT_S = 10.0
#: Loggers of client libraries that print every retry (kazoo's "Connection dropped", thrift's connect errors,
#: librdkafka's lines as spyt-queue files them): silent unless ``--debug``; the command's own error says it once.
CLIENT_LOGGERS = ("kazoo", "thrift", "happybase", "spyt_queue.kafka.librdkafka", "jpype")
#: What each endpoint is, its default port, and what to do when it cannot be reached.
ENDPOINTS: dict[str, tuple[str, int, str]] = {
    "kafka": ("Kafka", 9092, "is the broker running? (a local one: docs/kafka.md, 'A local broker')"),
    "zookeeper": ("ZooKeeper", 2181, "is it running? (a local one: docs/offset-stores.md, 'ZooKeeper')"),
    "kudu": ("the Kudu master", 7051, "is it running? (a local one: docs/kudu.md, 'The kudu:// offset store')"),
    "hbase": ("the HBase Thrift gateway", 9090, "is it running? (a local one: docs/hbase.md, 'A local HBase')"),
}


class CliError(Exception):
    """A mistake on the command line or a state the command refuses: printed as one line."""


try:  # typer >= 0.22 vendors click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - older typer depends on click
    from click.exceptions import ClickException

# Usage errors, help, Ctrl-C and explicit exits keep click's own handling.
_PASS_THROUGH = (ClickException, typer.Exit, typer.Abort)


class _Group(TyperGroup):
    """The ``ytqueue`` group: ``--debug`` is accepted anywhere, and errors become one line."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        """Run the command; usage errors (bad option values, missing arguments) are printed as one line too."""
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
        except ClickException as error:
            if type(error).__name__ == "NoArgsIsHelpError":  # ``ytqueue`` alone: the help, as typer shows it
                return super().main(*args, **kwargs)
            ctx = getattr(error, "ctx", None)
            where = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            typer.secho(f"Error: {' '.join(error.format_message().split())}{where}", err=True, fg="red")
            _exit(error.exit_code)
        except typer.Abort:
            typer.secho("Aborted.", err=True, fg="red")
            _exit(1)
        _exit(result if isinstance(result, int) else 0)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--debug" in args:
            args = ["--debug"] + [arg for arg in args if arg != "--debug"]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as error:
            if isinstance(error, _PASS_THROUGH) or ctx.meta.get("ytqueue.debug"):
                raise
            typer.secho(f"Error: {one_line(error)}", err=True, fg="red")
            raise typer.Exit(1) from None


#: Set when :func:`_within` left a thread blocked in a client call (a store that never answers).
_LEFT_BEHIND = threading.Event()
#: Set by :func:`run`, the ``ytqueue`` console script: the process is the command's own, so :func:`_exit` may end it
#: at once. Called in-process (``typer.testing.CliRunner``, a notebook), the command never ends its host.
_OWN_PROCESS = threading.Event()


def _jvm_started() -> bool:
    """Whether this process started a JVM (the Kudu client, under JPype): its threads make the interpreter's normal
    shutdown abort now and then (``FATAL: exception not rethrown``), even when no call was left blocked."""
    jpype = sys.modules.get("jpype")
    try:
        return bool(jpype is not None and jpype.isJVMStarted())
    except Exception:  # a JPype without the call: no JVM of ours to worry about
        return False


def _exit(code: int) -> None:
    """End the command with ``code``. After :func:`_within` left a thread blocked inside a native client (the Kudu
    Java client, under JPype), the interpreter's shutdown would tear that thread down mid-call and abort the process
    (``FATAL: exception not rethrown``, SIGABRT), and a started JVM's threads make it abort now and then too: in
    either case the output is flushed and the process ends at once, if it is the command's own (:func:`run`): a host
    that called the command in-process (a test runner, a notebook) gets ``SystemExit`` as from any command."""
    if _OWN_PROCESS.is_set() and (_LEFT_BEHIND.is_set() or _jvm_started()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def one_line(error: BaseException) -> str:
    """``error`` as one line: YT error trees, connection failures and our own errors alike."""
    from yt.wrapper.errors import YtResponseError

    if isinstance(error, YtResponseError):
        from spyt_queue.yt.errors import error_codes, yt_message

        code = next(iter(sorted(error_codes(error.error) - {1})), None)
        text = yt_message(error) + (f" (YT error {code})" if code else "")
    elif isinstance(error, OSError) and "Max retries exceeded" in str(error):
        host = re.search(r"host='([^']*)', port=(\d+)", str(error))
        reason = re.search(r"\[Errno -?\d+\] ([^'\")]+)", str(error))
        where = f"{host.group(1)}:{host.group(2)}" if host else "the proxy"
        text = f"cannot reach {where}: {reason.group(1) if reason else type(error).__name__}"
    else:
        text = str(error).strip() or type(error).__name__
        if not isinstance(error, (CliError, ValueError)) and not type(error).__module__.startswith("spyt_queue"):
            text = f"{type(error).__name__}: {text}"
    return " ".join(text.split())


app = typer.Typer(
    cls=_Group,
    help="spyt-queue: YTsaurus queues and Kafka topics in Spark Structured Streaming.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console(soft_wrap=True)  # long paths and commands stay on one line, copy-pastable


@app.callback()
def main(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show the full traceback of an error (also after a command)."),
) -> None:
    """spyt-queue: YTsaurus queues and Kafka topics in Spark Structured Streaming."""
    ctx.meta["ytqueue.debug"] = debug
    if not debug:  # quiet for this command only: an in-process caller (a notebook, a test) keeps its logging
        loggers = [logging.getLogger(name) for name in CLIENT_LOGGERS]
        levels = [logger.level for logger in loggers]
        for logger in loggers:
            logger.setLevel(logging.CRITICAL + 1)

        def restore() -> None:
            for logger, level in zip(loggers, levels, strict=True):
                logger.setLevel(level)

        ctx.call_on_close(restore)


def endpoints_of(kind: str, servers: str) -> list[str]:
    """The ``host:port`` endpoints of a connect string (``h1:2181,h2``; ``PLAINTEXT://b:9092``; ``user@h``), with
    the default port of ``kind`` (``kafka``, ``zookeeper``, ``kudu``, ``hbase``) where none is given."""
    default_port = ENDPOINTS[kind][1]
    found = []
    for part in servers.split(","):
        part = part.strip().rpartition("://")[2].rpartition("@")[2]
        if not part:
            continue
        host, colon, port = part.rpartition(":") if ":" in part else (part, "", "")
        found.append(f"{host}:{port if colon and port.isdigit() else default_port}")
    return found


def check_endpoints(kind: str, servers: str, option: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Fail in one line naming the endpoints and what to do unless one of them accepts a TCP connection within
    about ``timeout_s`` seconds (client libraries would retry for up to minutes, printing every attempt)."""
    if kind not in ENDPOINTS:  # a store this check does not know: its own client reports
        return
    endpoints = endpoints_of(kind, servers)
    if not endpoints:
        return
    what, _, fix = ENDPOINTS[kind]
    deadline = time.monotonic() + timeout_s
    reasons = []
    for index, endpoint in enumerate(endpoints):
        host, _, port = endpoint.rpartition(":")
        wait = max(0.5, (deadline - time.monotonic()) / (len(endpoints) - index))
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=wait):
                return
        except OSError as error:
            reasons.append(error.strerror or str(error) or type(error).__name__)
    reason = reasons[0] if len(set(reasons)) == 1 else "; ".join(reasons)
    raise CliError(f"cannot reach {what} at {', '.join(endpoints)} ({reason}): {fix}; check {option}")


def _client(proxy: str | None) -> Any:
    """A fail-fast ``YtClient`` for ``proxy`` (token from ``YT_TOKEN``)."""
    from spyt_queue.yt.client import make_yt_client

    if not proxy:
        raise CliError("no YT proxy: give --proxy host:port or set YT_PROXY (ytqueue local prints it)")
    return make_yt_client(proxy, config=CLI_YT_CONFIG)


def _refuse_existing(client: Any, path: str) -> None:
    if client.exists(path):
        kind = client.get(f"{path}/@type")
        raise CliError(f"{path} already exists (a {kind}): remove it or choose another path")


def _keys(sorted_by: str | None) -> Sequence[str]:
    return tuple(key.strip() for key in (sorted_by or "").split(",") if key.strip())


@app.command("create-queue")
def create_queue(
    path: str = typer.Argument(..., help="Cypress path of the new queue, e.g. //home/me/queue."),
    schema: str = typer.Option(
        ..., help="Columns 'id:int64:required,payload:string', or a JSON/YSON schema file (type_v3 allowed)."
    ),
    tablets: int = typer.Option(1, min=1, help="Number of tablets (partitions read in parallel)."),
    proxy: str = typer.Option(None, envvar="YT_PROXY", help=_PROXY_HELP),
) -> None:
    """Create and mount a queue: an ordered dynamic table with N tablets."""
    from spyt_queue.yt import admin

    columns = admin.parse_schema(schema)
    client = _client(proxy)
    _refuse_existing(client, path)
    admin.create_queue(client, path, columns, tablet_count=tablets)
    names = ", ".join(c["name"] for c in columns)
    console.print(f"created queue [bold]{path}[/bold] ({tablets} tablet{'s' * (tablets != 1)}; columns {names})")
    console.print(f"next: ytqueue create-consumer //path/to/consumer --queue {path}")


@app.command("create-consumer")
def create_consumer(
    path: str = typer.Argument(..., help="Cypress path of the consumer, e.g. //home/me/consumer."),
    queue: str = typer.Option(..., help="The queue to register the consumer for."),
    vital: bool = typer.Option(False, help="A vital consumer keeps the queue from trimming rows it has not read."),
    proxy: str = typer.Option(None, envvar="YT_PROXY", help=_PROXY_HELP),
) -> None:
    """Create and mount a consumer and register it for a queue (an existing consumer is only registered)."""
    from spyt_queue.yt import admin
    from spyt_queue.yt.backend import YtConnection, YtQueueBackend

    client = _client(proxy)
    backend = YtQueueBackend(YtConnection(proxy, config=CLI_YT_CONFIG), queue, None, path_given_by="--queue")
    backend.yt_schema  # noqa: B018 - is it a queue?
    existed = client.exists(path)
    if existed:
        attributes = client.get(path, attributes=["type", "treat_as_queue_consumer"]).attributes
        if not attributes.get("treat_as_queue_consumer"):
            raise CliError(f"{path} already exists and is not a consumer (type={attributes.get('type')})")
    admin.create_consumer(client, path, queue, vital=vital, exist_ok=True)
    what = "registered existing consumer" if existed else "created consumer"
    console.print(f"{what} [bold]{path}[/bold] for queue {queue} (vital={str(vital).lower()})")
    console.print(
        f'next: read with .option("consumer_path", "{path}").load("{queue}"); '
        f"ytqueue status --queue {queue} --consumer {path}"
    )


@app.command("create-producer")
def create_producer(
    path: str = typer.Argument(..., help="Cypress path of the producer, e.g. //home/me/producer."),
    proxy: str = typer.Option(None, envvar="YT_PROXY", help=_PROXY_HELP),
) -> None:
    """Create and mount a queue producer (exactly-once appends to an ordered table)."""
    from spyt_queue.yt import admin

    client = _client(proxy)
    _refuse_existing(client, path)
    admin.create_producer(client, path)
    console.print(f"created producer [bold]{path}[/bold]")
    console.print(f'next: write with .option("producer_path", "{path}") to an ordered table')


@app.command("create-table")
def create_table(
    path: str = typer.Argument(..., help="Cypress path of the output table, e.g. //home/me/out."),
    schema: str = typer.Option(
        ..., help="Columns 'id:int64:required,payload:string', or a JSON/YSON schema file (type_v3 allowed)."
    ),
    sorted_by: str = typer.Option(
        None, "--sorted-by", help="Key columns 'k1,k2': a sorted table (upserts); without: an ordered table (appends)."
    ),
    tablets: int = typer.Option(1, min=1, help="Tablets of an ordered table."),
    proxy: str = typer.Option(None, envvar="YT_PROXY", help=_PROXY_HELP),
) -> None:
    """Create and mount an output table: sorted by key columns, or ordered."""
    from spyt_queue.yt import admin

    keys = _keys(sorted_by)
    columns = admin.parse_schema(schema)
    if keys:
        admin.sorted_schema(columns, keys)  # the key columns are checked before anything is created
    client = _client(proxy)
    _refuse_existing(client, path)
    admin.create_table(client, path, columns, sorted_by=keys, tablet_count=tablets)
    kind = f"sorted table (key {', '.join(keys)})" if keys else f"ordered table ({tablets} tablets)"
    console.print(f"created {kind} [bold]{path}[/bold]")
    console.print(f'next: write with df.writeStream.format("ytqueue").option("path", "{path}")')


#: Seconds between two progress lines of ``ytqueue produce`` (tests set 0: a line after every batch).
PRODUCE_PROGRESS_INTERVAL_S = 2.0


@app.command()
def produce(
    path: str = typer.Argument(..., help="The queue to write to, e.g. //home/me/queue."),
    file: Path = typer.Option(
        None, "--file", "-f", help="JSON lines to read (default or '-': standard input), one object per row."
    ),
    tablet: int = typer.Option(
        None, min=0, help="Put every row into this tablet (default: round-robin; a row's $tablet_index wins)."
    ),
    batch_rows: int = typer.Option(
        10_000, "--batch-rows", min=1, help="Rows per insert (one tablet transaction each)."
    ),
    proxy: str = typer.Option(None, envvar="YT_PROXY", help=_PROXY_HELP),
) -> None:
    """Append JSON lines ({"column": value, ...} per line) to a queue, checked against its schema, in batches."""
    from spyt_queue.yt.backend import YtConnection, YtQueueBackend
    from spyt_queue.yt.produce import BatchInsertError, ProduceError, RowMaker
    from spyt_queue.yt.produce import produce as produce_rows

    client = _client(proxy)
    if not client.exists(path):
        raise CliError(f"{path} does not exist: create it with ytqueue create-queue {path} --schema ...")
    backend = YtQueueBackend(YtConnection(proxy, config=CLI_YT_CONFIG), path, None, path_given_by="the PATH argument")
    schema = backend.yt_schema  # "does not exist" / "is not a queue" in one line
    maker = RowMaker(path, schema, int(client.get(f"{path}/@tablet_count")), tablet)

    def progress(report: Any) -> None:
        typer.echo(f"... {report.rows} rows written (line {report.lines})", err=True)

    if file is None or str(file) == "-":
        if sys.stdin.isatty():
            typer.echo("reading JSON lines from the terminal; end with Ctrl-D", err=True)
        source: Any = sys.stdin.buffer
    else:
        try:
            source = open(file, "rb")
        except OSError as error:
            raise CliError(f"cannot read --file {file}: {error.strerror}") from None
    try:
        report = produce_rows(
            source,
            maker,
            lambda rows: client.insert_rows(path, rows),
            batch_rows=batch_rows,
            progress=progress,
            progress_interval_s=PRODUCE_PROGRESS_INTERVAL_S,
        )
    except ProduceError as error:
        raise CliError(str(error)) from None
    except BatchInsertError as error:
        cause = error.__cause__ or error
        raise CliError(
            f"YT refused lines {error.first_line}-{error.last_line}: {one_line(cause)}; {error.written}"
        ) from None
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    tablets = ", ".join(f"tablet {t}: {n}" for t, n in sorted(report.per_tablet.items()))
    console.print(
        f"wrote {report.rows} row{'s' * (report.rows != 1)} to [bold]{path}[/bold]"
        + (f" ({tablets})" if tablets else "")
    )
    console.print(f"next: ytqueue status --queue {path} --consumer //path/to/consumer")


@app.command()
def show(
    path: str = typer.Argument(..., help="A dynamic table: a queue, an ordered or a sorted table."),
    limit: int = typer.Option(20, "--limit", "-n", min=1, help="Show at most this many rows."),
    proxy: str = typer.Option(None, envvar="YT_PROXY", help=_PROXY_HELP),
) -> None:
    """Print the rows of a dynamic table (a sorted one in key order; an ordered one with each row's tablet and row
    index), at most --limit of them."""
    from spyt_queue.yt.schema import YtSchema

    client = _client(proxy)
    if not client.exists(path):
        raise CliError(f"{path} does not exist: create it with ytqueue create-table {path} --schema ...")
    attrs = client.get(path, attributes=["type", "dynamic", "schema", "sorted"]).attributes
    if attrs.get("type") != "table" or not attrs.get("dynamic"):
        raise CliError(f"{path} is not a dynamic table: ytqueue show prints dynamic tables (queues, output tables)")
    columns = [c.name for c in YtSchema.parse(attrs["schema"]).columns if not c.name.startswith("$")]
    if not attrs.get("sorted"):
        columns = ["$tablet_index", "$row_index", *columns]
    rows = list(client.select_rows(f"* from [{path}] limit {limit + 1}"))
    table = Table(title=f"{path} ({'sorted' if attrs.get('sorted') else 'ordered'})")
    for name in columns:
        table.add_column(name.lstrip("$").replace("_", " ") if name.startswith("$") else name)
    for row in rows[:limit]:
        table.add_row(*("" if row.get(name) is None else _cell(row[name]) for name in columns))
    console.print(table)
    shown = min(len(rows), limit)
    more = len(rows) > limit
    console.print(f"{shown} row{'s' * (shown != 1)}" + (f", and more: --limit {limit * 5} shows more" if more else ""))


def _cell(value: Any) -> str:
    """A table cell: bytes as UTF-8 text (undecodable bytes escaped), other values as Python prints them."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return str(value)


@app.command()
def local(
    port: int = typer.Option(8000, help="HTTP port of the proxy (0 = any free port)."),
    data_dir: Path = typer.Option(DEFAULT_DATA_DIR, "--data-dir", help="Where the server keeps its data."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    cluster_name: str = typer.Option(
        None,
        "--cluster-name",
        help="Cluster name written as queue_cluster into consumer and producer rows (default: local).",
    ),
    max_rows_per_transaction: int = typer.Option(
        None,
        "--max-rows-per-transaction",
        min=1,
        max=2_000_000,
        help="Rows one tablet transaction may write into one tablet (YT's max_rows_per_transaction, default 100000).",
    ),
    log_level: str = typer.Option(
        "WARNING", "--log-level", help="The server's log level on stderr: DEBUG, INFO, WARNING or ERROR."
    ),
    token_file: Path = typer.Option(
        None,
        "--token-file",
        help="A file holding the token every client must send (default: $YTQUEUE_LOCAL_TOKEN); required with a "
        "--host other than loopback. Clients set YT_TOKEN to it.",
    ),
) -> None:
    """Run the embedded YTsaurus-compatible queue server in the foreground until interrupted.

    A development and test server: one root user, plain HTTP, no ACLs. It listens on 127.0.0.1 by default; any
    other --host needs a token (YTQUEUE_LOCAL_TOKEN or --token-file)."""
    import logging

    from spyt_queue.local import serve
    from spyt_queue.local.server import TOKEN_ENV, ExposedServerError

    token = _secret_from_file(token_file, "--token-file") if token_file else os.environ.get(TOKEN_ENV) or None

    level = log_level.strip().upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise CliError(f"--log-level must be DEBUG, INFO, WARNING or ERROR, got {log_level!r}")
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings: dict[str, Any] = {"max_rows_per_transaction": max_rows_per_transaction}
    if cluster_name:
        settings["cluster_name"] = cluster_name

    def ready(proxy: str) -> None:
        console.print(f"ytqueue local server: proxy=[bold]{proxy}[/bold] data_dir={data_dir}")
        console.print(f"  export YT_PROXY={proxy}   # point yt.wrapper, the yt CLI and ytqueue at it; Ctrl-C stops")
        if token:
            where = token_file or f"${TOKEN_ENV}"
            console.print(f"  export YT_TOKEN=...   # the token of {where}: every request needs it")

    try:
        serve(host, port, data_dir, on_ready=ready, token=token, **settings)
    except ExposedServerError as error:
        raise CliError(str(error)) from None
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise CliError(f"{host}:{port} is already in use: pick another --port (0 = any free port)") from error
        raise


@app.command()
def status(
    queue: str = typer.Option(None, help="YT queue path to report on."),
    consumer: str = typer.Option(None, help="YT consumer table whose committed offsets are shown."),
    proxy: str = typer.Option(None, envvar="YT_PROXY", help=_PROXY_HELP),
    bootstrap_servers: str = typer.Option(None, "--bootstrap-servers", help="Kafka brokers (instead of YT)."),
    kafka_config: Path = typer.Option(
        None,
        "--kafka-config",
        help="A file of librdkafka settings (key=value lines: security.protocol, sasl.*, ssl.*) for a secured "
        "broker, as the query's kafka.* options.",
    ),
    topic: str = typer.Option(None, help="Kafka topic(s), comma-separated."),
    group: str = typer.Option(None, help="Kafka consumer group whose committed offsets are shown."),
    store: str = typer.Option(
        None, help="An offsets.store URI (zookeeper://host:2181/root) to read committed offsets from instead."
    ),
    store_user: str = typer.Option(
        None, "--store-user", envvar="SPYT_STORE_USER", help="The user of --store (offsets.store.user)."
    ),
    store_password_file: Path = typer.Option(
        None,
        "--store-password-file",
        help=f"A file holding the password of --store (default: ${STORE_PASSWORD_ENV}); never put it in --store.",
    ),
    offsets_group: str = typer.Option(
        None, "--offsets-group", help="The group in --store (default: --group for Kafka, --consumer for YT)."
    ),
    checkpoint: str = typer.Option(
        None,
        "--checkpoint",
        help="The checkpointLocation (a local directory) of a Kafka query without kafka.group.id: shows the group "
        "of its own it commits under.",
    ),
    group_id_prefix: str = typer.Option(
        None, "--group-id-prefix", help="The query's groupIdPrefix, when it set one (Kafka, without --group)."
    ),
    dead_letter: str = typer.Option(
        None, "--dead-letter", help="A dead-letter table (deadLetter.path) whose rows are counted."
    ),
    dead_letter_topic: str = typer.Option(
        None, "--dead-letter-topic", help="A dead-letter topic (deadLetter.topic, on --bootstrap-servers) to count."
    ),
) -> None:
    """Print committed offset, end and lag per partition, for a YT consumer, a Kafka group or any offset store, and
    the rows of a dead-letter target."""
    from spyt_queue.connect import watch
    from spyt_queue.lag import backend_lag
    from spyt_queue.options import Options
    from spyt_queue.stores.registry import check_uri, uri_password

    credentials = _store_credentials(store, store_user, store_password_file)
    kafka = _kafka_settings(kafka_config, bootstrap_servers)
    check_uri(store, credentials)
    if uri_password(store):
        typer.secho(
            f"hint: a password in --store is visible in ps and the shell history; set {STORE_PASSWORD_ENV} or use "
            "--store-password-file instead",
            err=True,
            fg="yellow",
        )
    if dead_letter or dead_letter_topic:
        _dead_letter_status(dead_letter, dead_letter_topic, proxy, bootstrap_servers, kafka)
        if not (queue or topic):
            return

    hints: list[str] = []
    # the query's own options: connect.watch builds its backend and store as the query does
    options: dict[str, str] = {}
    if store:
        options["offsets.store"] = store
        if credentials is not None and credentials.user:
            options["offsets.store.user"] = credentials.user
        if credentials is not None and credentials.password:
            options["offsets.store.password"] = credentials.password
    if offsets_group:
        options["offsets.group"] = offsets_group
    if bootstrap_servers:
        if not topic or not (group or store or checkpoint):
            raise CliError("Kafka status needs --topic and --group (or --store, or --checkpoint)")
        _check_kafka(bootstrap_servers, kafka)
        topics = ",".join(t.strip() for t in topic.split(",") if t.strip())
        options.update({f"kafka.{key}": value for key, value in kafka.items()}, subscribe=topics)
        if group:
            options["kafka.group.id"] = group
        if group_id_prefix:
            options["groupIdPrefix"] = group_id_prefix
    else:
        from spyt_queue.yt import admin

        if not queue:
            raise CliError("give --queue (and --consumer) for YT, or --bootstrap-servers, --topic and --group")
        client = _client(proxy)
        options.update({f"yt.{key}": value for key, value in CLI_YT_OPTIONS.items()}, path=queue, proxy=proxy)
        if consumer:
            options["consumer_path"] = consumer
    if store:  # the store's servers accept a connection within seconds (its client would retry for minutes)
        from spyt_queue.redaction import split_uri

        parts = split_uri(store)
        assert parts is not None  # check_uri passed
        check_endpoints(parts.scheme.lower(), parts.hosts, "--store")
    watched = watch(Options(options), checkpoint=checkpoint, path_given_by="--queue")
    backend = watched.backend
    if bootstrap_servers:
        title = f"{topic} via group {watched.group}"
    else:
        backend.yt_schema  # noqa: B018 - "does not exist" / "is not a queue" before anything else
        if consumer:
            if not client.exists(consumer):
                raise CliError(
                    f"consumer {consumer} does not exist: create it with "
                    f"ytqueue create-consumer {consumer} --queue {queue}"
                )
            if not admin.consumer_registered(client, queue, consumer):
                hints.append(
                    f"hint: consumer {consumer} is not registered for {queue}, so a query cannot commit to it; "
                    f"register it with `ytqueue create-consumer {consumer} --queue {queue}` or, from Python, "
                    f"client.register_queue_consumer({queue!r}, {consumer!r}, vital=False)"
                )
        title = queue + (f" via {consumer}" if consumer else "")
    offsets = watched.store if watched.uri_store else None
    store_group = watched.group or ""
    if offsets is not None:
        title = f"{topic if bootstrap_servers else queue} via {offsets.describe()}"
    if watched.guessed:
        own = watched.own_groups
        typer.secho(
            f"hint: no --group: showing group {watched.group}, the one a query subscribing to {topic} without "
            "kafka.group.id commits under (spark-kafka-source-<hash of the subscription>-<the query's writer>, "
            "logged when it starts and shown in its progress as latestOffset.group; groupIdPrefix changes the "
            "prefix)"
            + (f"; queries without kafka.group.id in this store: {', '.join(own)}" if len(own) > 1 else "")
            + "; --checkpoint PATH (the query's checkpointLocation) finds a query's own group, --offsets-group NAME "
            "shows another",
            err=True,
            fg="yellow",
        )
    stuck = False  # a store client blocked in a call: closing it would wait for the call
    try:
        if offsets is None:
            rows = backend_lag(backend, watched.store)
        else:
            offsets.start_client()  # not timed: a JVM starting on a busy machine is no slow store
            rows = _within(STORE_ANSWER_TIMEOUT_S, backend_lag, backend, offsets)
    except _NoAnswer:
        assert offsets is not None
        stuck = True
        raise CliError(
            f"the offset store {offsets.describe()} did not answer within {STORE_ANSWER_TIMEOUT_S:.0f} s (it accepts "
            "connections): is it the server --store names, and is it healthy? check --store"
        ) from None
    except Exception as error:
        if offsets is None or isinstance(error, CliError) or not offsets.is_transient(error):
            raise
        raise CliError(
            f"the offset store {offsets.describe()} did not answer ({one_line(error)}): is it running and is it "
            "the server --store names? check --store"
        ) from error
    else:
        if offsets is not None and all(row.committed is None for row in rows):
            hints.append(_group_hint(offsets, store_group, bool(bootstrap_servers)))
    finally:
        if offsets is not None and not stuck:
            offsets.close()
    table = Table(title=title)
    for name in ("partition", "committed", "first row", "end", "lag"):
        table.add_column(name, justify="right")
    for row in rows:
        committed = "-" if row.committed is None else str(row.committed)
        table.add_row(row.partition, committed, str(row.lower), str(row.upper), str(row.lag))
    table.add_row("total", "", "", str(sum(r.upper for r in rows)), str(sum(r.lag for r in rows)), style="bold")
    console.print(table)
    for hint in hints:
        typer.secho(hint, err=True, fg="yellow")


class _NoAnswer(Exception):
    """A call :func:`_within` gave up waiting for."""


def _within(seconds: float, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)`` in a daemon thread; its result or error, or :class:`_NoAnswer` when it has not returned
    within ``seconds`` (the thread is left behind: a client stuck on a silent server does not keep the command
    from ending). Store clients retry a server that accepts connections but never answers for up to minutes."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = call(*args)
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=run, name="ytqueue-store", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        _LEFT_BEHIND.set()
        raise _NoAnswer(f"no answer within {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def _group_hint(offsets: Any, group: str, kafka: bool) -> str:
    """Why a store may show nothing for ``group``: the rule by which a query names its group, and the groups the
    store holds where it can list them (ZooKeeper)."""
    rule = (
        "offsets.group, else kafka.group.id, else spark-kafka-source-<hash of the subscription>-<the query's writer>"
        if kafka
        else "offsets.group, else its consumer_path, else spyt-queue"
    )
    text = f"hint: group {group} has no positions for this source in {offsets.describe()}; a query commits under {rule}"
    groups = offsets.groups()
    if groups is not None:
        text += f"; groups in this store: {', '.join(groups) if groups else 'none'}"
    return text + "; give that group with --offsets-group NAME"


def _check_kafka(bootstrap_servers: str, settings: dict[str, str] | None = None) -> None:
    """One line naming the brokers, within about :data:`CONNECT_TIMEOUT_S` each for the TCP connection and the
    metadata request (with the ``--kafka-config`` ``settings``: TLS, SASL), unless a broker answers (librdkafka alone
    retries for minutes)."""
    from spyt_queue.errors import UnreachableError
    from spyt_queue.kafka.clients import check_brokers_reachable

    check_endpoints("kafka", bootstrap_servers, "--bootstrap-servers")
    try:
        check_brokers_reachable({**(settings or {}), "bootstrap.servers": bootstrap_servers}, CONNECT_TIMEOUT_S)
    except UnreachableError:
        raise CliError(
            f"Kafka at {bootstrap_servers} accepts connections but answered no metadata request within "
            f"{CONNECT_TIMEOUT_S:g} s: is it a Kafka broker (and its listener the address given)? "
            "check --bootstrap-servers"
        ) from None


def _private_text(path: Path, option: str) -> str:
    """The text of the file ``option`` names, which holds a secret: a warning on stderr when others may read it
    (group or world permissions, as ssh warns of a private key), naming ``chmod 600``."""
    try:
        mode = path.stat().st_mode
        text = path.read_text()
    except OSError as error:
        raise CliError(f"cannot read {option} {path}: {error.strerror}") from None
    if mode & 0o077:
        typer.secho(
            f"warning: {option} {path} is readable by others (permissions {mode & 0o777:04o}); it holds a secret: "
            f"chmod 600 {path}",
            err=True,
            fg="yellow",
        )
    return text


def _secret_from_file(path: Path, option: str) -> str:
    """The first line of the file ``option`` names (a password or token kept off the command line)."""
    lines = _private_text(path, option).splitlines()
    return lines[0] if lines else ""


def _kafka_settings(path: Path | None, bootstrap_servers: str | None) -> dict[str, str]:
    """librdkafka settings for ``ytqueue status``: ``--kafka-config`` (``key=value`` lines, ``#`` comments, as a Kafka
    client properties file) and ``--bootstrap-servers``."""
    settings: dict[str, str] = {}
    if path is not None:
        for number, line in enumerate(_private_text(path, "--kafka-config").splitlines(), 1):
            line = line.strip()
            if not line or line.startswith(("#", "!")):
                continue
            key, equals, value = line.partition("=")
            if not equals or not key.strip():
                raise CliError(f"--kafka-config {path}, line {number}: expected key=value")
            settings[key.strip()] = value.strip()
    if bootstrap_servers:
        settings["bootstrap.servers"] = bootstrap_servers
    return settings


def _store_credentials(store: str | None, user: str | None, password_file: Path | None) -> Any:
    """The credentials of ``--store``: ``--store-user``, and the password from ``--store-password-file`` (its first
    line) or ``$SPYT_STORE_PASSWORD``, so that it is on no command line."""
    from spyt_queue.stores.registry import StoreCredentials, is_native

    if is_native(store):
        if user or password_file:
            raise CliError("--store-user and --store-password-file need --store (a store URI)")
        return None
    password = os.environ.get(STORE_PASSWORD_ENV) or None
    if password_file is not None:
        password = _secret_from_file(password_file, "--store-password-file")
    return StoreCredentials(user or None, password)


def _dead_letter_status(
    path: str | None,
    topic: str | None,
    proxy: str | None,
    bootstrap_servers: str | None,
    kafka: dict[str, str] | None = None,
) -> None:
    """Print the dead letters held per partition of a dead-letter table or topic, and their total."""
    from spyt_queue.deadletter_targets import dead_letter_target
    from spyt_queue.lag import dead_letter_counts
    from spyt_queue.options import Options

    if path and topic:
        raise CliError("give --dead-letter (a YT table) or --dead-letter-topic (Kafka), not both")
    options: dict[str, str] = {}
    if topic:
        if not bootstrap_servers:
            raise CliError("--dead-letter-topic needs --bootstrap-servers")
        _check_kafka(bootstrap_servers, kafka)
        options.update({f"deadLetter.kafka.{key}": value for key, value in (kafka or {}).items()})
        options.update({"deadLetter.topic": topic, "deadLetter.kafka.bootstrap.servers": bootstrap_servers})
    else:
        if not _client(proxy).exists(path):  # "no YT proxy" in one line first
            raise CliError(f"dead-letter table {path} does not exist")
        options.update({f"yt.{key}": value for key, value in CLI_YT_OPTIONS.items()})
        options.update({"deadLetter.path": str(path), "proxy": proxy or ""})
    target = dead_letter_target(Options(options))  # as a query naming it builds it
    assert target is not None
    counts = dead_letter_counts(target)
    table = Table(title=f"dead letters in {target.describe()}")
    table.add_column("partition", justify="right")
    table.add_column("dead letters", justify="right")
    for partition, count in counts.items():
        table.add_row(partition, str(count))
    table.add_row("total", str(sum(counts.values())), style="bold")
    console.print(table)


@app.command()
def demo(
    proxy: str = typer.Option(None, help="Use this YT proxy instead of starting the embedded server."),
    events: int = typer.Option(20_000, help="How many events to produce."),
) -> None:
    """Stream events from a 4-tablet queue into an output table, restart, and show that nothing was lost."""
    from spyt_queue.demo import run_demo

    raise typer.Exit(run_demo(proxy=proxy, events=events, console=console))


def run() -> None:
    """The ``ytqueue`` console script: :data:`app` in a process of its own (see :func:`_exit`)."""
    _OWN_PROCESS.set()
    app()


if __name__ == "__main__":  # pragma: no cover
    run()
