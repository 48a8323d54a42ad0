"""The long chaos run: a producer keeps writing numbered ids while the streaming driver is SIGKILLed at random moments
(once with its checkpoints deleted), the embedded YT server is SIGKILLed and the Kafka broker too, each restarted;
then every pipeline catches up and is compared with its source.

    .venv/bin/python bench/chaos.py [--kills 20] [--rows 1000000] [--seconds 600] [--pipelines a,b] [--seed N]
                                    [--executor-kills N] [--worker-kills N]

With ``--executor-kills`` or ``--worker-kills`` the drivers run on a Spark standalone cluster the run starts on
127.0.0.1 (a master and two workers of one core, from the installed PySpark), and that many times an executor JVM
with its Python workers, or a whole worker, is SIGKILLed while a batch is in flight (only processes of that cluster).

Prints, per pipeline, ``pipeline=<name> kills=.. rows=.. lost=.. duplicated=.. committed_at_end=true|false``, per
source server the acknowledged writes it lost, and the events applied. Exit status 1 when a guarantee did not hold.
The harness is ``tests/chaos/harness.py``; ``tests/chaos/`` runs a short version of it in CI.
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.chaos.harness import PIPELINES, ChaosConfig, missing_requirements, run_chaos


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run the chaos, print the summary; the exit status."""
    parser = argparse.ArgumentParser(prog="bench/chaos.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20, help="driver and server kills (default 20)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="ids written into each source (default 1M)")
    parser.add_argument("--seconds", type=float, default=600.0, help="how long writing --rows takes (default 600)")
    parser.add_argument(
        "--pipelines", default=",".join(PIPELINES), help=f"comma-separated, from {', '.join(PIPELINES)} (default all)"
    )
    parser.add_argument(
        "--executor-kills", type=int, default=0, help="SIGKILLs of an executor mid-batch (runs on a standalone cluster)"
    )
    parser.add_argument(
        "--worker-kills", type=int, default=0, help="SIGKILLs of a whole worker mid-batch, each restarted after"
    )
    parser.add_argument("--seed", type=int, default=None, help="random seed of the event order and pauses")
    parser.add_argument(
        "--max-rows-per-partition", type=int, default=20_000, help="the queries' per-partition batch cap"
    )
    parser.add_argument("--trigger-ms", type=int, default=1000, help="processing-time trigger of the streaming run")
    parser.add_argument(
        "--queries-per-driver", type=int, default=1, help="streaming queries per driver process (default 1)"
    )
    parser.add_argument("--work-dir", type=Path, default=None, help="servers' data, checkpoints, driver log (kept)")
    args = parser.parse_args(argv)
    pipelines = [name.strip() for name in args.pipelines.split(",") if name.strip()]
    unknown = [name for name in pipelines if name not in PIPELINES]
    if unknown:
        parser.error(f"unknown pipelines {unknown}; known: {', '.join(PIPELINES)}")
    reason = missing_requirements(pipelines)
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="spyt-chaos-"))
    command = " ".join(["bench/chaos.py", *(argv if argv is not None else sys.argv[1:])])
    print(f"{command} (seed {seed}, work dir {work})", flush=True)
    config = ChaosConfig(
        work_dir=work,
        kills=args.kills,
        executor_kills=args.executor_kills,
        worker_kills=args.worker_kills,
        rows=args.rows,
        seconds=args.seconds,
        pipelines=pipelines,
        seed=seed,
        max_rows_per_partition=args.max_rows_per_partition,
        trigger_ms=args.trigger_ms,
        queries_per_driver=args.queries_per_driver,
        progress_timeout_s=600.0,
        drain_timeout_s=3600.0,
        max_query_restarts=1000,
        log=lambda line: print(line, flush=True),
    )
    # A SIGTERM unwinds like Ctrl-C, so the harness stops the servers and drivers it started.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    started = time.monotonic()
    report = run_chaos(config)
    for line in report.lines():
        print(line, flush=True)
    print(f"wall time {time.monotonic() - started:.0f} s", flush=True)
    if args.work_dir is None and report.ok:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
