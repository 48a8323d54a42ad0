"""``python -m spyt_queue.local --host 127.0.0.1 --port 0 --data-dir DIR [--cluster-name local]
[--max-rows-per-transaction N] [--max-request-bytes N] [--idle-timeout S]``; the token clients must send, if any,
from ``YTQUEUE_LOCAL_TOKEN`` (required for a ``--host`` beyond loopback)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from spyt_queue.local.http import DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_REQUEST_BYTES
from spyt_queue.local.server import READY_PREFIX, TOKEN_ENV, ExposedServerError, serve
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
    parser.add_argument(
        "--max-request-bytes",
        type=int,
        default=DEFAULT_MAX_REQUEST_BYTES,
        help=f"largest request body after decompression (default {DEFAULT_MAX_REQUEST_BYTES})",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT_S,
        help=f"seconds before a silent connection is closed (default {DEFAULT_IDLE_TIMEOUT_S:g}; 0 = never)",
    )
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )

    def ready(address: str) -> None:
        print(f"{READY_PREFIX}{address} data_dir={args.data_dir}", flush=True)

    try:
        serve(
            args.host,
            args.port,
            args.data_dir,
            on_ready=ready,
            cluster_name=args.cluster_name,
            max_rows_per_transaction=args.max_rows_per_transaction,
            token=os.environ.get(TOKEN_ENV) or None,
            max_request_bytes=args.max_request_bytes,
            idle_timeout=args.idle_timeout,
        )
    except ExposedServerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
