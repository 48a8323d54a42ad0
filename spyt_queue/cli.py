"""The ``ytqueue`` command: run the embedded local server, show consumer lag, run the demo."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    help="spyt-queue: YTsaurus queues and Kafka topics in Spark Structured Streaming.", no_args_is_help=True
)
console = Console()


@app.command()
def local(
    port: int = typer.Option(8000, help="HTTP port of the proxy (0 = any free port)."),
    data_dir: Path = typer.Option(Path("ytqueue-data"), "--data-dir", help="Where the server keeps its data."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
) -> None:
    """Run the embedded YTsaurus-compatible queue server in the foreground until interrupted."""
    from spyt_queue.local import serve

    def ready(proxy: str) -> None:
        console.print(f"ytqueue local server: proxy=[bold]{proxy}[/bold] data_dir={data_dir}")
        console.print(f"  export YT_PROXY={proxy}   # point yt.wrapper, the yt CLI and ytqueue at it; Ctrl-C stops")

    serve(host, port, data_dir, on_ready=ready)


@app.command()
def status(
    queue: str = typer.Option(None, help="YT queue path to report on."),
    consumer: str = typer.Option(None, help="YT consumer table whose committed offsets are shown."),
    proxy: str = typer.Option(None, envvar="YT_PROXY", help="YT proxy (default: $YT_PROXY)."),
    bootstrap_servers: str = typer.Option(None, "--bootstrap-servers", help="Kafka brokers (instead of YT)."),
    topic: str = typer.Option(None, help="Kafka topic(s), comma-separated."),
    group: str = typer.Option(None, help="Kafka consumer group whose committed offsets are shown."),
) -> None:
    """Print committed offset, end and lag per partition, for a YT consumer or a Kafka consumer group."""
    from spyt_queue.lag import backend_lag

    if bootstrap_servers:
        from spyt_queue.kafka.backend import KafkaBackend
        from spyt_queue.kafka.options import Subscription

        if not topic or not group:
            raise typer.BadParameter("Kafka status needs --topic and --group", param_hint="--topic/--group")
        topics = tuple(t.strip() for t in topic.split(",") if t.strip())
        backend = KafkaBackend(
            {"bootstrap.servers": bootstrap_servers}, Subscription("subscribe", topics=topics), group
        )
        title = f"{topic} via group {group}"
    else:
        from spyt_queue.yt.backend import YtConnection, YtQueueBackend

        if not proxy or not queue:
            raise typer.BadParameter("give --queue and --proxy (or YT_PROXY), or --bootstrap-servers for Kafka")
        backend = YtQueueBackend(YtConnection(proxy), queue, consumer)
        title = queue + (f" via {consumer}" if consumer else "")
    rows = backend_lag(backend)
    table = Table(title=title)
    for name in ("partition", "committed", "first row", "end", "lag"):
        table.add_column(name, justify="right")
    for row in rows:
        committed = "-" if row.committed is None else str(row.committed)
        table.add_row(row.partition, committed, str(row.lower), str(row.upper), str(row.lag))
    table.add_row("total", "", "", str(sum(r.upper for r in rows)), str(sum(r.lag for r in rows)), style="bold")
    console.print(table)


@app.command()
def demo(
    proxy: str = typer.Option(None, help="Use this YT proxy instead of starting the embedded server."),
    events: int = typer.Option(20_000, help="How many events to produce."),
) -> None:
    """Stream events from a 4-tablet queue into an output table, restart, and show that nothing was lost."""
    from spyt_queue.demo import run_demo

    raise typer.Exit(run_demo(proxy=proxy, events=events, console=console))


if __name__ == "__main__":  # pragma: no cover
    app()
