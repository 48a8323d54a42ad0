"""A real Spark standalone cluster on loopback for tests and local use: one master and N workers.

Everything comes from the installed PySpark (its ``bin/spark-class`` and ``jars/``): the master is
``spark-class org.apache.spark.deploy.master.Master``, each worker
``spark-class org.apache.spark.deploy.worker.Worker``, every one a child process in its own process group, bound to
127.0.0.1, with its log, the workers' executor directories and the Spark scratch space in a temporary directory that
``stop()`` removes. Executors run ``PYSPARK_PYTHON`` (by default this interpreter), so the package installed in it
is what the executors import.

    from integration.spark_cluster import SparkStandaloneCluster

    with SparkStandaloneCluster(workers=2, cores=1, memory="1g") as cluster:
        spark = SparkSession.builder.master(cluster.master_url).config(map=cluster.driver_conf()).getOrCreate()

Faults, for the chaos tests: :meth:`SparkStandaloneCluster.kill_executor` SIGKILLs one executor JVM
(``CoarseGrainedExecutorBackend``, a child of one of *this* cluster's workers) with its Python workers; the worker
then launches a new one for the application. :meth:`SparkStandaloneCluster.kill_worker` SIGKILLs a whole worker
(its JVM, its executors and their Python workers); :meth:`SparkStandaloneCluster.restart_worker` starts it again.

From a shell (foreground, Ctrl-C to stop)::

    python -m integration.spark_cluster --workers 2 --cores 1 --memory 1g
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as `python integration/spark_cluster.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from integration.java_server import find_java, free_ports

__all__ = [
    "EXECUTOR_MAIN",
    "MASTER_MAIN",
    "WORKER_MAIN",
    "SparkClusterError",
    "SparkStandaloneCluster",
    "missing_requirements",
    "spark_home",
]

MASTER_MAIN = "org.apache.spark.deploy.master.Master"
WORKER_MAIN = "org.apache.spark.deploy.worker.Worker"
#: The main class of an executor JVM of a standalone cluster (what :meth:`SparkStandaloneCluster.executors` finds).
EXECUTOR_MAIN = "org.apache.spark.executor.CoarseGrainedExecutorBackend"

log = logging.getLogger(__name__)


class SparkClusterError(RuntimeError):
    """The master or a worker failed to start, or a fault could not be applied."""


def spark_home() -> Path | None:
    """The installed PySpark's directory when it holds ``bin/spark-class`` and ``jars/`` (a pip-installed Spark)."""
    try:
        import pyspark
    except ImportError:
        return None
    home = Path(pyspark.__file__).resolve().parent
    return home if (home / "bin" / "spark-class").is_file() and (home / "jars").is_dir() else None


def missing_requirements() -> str | None:
    """Why a cluster cannot be started here (for ``pytest.skip``), or None when it can."""
    if not sys.platform.startswith("linux"):
        return "the standalone test cluster finds its executors through /proc (Linux only)"
    if spark_home() is None:
        return "the installed PySpark has no bin/spark-class and jars/ (pip install pyspark)"
    if find_java() is None:
        return "Java 17+ is needed for Spark (set JAVA_HOME or put java on PATH)"
    return None


@dataclass
class _Proc:
    """One daemon of the cluster: its argv, log file and running process."""

    name: str
    argv: list[str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None


def _process_table() -> dict[int, tuple[int, str]]:
    """``pid -> (parent pid, command line)`` of every process visible in /proc."""
    table: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        # The command name is in parentheses and may hold spaces; the parent pid is the second field after it.
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        table[int(entry)] = (ppid, cmdline)
    return table


def _descendants(pid: int, table: dict[int, tuple[int, str]]) -> list[int]:
    """Every process below ``pid`` in ``table`` (children first found first)."""
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, (ppid, _) in table.items() if ppid == parent]
        found.extend(children)
        frontier.extend(children)
    return found


def _kill(pids: Sequence[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


class SparkStandaloneCluster:
    """A Spark standalone master and ``workers`` workers on ``host`` (127.0.0.1), each worker offering ``cores``
    cores and ``memory`` to executors.

    ``python``: the executors' and driver's ``PYSPARK_PYTHON`` (default: this interpreter). ``work_dir``: where logs,
    executor directories and scratch space go (default a fresh temporary directory removed by ``stop()``; a given
    one is kept). ``daemon_heap``: the master's and workers' own JVM heap.
    """

    def __init__(
        self,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        host: str = "127.0.0.1",
        python: str | None = None,
        work_dir: Path | str | None = None,
        daemon_heap: str = "256m",
        start_timeout: float = 180.0,
    ) -> None:
        self.worker_count, self.cores, self.memory, self.host = workers, cores, memory, host
        self.python = python or sys.executable
        self.daemon_heap = daemon_heap
        self.start_timeout = start_timeout
        self._given_work_dir = Path(work_dir) if work_dir is not None else None
        self.work_dir: Path | None = None
        self.port = 0
        self.webui_port = 0
        self.master: _Proc | None = None
        self.workers: list[_Proc] = []

    # ------------------------------------------------------------------------------------------- addresses

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:PORT``: the driver's ``master``; valid once ``start()`` returned."""
        return f"spark://{self.host}:{self.port}"

    @property
    def webui_url(self) -> str:
        """The master's web UI (its ``/json/`` is the cluster's state)."""
        return f"http://{self.host}:{self.webui_port}"

    def driver_conf(self, executor_memory: str = "512m") -> dict[str, str]:
        """Spark settings a driver on this machine needs for this cluster: bind to loopback, executors of
        ``executor_memory`` (at most the worker's ``memory``) running ``PYSPARK_PYTHON``."""
        return {
            "spark.driver.host": self.host,
            "spark.driver.bindAddress": self.host,
            "spark.executor.memory": executor_memory,
            "spark.executor.cores": str(self.cores),
            "spark.pyspark.python": self.python,
            "spark.executorEnv.PYSPARK_PYTHON": self.python,
        }

    # ------------------------------------------------------------------------------------------- lifecycle

    def __enter__(self) -> SparkStandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> SparkStandaloneCluster:
        """Start the master, then every worker; return once the master lists them all ALIVE."""
        reason = missing_requirements()
        if reason:
            raise SparkClusterError(reason)
        if self._given_work_dir is not None:
            self.work_dir = self._given_work_dir
            self.work_dir.mkdir(parents=True, exist_ok=True)
        else:
            self.work_dir = Path(tempfile.mkdtemp(prefix="spyt-spark-cluster-"))
        (self.work_dir / "conf").mkdir(exist_ok=True)
        (self.work_dir / "local").mkdir(exist_ok=True)
        self.port, self.webui_port = free_ports(2, self.host)
        self.master = _Proc(
            "master",
            self._spark_class(
                MASTER_MAIN, "--host", self.host, "--port", str(self.port), "--webui-port", str(self.webui_port)
            ),
            self.work_dir / "master.log",
        )
        self.workers = []
        for index in range(self.worker_count):
            executors = self.work_dir / f"worker-{index}"
            executors.mkdir(exist_ok=True)
            argv = self._spark_class(
                WORKER_MAIN,
                "--host", self.host,
                "--webui-port", "0",
                "--cores", str(self.cores),
                "--memory", self.memory,
                "--work-dir", str(executors),
                self.master_url,
            )  # fmt: skip
            self.workers.append(_Proc(f"worker-{index}", argv, self.work_dir / f"worker-{index}.log"))
        try:
            self._launch(self.master)
            for worker in self.workers:
                self._launch(worker)
            self.wait_workers(self.worker_count, self.start_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGKILL every worker (with its executors) and the master; remove a temporary work directory."""
        for daemon in [*self.workers, *([self.master] if self.master else [])]:
            self._kill_group(daemon)
        if self.work_dir is not None and self._given_work_dir is None:
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir = None

    def _spark_class(self, main: str, *args: str) -> list[str]:
        home = spark_home()
        assert home is not None
        return [str(home / "bin" / "spark-class"), main, *args]

    def _env(self) -> dict[str, str]:
        assert self.work_dir is not None
        env = dict(os.environ)
        home = spark_home()
        java = find_java()
        assert home is not None and java is not None
        env.update(
            {
                "SPARK_HOME": str(home),
                "SPARK_CONF_DIR": str(self.work_dir / "conf"),  # no stray spark-defaults.conf
                "SPARK_LOCAL_IP": self.host,
                "SPARK_LOCAL_DIRS": str(self.work_dir / "local"),
                "SPARK_DAEMON_MEMORY": self.daemon_heap,
                "SPARK_NO_DAEMONIZE": "1",
                "JAVA_HOME": str(Path(java).resolve().parent.parent),
                "PYSPARK_PYTHON": self.python,
            }
        )
        return env

    def _launch(self, daemon: _Proc) -> None:
        with open(daemon.log_path, "ab") as out:
            daemon.proc = subprocess.Popen(
                daemon.argv,
                env=self._env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a group of its own: the daemon, its executors and their Python workers
            )

    def _kill_group(self, daemon: _Proc) -> None:
        if daemon.proc is None:
            return
        below = _descendants(daemon.proc.pid, _process_table()) if daemon.proc.poll() is None else []
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(daemon.proc.pid, signal.SIGKILL)
        _kill(below)  # anything that left the group
        with contextlib.suppress(subprocess.TimeoutExpired):
            daemon.proc.wait(30)

    # ----------------------------------------------------------------------------------------------- state

    def state(self) -> dict:
        """The master's ``/json/`` (workers, applications) as a dict."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=5) as answer:
            return json.loads(answer.read())

    def alive_workers(self) -> int:
        """How many workers the master lists ALIVE (0 when it does not answer)."""
        try:
            return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")
        except (OSError, ValueError):
            return 0

    def wait_workers(self, count: int, timeout: float) -> None:
        """Wait until the master lists ``count`` workers ALIVE; raise with the logs' tails otherwise."""
        deadline = time.monotonic() + timeout
        while self.alive_workers() < count:
            for daemon in [self.master, *self.workers]:
                if daemon is not None and daemon.proc is not None and daemon.proc.poll() is not None:
                    raise SparkClusterError(f"the Spark {daemon.name} exited:\n{self.log_tail(daemon)}")
            if time.monotonic() > deadline:
                tails = "\n".join(self.log_tail(d) for d in [self.master, *self.workers] if d is not None)
                raise SparkClusterError(f"{count} Spark workers not ALIVE within {timeout:.0f} s:\n{tails}")
            time.sleep(0.3)

    def log_tail(self, daemon: _Proc, chars: int = 3000) -> str:
        """The end of one daemon's log."""
        try:
            return f"--- {daemon.log_path.name}:\n" + daemon.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return f"--- {daemon.log_path.name}: (none)"

    def executors(self, worker: int | None = None) -> dict[int, int]:
        """``executor JVM pid -> worker index`` of the executors running under this cluster's workers (or under
        worker ``worker`` only). Only children of the workers this object started are ever listed."""
        table = _process_table()
        workers = {w.pid: i for i, w in enumerate(self.workers) if w.pid is not None}
        return {
            pid: workers[ppid]
            for pid, (ppid, cmdline) in table.items()
            if ppid in workers and EXECUTOR_MAIN in cmdline and (worker is None or workers[ppid] == worker)
        }

    def wait_executors(self, count: int, timeout: float) -> int:
        """Wait (at most ``timeout`` seconds) until ``count`` executors run under this cluster's workers; return
        how many run then."""
        deadline = time.monotonic() + timeout
        while len(self.executors()) < count and time.monotonic() < deadline:
            time.sleep(0.2)
        return len(self.executors())

    def executor_logs(self) -> Iterator[Path]:
        """Every executor's ``stderr`` under the workers' directories (``worker-N/app-.../ID/stderr``)."""
        assert self.work_dir is not None
        yield from sorted(self.work_dir.glob("worker-*/app-*/*/stderr"))

    # ---------------------------------------------------------------------------------------------- faults

    def kill_executor(self, worker: int | None = None) -> list[int]:
        """SIGKILL one executor JVM (``CoarseGrainedExecutorBackend``; under worker ``worker`` if given) and every
        process below it (its Python daemon and workers); return the pids killed. Raises when none runs."""
        running = self.executors(worker)
        if not running:
            raise SparkClusterError("no executor of this cluster is running to kill")
        pid = sorted(running)[0]
        table = _process_table()
        victims = [pid, *_descendants(pid, table)]
        _kill(victims)
        log.info("killed executor %s of worker-%s with %s", pid, running[pid], victims[1:])
        return victims

    def kill_worker(self, index: int) -> None:
        """SIGKILL worker ``index`` with its executors and their Python workers (it stays down until
        :meth:`restart_worker`)."""
        self._kill_group(self.workers[index])

    def restart_worker(self, index: int, timeout: float | None = None) -> None:
        """Start worker ``index`` again (it registers with the master anew) and wait until it is ALIVE."""
        worker = self.workers[index]
        if worker.pid is None:
            self._launch(worker)
        self.wait_workers(self.worker_count, timeout or self.start_timeout)


# --------------------------------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m integration.spark_cluster``: a master and workers in the foreground until Ctrl-C."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m integration.spark_cluster",
        description="Run a Spark standalone master and workers from the installed PySpark on 127.0.0.1.",
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--cores", type=int, default=1, help="cores each worker offers (default 1)")
    parser.add_argument("--memory", default="1g", help="memory each worker offers to executors (default 1g)")
    parser.add_argument("--work-dir", type=Path, default=None, help="keep logs and executor directories here")
    args = parser.parse_args(argv)
    reason = missing_requirements()
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    cluster = SparkStandaloneCluster(args.workers, args.cores, args.memory, work_dir=args.work_dir)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        cluster.start()
        print(f"  master    = {cluster.master_url}\n  web UI    = {cluster.webui_url}")
        print(f"  logs      = {cluster.work_dir}")
        print(f"  python    = {cluster.python} (PYSPARK_PYTHON of the executors)", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    except SparkClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(main())
