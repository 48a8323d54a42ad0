"""Peak memory of a capped ``ytqueue`` read against the size of the backlog: memory must follow the cap, not the
backlog.

    .venv/bin/python bench/memory.py [--backlogs 500000,5000000] [--cap 50000] [--tablets 4]

Fills one queue per backlog in the embedded local server, then reads each from the earliest row into Spark's
``noop`` sink (``Trigger.AvailableNow``, ``max_rows_per_partition=cap``), smallest backlog first, sampling
``/proc`` meanwhile. Prints one line per backlog:

    backlog=5000000 cap=50000 tablets=4 rows=5000000 batches=25 seconds=.. driver_peak_rss_mb=..
    python_driver_peak_rss_mb=.. python_driver_peak_pss_mb=.. python_workers_peak_rss_mb=..
    python_workers_peak_pss_mb=.. largest_python_driver_process_mb=.. largest_python_worker_mb=.. server_rss_mb=..

``driver_peak_rss_mb``: the driver JVM (in ``local[2]`` the executors run in it too); ``python_driver_peak_rss_mb``:
Spark's driver-side Python processes (the source's runner; the planners' ``pyspark.daemon`` processes and their
forks) summed; ``python_workers_peak_rss_mb``: the executors' Python workers (``pyspark.daemon pyspark.worker``
and its forks) summed; ``largest_*``: the peak of the largest single process of each group (the sums also follow
how many idle daemons and reusable workers Spark keeps at a sampling moment); ``*_pss_mb``: the same as proportional set
sizes (pages a forked worker shares with the daemon counted once, where a sum of RSS counts them in every worker);
``server_rss_mb``: the embedded server after the read, for information. Peaks are of the sums, sampled every
``--interval`` seconds.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ytqueue_source import fill

from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.client import make_yt_client

PAGE = os.sysconf("SC_PAGE_SIZE")
EXECUTOR_WORKER = "pyspark.worker"
GROUPS = ("driver", "python_driver", "python_driver_pss", "python_workers", "python_workers_pss")


def children() -> dict[int, list[int]]:
    """Parent pid -> child pids for every process visible in ``/proc``."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def descendants(pid: int, tree: dict[int, list[int]]) -> list[int]:
    """Every process below ``pid``."""
    found, todo = [], list(tree.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(tree.get(child, []))
    return found


def rss(pid: int) -> int:
    """Resident set size of ``pid`` in bytes (0 if it exited)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * PAGE
    except OSError:
        return 0


def pss(pid: int) -> int:
    """Proportional set size of ``pid`` in bytes: pages shared with other processes (a forked worker and the
    daemon it came from) count once in a sum (0 if it exited or the kernel lacks ``smaps_rollup``)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as smaps:
            for line in smaps:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cmdline(pid: int) -> str:
    """The command line of ``pid`` ('' if it exited)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def find_jvm(tree: dict[int, list[int]]) -> int:
    """The Spark driver JVM started by this process."""
    for pid in descendants(os.getpid(), tree):
        if "java" in cmdline(pid).split(" ", 1)[0] or "org.apache.spark" in cmdline(pid):
            return pid
    raise RuntimeError("no Spark JVM found below this process")


class Sampler(threading.Thread):
    """Samples the RSS of the JVM, its driver-side Python processes and its executor Python workers; keeps peaks."""

    def __init__(self, jvm: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.jvm, self.interval = jvm, interval
        self.peaks = dict.fromkeys(GROUPS, 0)
        self.processes: dict[int, tuple[str, int, int]] = {}  # pid -> (group, command line, peak RSS)
        self.done = threading.Event()

    def sample(self) -> None:
        """One sample: the current sums per group, folded into the peaks."""
        now = dict.fromkeys(GROUPS, 0)
        now["driver"] = rss(self.jvm)
        for pid in descendants(self.jvm, children()):
            command = cmdline(pid)
            if not command:
                continue  # exited meanwhile
            if "pyspark" not in command:
                # The JVM's own helpers (Hadoop's ``readlink``, ``jspawnhelper``): sampled between fork and exec,
                # they show the whole JVM's RSS (a 5M-row run once reported a 673 MB "driver-side Python process")
                continue
            # Spark runs each Python module through its own ``pyspark.daemon <module>`` and its forks: the
            # executors' tasks in ``pyspark.worker``; planners (``pyspark.sql.worker.*``) and the source's
            # runner on the driver's behalf
            group = "python_workers" if EXECUTOR_WORKER in command.split() else "python_driver"
            size = rss(pid)
            now[group] += size
            now[f"{group}_pss"] += pss(pid)
            seen = self.processes.get(pid, (group, command, 0))
            self.processes[pid] = (group, seen[1], max(seen[2], size))
        for key, value in now.items():
            self.peaks[key] = max(self.peaks[key], value)

    def run(self) -> None:
        while not self.done.wait(self.interval):
            self.sample()

    def largest(self, group: str) -> int:
        """The peak RSS of the largest single process of ``group`` in bytes."""
        return max((peak for g, _, peak in self.processes.values() if g == group), default=0)

    def stop(self) -> dict[str, int]:
        """Stop sampling; returns the peaks in bytes."""
        self.done.set()
        self.join()
        self.sample()
        return self.peaks


def read_all(spark, proxy: str, queue: str, consumer: str, cap: int, checkpoint: str) -> tuple[int, int]:
    """ytqueue (capped) into the noop sink with AvailableNow; returns rows and non-empty batches."""
    df = (
        spark.readStream.format("ytqueue")
        .option("proxy", proxy)
        .option("consumer_path", consumer)
        .option("startingOffsets", "earliest")
        .option("max_rows_per_partition", cap)
        .load(queue)
    )
    rows = batches = 0
    for attempt in range(1, 4):
        writer = df.writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(availableNow=True)
        query = writer.start()
        try:
            query.awaitTermination()
        except Exception:
            pass  # examined below
        progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
        rows, batches = rows + sum(p["numInputRows"] for p in progress), batches + len(progress)
        error = query.exception()
        if error is None:
            return rows, batches
        # Spark gives the Python processes it starts 10 s to connect back: a loaded machine can miss that; the
        # run goes on from its checkpoint
        if attempt == 3 or "failed to connect back" not in str(error):
            raise error
        print(f"  restarting from the checkpoint after: {str(error).splitlines()[0][:160]}")
    raise AssertionError("unreachable")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backlogs", default="500000,5000000", help="comma-separated row counts, run in order")
    parser.add_argument("--cap", type=int, default=50_000, help="max_rows_per_partition")
    parser.add_argument("--tablets", type=int, default=4)
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between /proc samples")
    parser.add_argument("--driver-memory", default="1g", help="spark.driver.memory")
    parser.add_argument("--detail", action="store_true", help="also print every sampled Python process's peak")
    args = parser.parse_args()
    backlogs = [int(b) for b in args.backlogs.split(",")]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    work = Path(tempfile.mkdtemp(prefix="ytqueue-memory-"))

    from spyt_queue.local import LocalYtServer

    server = LocalYtServer(data_dir=work / "yt").start()
    try:
        client = make_yt_client(server.proxy)
        root = f"//tmp/memory-{int(time.time())}"
        queues = []
        for backlog in backlogs:
            queue, consumer = f"{root}/q{backlog}", f"{root}/c{backlog}"
            schema = [column("id", "int64"), column("payload", "string")]
            create_queue(client, queue, schema, tablet_count=args.tablets)
            create_consumer(client, consumer, queue)
            print(f"filling {queue} with {backlog:,} rows over {args.tablets} tablets")
            fill(client, queue, backlog, args.tablets)
            queues.append((backlog, queue, consumer))

        from pyspark.sql import SparkSession

        from spyt_queue import register

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", args.driver_memory)
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        jvm = find_jvm(children())
        for backlog, queue, consumer in queues:
            sampler = Sampler(jvm, args.interval)
            sampler.start()
            started = time.perf_counter()
            rows, batches = read_all(spark, server.proxy, queue, consumer, args.cap, str(work / f"chk{backlog}"))
            seconds = time.perf_counter() - started
            peaks = {key: value / 2**20 for key, value in sampler.stop().items()}
            line = (
                f"backlog={backlog} cap={args.cap} tablets={args.tablets} rows={rows} batches={batches} "
                f"seconds={seconds:.1f} driver_peak_rss_mb={peaks['driver']:.0f} "
                f"python_driver_peak_rss_mb={peaks['python_driver']:.0f} "
                f"python_driver_peak_pss_mb={peaks['python_driver_pss']:.0f} "
                f"python_workers_peak_rss_mb={peaks['python_workers']:.0f} "
                f"python_workers_peak_pss_mb={peaks['python_workers_pss']:.0f} "
                f"largest_python_driver_process_mb={sampler.largest('python_driver') / 2**20:.0f} "
                f"largest_python_worker_mb={sampler.largest('python_workers') / 2**20:.0f} "
                f"server_rss_mb={rss(server.pid) / 2**20:.0f}"
            )
            print(line, flush=True)
            if args.detail:
                for pid, (group, command, peak) in sorted(sampler.processes.items()):
                    print(f"  {group:<14} pid={pid:<7} peak_rss_mb={peak / 2**20:6.0f}  {command[-90:]}")
        spark.stop()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
