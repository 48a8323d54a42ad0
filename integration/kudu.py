"""A real Apache Kudu (one master and one tablet server) on loopback, for tests and local use.

The daemons are the native binaries of Kudu's own test artifact ``org.apache.kudu:kudu-binary`` (Maven Central,
classifier ``linux-x86_64``), which ``integration/install.sh`` resolves and unpacks into
``integration/target/kudu-<version>/`` (``bin/kudu-master``, ``bin/kudu-tserver``, ``bin/kudu``, ``lib/``, ``www/``).
Both daemons run under one ``bash`` in one process group, so :class:`integration.java_server.JavaServer` (ports,
work dir, process group, readiness deadline, SIGTERM/SIGKILL, atexit) manages them as one server; the first daemon
to exit takes the group down, so a crash shows up as "exited during start-up" with the log tail.

    from integration.kudu import KuduCluster

    with KuduCluster() as kudu:
        kudu.master_addresses      # "127.0.0.1:PORT", the Java client's master list
        kudu.uri("spyt_offsets")   # "kudu://127.0.0.1:PORT/spyt_offsets", an offsets.store URI

From a shell (foreground, Ctrl-C to stop)::

    python -m integration.kudu --port 7051

Traps that fail quietly, handled here (see integration/README.md): ``LD_LIBRARY_PATH`` must point at the bundled
``lib/`` (else its libkrb5 clashes with the system's), ``SASL_PATH`` at ``lib/sasl2`` (else both daemons listen but
every RPC negotiation fails and the tablet server never registers), and readiness is "the master lists the tablet
server", never an open port.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if __package__ in (None, ""):  # run as `python integration/kudu.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from integration.java_server import (
    INSTALL_HINT,
    INTEGRATION_DIR,
    JavaServer,
    JavaServerError,
    JavaServerUnavailableError,
    ServerOptions,
    run_in_foreground,
    server_argument_parser,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "KUDU_CLIENT_LIBS_DIR",
    "KUDU_HOME",
    "KUDU_VERSION",
    "KuduCluster",
    "KuduError",
    "KuduUnavailableError",
    "kudu_env",
    "missing_requirements",
]

#: Must match ``kudu.version`` in integration/pom.xml.
KUDU_VERSION = "1.18.1"
#: Where install.sh unpacks the kudu-binary jar.
KUDU_HOME = INTEGRATION_DIR / "target" / f"kudu-{KUDU_VERSION}"
#: The Java client jars (kudu-client + dependencies) for JPype; ``spyt_queue.sinks.kudu.client`` looks here last.
KUDU_CLIENT_LIBS_DIR = INTEGRATION_DIR / "target" / "kudu-client-libs"

log = logging.getLogger(__name__)


class KuduUnavailableError(JavaServerUnavailableError):
    """The Kudu binaries are missing (or do not run here): run integration/install.sh."""


class KuduError(JavaServerError):
    """The master or the tablet server failed to start or died."""


def kudu_env(home: Path = KUDU_HOME) -> dict[str, str]:
    """The environment the bundled binaries need: their own ``lib/`` first, SASL plugins from ``lib/sasl2``."""
    return {**os.environ, "LD_LIBRARY_PATH": str(home / "lib"), "SASL_PATH": str(home / "lib" / "sasl2")}


def missing_requirements(home: Path | str | None = None) -> str | None:
    """Why a cluster cannot be started here (for ``pytest.skip``), or None when it can."""
    return KuduCluster.unmet_requirements(home)


class KuduCluster(JavaServer):
    """One Kudu master and one tablet server on 127.0.0.1 (replication factor 1).

    ``port`` is the master's RPC port (0 or None: a free one); the tablet server's RPC port and both web UI ports
    are free ones. ``work_dir`` keeps WALs, data and the log (``kudu.log``) across runs when given. ``config``:
    extra ``--flag=value`` entries for both daemons (``{"flag": value}``).
    """

    NAME = "Kudu"
    PORTS = ("port", "tserver_port", "master_web_port", "tserver_web_port")
    LIBS_DIR = KUDU_HOME
    JARS_DESCRIPTION = f"Kudu {KUDU_VERSION} binaries (kudu-binary)"
    LOG_FILE = "kudu.log"
    WORK_DIR_PREFIX = "spyt-kudu-"
    STOP_TIMEOUT = 10.0
    Error = KuduError
    UnavailableError = KuduUnavailableError

    #: Flags of both daemons besides ports and directories (see integration/README.md for why each is there).
    DEFAULT_CONFIG = {
        "unlock_unsafe_flags": True,
        "unlock_experimental_flags": True,
        "never_fsync": True,  # tests: no fsync per write
        "time_source": "system_unsync",  # no NTP on test machines
        "enable_minidumps": False,
        "logtostderr": True,
        "memory_limit_hard_bytes": 1 << 30,
        "block_manager": "log",
    }

    port: int
    tserver_port: int
    master_web_port: int
    tserver_web_port: int

    def __init__(self, port: int | None = None, **options: Unpack[ServerOptions]) -> None:
        super().__init__({"port": port}, **options)
        self.home = Path(options.get("libs_dir") or KUDU_HOME)

    @classmethod
    def unmet_requirements(cls, libs_dir: Path | str | None = None) -> str | None:
        """The three binaries, runnable with the bundled libraries (``kudu --version``)."""
        home = Path(libs_dir) if libs_dir else KUDU_HOME
        missing = [b for b in ("kudu", "kudu-master", "kudu-tserver") if not os.access(home / "bin" / b, os.X_OK)]
        if missing:
            return f"{cls.JARS_DESCRIPTION} not found in {home} (missing bin/{', bin/'.join(missing)}); {INSTALL_HINT}"
        try:
            subprocess.run(
                [str(home / "bin" / "kudu"), "--version"],
                env=kudu_env(home),
                capture_output=True,
                check=True,
                timeout=60,
            )
        except (OSError, subprocess.SubprocessError) as err:
            return f"the Kudu binaries in {home} do not run here ({err}); {INSTALL_HINT}"
        return None

    @property
    def master_addresses(self) -> str:
        """``"127.0.0.1:PORT"``: the master list a Kudu client takes; valid once ``start()`` returned."""
        return self.address

    def uri(self, table: str) -> str:
        """A ``kudu://`` offsets-store URI for ``table`` on this cluster."""
        return f"kudu://{self.master_addresses}/{table}"

    def cli(self, *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run the bundled ``kudu`` command-line tool (e.g. ``cli("table", "list", kudu.master_addresses)``)."""
        return subprocess.run(
            [str(self.home / "bin" / "kudu"), *args],
            env=kudu_env(self.home),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    # -------------------------------------------------------------------------------------------- hooks

    def _flags(self, role: str, rpc_port: int, web_port: int) -> list[str]:
        assert self.data_dir is not None
        root = self.data_dir / role
        for sub in ("wal", "data", "log"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        own = {
            "fs_wal_dir": root / "wal",
            "fs_data_dirs": root / "data",
            "log_dir": root / "log",
            "rpc_bind_addresses": f"{self.host}:{rpc_port}",
            "webserver_interface": self.host,
            "webserver_port": web_port,
            "webserver_doc_root": self.home / "www",
        }
        merged = self._merged_config(own)

        def fmt(v: object) -> str:
            return ("true" if v else "false") if isinstance(v, bool) else str(v)

        return [f"--{k}={fmt(v)}" for k, v in merged.items()]

    def _command(self) -> list[str]:
        master = [
            str(self.home / "bin" / "kudu-master"),
            *self._flags("master", self.port, self.master_web_port),
            f"--master_addresses={self.master_addresses}",
            "--default_num_replicas=1",
        ]
        tserver = [
            str(self.home / "bin" / "kudu-tserver"),
            *self._flags("tserver", self.tserver_port, self.tserver_web_port),
            f"--tserver_master_addrs={self.master_addresses}",
        ]
        env = kudu_env(self.home)
        script = (
            f"export LD_LIBRARY_PATH={shlex.quote(env['LD_LIBRARY_PATH'])} SASL_PATH={shlex.quote(env['SASL_PATH'])}\n"
            f"{shlex.join(master)} &\n"
            f"{shlex.join(tserver)} &\n"
            # The first daemon to exit ends the script (and so the group): a crash is seen, not half a cluster.
            "wait -n\nrc=$?\nkill $(jobs -p) 2>/dev/null\nexit $rc\n"
        )
        assert self.work_dir is not None
        (self.work_dir / "run-kudu.sh").write_text(script)
        return ["bash", str(self.work_dir / "run-kudu.sh")]

    def _readiness_probe(self) -> Callable[[float], str | None]:
        """The master must list the tablet server (``kudu tserver list``); an open port is not enough."""

        def probe(remaining: float) -> str | None:
            try:
                out = self.cli("tserver", "list", self.master_addresses, "-format=csv", timeout=max(1.0, remaining))
            except subprocess.TimeoutExpired:
                return "kudu tserver list timed out"
            if out.returncode != 0:
                lines = (out.stderr or out.stdout).strip().splitlines()
                return lines[-1] if lines else "kudu tserver list failed"
            if f":{self.tserver_port}" not in out.stdout:
                return "tablet server not registered with the master yet"
            return None

        return probe

    def _failure_report(self) -> str:
        errors = [line for line in self._log_since_launch().splitlines() if line[:1] in ("E", "F")]
        first = ("First errors:\n" + "\n".join(errors[:8]) + "\n") if errors else ""
        return f"{first}Log tail ({self.log_path}):\n{self.log_tail(40)}"


# --------------------------------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m integration.kudu``: a master and a tablet server in the foreground until Ctrl-C."""
    description = f"Run Apache Kudu {KUDU_VERSION} (one master, one tablet server) on 127.0.0.1 until Ctrl-C."
    parser = server_argument_parser("python -m integration.kudu", description, port=7051, heap="-")
    args = parser.parse_args(argv)
    cluster = KuduCluster(args.port, work_dir=args.data_dir, start_timeout=args.timeout)

    def describe() -> str:
        return (
            f"  kudu.master = {cluster.master_addresses}\n"
            f"  store URI   = {cluster.uri('<offsets table>')}\n"
            f"  web UI      = http://{cluster.host}:{cluster.master_web_port}\n"
            f"  log         = {cluster.log_path}"
        )

    return run_in_foreground(cluster, f"Starting Apache Kudu {KUDU_VERSION} ...", describe)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(main())
