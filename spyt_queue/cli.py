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
    queue: str = typer.Option(..., help="Queue path (YT) to report on."),
    consumer: str = typer.Option(None, help="Consumer table whose committed offsets are shown."),
    proxy: str = typer.Option(None, envvar="YT_PROXY", help="YT proxy (default: $YT_PROXY)."),
) -> None:
    """Print committed offset, end and lag per partition as a table."""
    from spyt_queue.lag import backend_lag
    from spyt_queue.yt.backend import YtConnection, YtQueueBackend

    if not proxy:
        raise typer.BadParameter("give --proxy or set YT_PROXY", param_hint="--proxy")
    backend = YtQueueBackend(YtConnection(proxy), queue, consumer)
    rows = backend_lag(backend)
    table = Table(title=f"{queue}" + (f" via {consumer}" if consumer else ""))
    for name in ("partition", "committed", "first row", "end", "lag"):
        table.add_column(name, justify="right")
    for row in rows:
        table.add_row(
            row.partition,
            "-" if row.committed is None else str(row.committed),
            str(row.lower),
            str(row.upper),
            str(row.lag),
        )
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
