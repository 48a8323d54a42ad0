"""``python -m spyt_queue.local --host 127.0.0.1 --port 0 --data-dir DIR [--cluster-name local]
[--max-rows-per-transaction N]``."""

from __future__ import annotations

import argparse
import logging
import sys

from spyt_queue.local.server import READY_PREFIX, serve
from spyt_queue.local.state import DEFAULT_CLUSTER_NAME


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, serve until SIGINT/SIGTERM, print the ready line on stdout."""
    parser = argparse.ArgumentParser(
        prog="python -m spyt_queue.local", description="Local YTsaurus-compatible queue server (HTTP API v4)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--data-dir", required=True, help="directory of the SQLite database")
    parser.add_argument(
        "--cluster-name",
        default=DEFAULT_CLUSTER_NAME,
        help="cluster name written as queue_cluster into consumer and producer rows",
    )
    parser.add_argument(
        "--max-rows-per-transaction",
        type=int,
        default=None,
        help="rows one tablet transaction may write into one tablet (YT's max_rows_per_transaction, default 100000)",
    )
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )

    def ready(address: str) -> None:
        print(f"{READY_PREFIX}{address} data_dir={args.data_dir}", flush=True)

    serve(
        args.host,
        args.port,
        args.data_dir,
        on_ready=ready,
        cluster_name=args.cluster_name,
        max_rows_per_transaction=args.max_rows_per_transaction,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
