"""What every local test server here has in common: a JVM (or any child process) on 127.0.0.1, run from jars in
``integration/target/<set>-libs``, with its config, data and log in a work directory.

:class:`JavaServer` owns the lifecycle: free ports, the work directory, the Java lookup, the classpath, the launch
(in a process group of its own, killed with the Python process on Linux), the wait for readiness with a deadline
(errors carry the log's first ERROR lines and its tail), ``stop()`` (SIGTERM to the group, SIGKILL after
``stop_timeout``), cleanup at interpreter exit of everything started, and ``with`` support. A server subclasses it
and fills in the hooks: ``_write_configs``, ``_prepare`` (optional), ``_command``, ``_readiness_probe``; see
:class:`integration.kafka_broker.KafkaBroker` and :class:`integration.zookeeper.ZooKeeperServer`, and the
"Adding a server" section of ``integration/README.md``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypedDict, TypeVar

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "INSTALL_HINT",
    "INTEGRATION_DIR",
    "MIN_JAVA",
    "JavaServer",
    "JavaServerError",
    "JavaServerUnavailableError",
    "ServerOptions",
    "find_java",
    "free_ports",
    "java_command",
    "port_accepts",
    "port_is_free",
    "properties_text",
    "run_in_foreground",
    "server_argument_parser",
]

MIN_JAVA = 17
INTEGRATION_DIR = Path(__file__).resolve().parent
INSTALL_HINT = "run integration/install.sh (needs Java 17+ and Maven; fetches the jars from Maven Central)"

log = logging.getLogger(__name__)

_Server = TypeVar("_Server", bound="JavaServer")


class JavaServerUnavailableError(RuntimeError):
    """Java 17+ or the server's jars are missing: nothing is wrong with the code, the machine lacks a piece."""


class JavaServerError(RuntimeError):
    """The server failed to prepare, to start, or died."""


# --------------------------------------------------------------------------------------------- discovery


@functools.lru_cache(maxsize=8)
def _java_major(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" style -> 8


def find_java() -> str | None:
    """Path of a ``java`` of version 17+: ``$JAVA_HOME/bin/java`` first, then ``java`` on PATH."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(on_path)
    for java in candidates:
        if os.access(java, os.X_OK) and (_java_major(java) or 0) >= MIN_JAVA:
            return java
    return None


def java_command(
    classpath: Sequence[Path],
    main_class: str,
    *args: str,
    heap: str,
    flags: Sequence[str] = (),
    java: str | None = None,
) -> list[str]:
    """argv ``java -Xmx<heap> <flags> -cp <classpath> <main_class> <args>`` (``java`` defaults to :func:`find_java`)."""
    cp = os.pathsep.join(str(j) for j in classpath)
    return [java or find_java() or "java", f"-Xmx{heap}", *flags, "-cp", cp, main_class, *args]


# ------------------------------------------------------------------------------------------------ helpers


def free_ports(count: int, host: str) -> list[int]:
    """``count`` distinct free TCP ports on ``host`` (held open together so they differ)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could bind ``host:port`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def port_accepts(host: str, port: int) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def properties_text(props: Mapping[str, object]) -> str:
    """A Java ``.properties`` file (also ZooKeeper's ``zoo.cfg``): ``key=value`` lines, booleans as true/false."""

    def fmt(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v).replace("\\", "\\\\")

    return "".join(f"{k}={fmt(v)}\n" for k, v in props.items())


_PR_SET_PDEATHSIG = 1


@functools.lru_cache(maxsize=1)
def _libc():
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


def _die_with_parent_preexec() -> Callable[[], None] | None:
    """On Linux: SIGKILL the child if the Python process dies without stopping it (e.g. kill -9)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = _libc()  # resolved in the parent: nothing is imported or loaded after fork()
    if libc is None:
        return None

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return preexec


#: Names whose values ``command.txt`` hides: Spark's default ``spark.redaction.regex``.
SECRET_NAME = re.compile(r"(?i)secret|password|token|access[.]?key")


def _shown_value(name: str, value: str) -> str:
    return "*********(redacted)" if SECRET_NAME.search(name) else value


def _signal_group(pid: int, sig: int) -> None:
    """``sig`` to the process group led by ``pid`` (the server and anything it forked); gone already is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


_RUNNING: weakref.WeakSet[JavaServer] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    for server in list(_RUNNING):
        with contextlib.suppress(Exception):
            server.stop()


# ------------------------------------------------------------------------------------------------- server


class ServerOptions(TypedDict, total=False):
    """Keyword options of every :class:`JavaServer` (and so of ``KafkaBroker`` and ``ZooKeeperServer``)."""

    #: Address to bind (default 127.0.0.1).
    host: str
    #: Extra or overriding entries of the server's main config file (``DEFAULT_CONFIG``).
    config: Mapping[str, object] | None
    #: JVM max heap, e.g. "512m" (default: the class's ``HEAP``).
    heap: str
    #: Where config, data and log go; kept by ``stop()``. Default: a temporary directory that ``stop()`` removes.
    work_dir: Path | str | None
    #: The jars (default: the class's ``LIBS_DIR``).
    libs_dir: Path | str | None
    #: The ``java`` executable (default: :func:`find_java`).
    java: str | None
    #: Seconds ``start()`` waits for readiness (default 60).
    start_timeout: float
    #: Seconds ``stop()`` waits after SIGTERM before SIGKILL (default: the class's ``STOP_TIMEOUT``); 0 kills at once.
    stop_timeout: float
    #: The server's log level (default INFO).
    log_level: str
    #: Extra JVM options, after the server's own.
    jvm_options: Sequence[str]


class JavaServer:
    """One server process on loopback, run from a set of jars; subclass it and fill in the hooks.

    Class attributes a subclass sets: ``NAME`` (for messages), ``PORTS`` (names of the port attributes, the
    client port first), ``LIBS_DIR``, ``CORE_JAR`` (``(exact name for LIBS_DIR, prefix for any other libs_dir)``),
    ``RUNTIME_JARS``, ``JARS_DESCRIPTION``, ``LOG_FILE``, ``WORK_DIR_PREFIX``, ``Error``, ``UnavailableError``.

    Hooks: ``_write_configs()`` writes the config files into ``work_dir``; ``_prepare()`` runs once before the
    launch (e.g. formatting storage); ``_command()`` is the server's argv (``_java_command`` builds a JVM's);
    ``_readiness_probe()`` returns a callable ``probe(remaining_seconds)`` that returns None once the server
    serves, or else why not. ``unmet_requirements(libs_dir)`` says what the machine lacks (override to add more).
    """

    NAME: ClassVar[str] = "server"
    PORTS: ClassVar[tuple[str, ...]] = ("port",)
    LIBS_DIR: ClassVar[Path] = INTEGRATION_DIR / "target" / "libs"
    CORE_JAR: ClassVar[tuple[str, str]] = ("", "")
    RUNTIME_JARS: ClassVar[tuple[str, ...]] = ()
    JARS_DESCRIPTION: ClassVar[str] = "jars"
    LOG_FILE: ClassVar[str] = "server.log"
    WORK_DIR_PREFIX: ClassVar[str] = "spyt-server-"
    #: Log lines that mean another process took a port we picked: ``start()`` then retries on new ports.
    PORT_CLASH_MARKERS: ClassVar[tuple[str, ...]] = ("Address already in use", "BindException")
    LOG_TAIL_LINES: ClassVar[int] = 40
    START_ATTEMPTS: ClassVar[int] = 3
    #: Defaults of the ``heap`` and ``stop_timeout`` options.
    HEAP: ClassVar[str] = "256m"
    STOP_TIMEOUT: ClassVar[float] = 10.0
    #: Entries of the server's main config file besides ports and directories; the ``config`` option overrides them.
    DEFAULT_CONFIG: ClassVar[Mapping[str, object]] = {}
    Error: ClassVar[type[Exception]] = JavaServerError
    UnavailableError: ClassVar[type[Exception]] = JavaServerUnavailableError

    def __init__(self, ports: Mapping[str, int | None], **options: Unpack[ServerOptions]) -> None:
        """``ports``: the wanted value of each of ``PORTS`` (0 or None: a free one); ``options``: see
        :class:`ServerOptions`."""
        unknown = set(options) - set(ServerOptions.__annotations__)
        if unknown:
            raise TypeError(f"{type(self).__name__}() got unexpected keyword arguments {sorted(unknown)}")
        work_dir, libs_dir, java = options.get("work_dir"), options.get("libs_dir"), options.get("java")
        self.host = options.get("host", "127.0.0.1")
        self._want_ports = {name: ports.get(name) or 0 for name in self.PORTS}
        for name, port in self._want_ports.items():
            setattr(self, name, port)
        self.extra_config = dict(options.get("config") or {})
        self.heap = options.get("heap", self.HEAP)
        self._given_work_dir = Path(work_dir) if work_dir else None
        self.work_dir: Path | None = None
        self.libs_dir = Path(libs_dir) if libs_dir else None
        self._java = java
        self.java: str | None = java
        self.start_timeout = options.get("start_timeout", 60.0)
        self.stop_timeout = options.get("stop_timeout", self.STOP_TIMEOUT)
        self.log_level = options.get("log_level", "INFO")
        self.jvm_options = list(options.get("jvm_options", ()))
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file = None
        self._log_offset = 0

    # ------------------------------------------------------------------------------------- requirements

    @classmethod
    def classpath(cls, libs_dir: Path | str | None = None) -> list[Path]:
        """The server's jars (sorted), or [] when the core jar or one of ``RUNTIME_JARS`` is not there.

        In the default ``LIBS_DIR`` the core jar must have the exact expected name (version included), so that a
        stale install of another version asks for ``install.sh`` to be re-run."""
        libs = Path(libs_dir) if libs_dir else cls.LIBS_DIR
        jars = sorted(libs.glob("*.jar")) if libs.is_dir() else []
        core = cls.CORE_JAR[0] if libs_dir is None else cls.CORE_JAR[1]
        needed = (core, *cls.RUNTIME_JARS)
        return jars if all(any(j.name.startswith(n) for j in jars) for n in needed) else []

    @classmethod
    def unmet_requirements(cls, libs_dir: Path | str | None = None) -> str | None:
        """Why the server cannot be started here (for ``pytest.skip``), or None when it can."""
        if find_java() is None:
            return f"no Java {MIN_JAVA}+ found (JAVA_HOME or PATH); {INSTALL_HINT}"
        if not cls.classpath(libs_dir):
            where = Path(libs_dir) if libs_dir else cls.LIBS_DIR
            return f"{cls.JARS_DESCRIPTION} not found in {where}; {INSTALL_HINT}"
        return None

    # ---------------------------------------------------------------------------------------- properties

    @property
    def address(self) -> str:
        """``"127.0.0.1:PORT"`` of the client port (the first of ``PORTS``)."""
        return f"{self.host}:{getattr(self, self.PORTS[0])}"

    @property
    def log_path(self) -> Path | None:
        """The server's stdout and stderr, in ``work_dir``."""
        return self.work_dir / self.LOG_FILE if self.work_dir else None

    @property
    def data_dir(self) -> Path | None:
        """``work_dir/data``, created by ``start()``."""
        return self.work_dir / "data" if self.work_dir else None

    @property
    def pid(self) -> int | None:
        """The server process's id while it runs (it leads its own process group)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def is_running(self) -> bool:
        """Whether the process started by ``start()`` is still alive."""
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, lines: int | None = None) -> str:
        """The last ``lines`` lines of the server log (default ``LOG_TAIL_LINES``)."""
        path = self.log_path
        if not path or not path.exists():
            return "(no log)"
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 256 * 1024))
            text = f.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-(lines or self.LOG_TAIL_LINES) :])

    def _log_since_launch(self) -> str:
        path = self.log_path
        if not path or not path.exists():
            return ""
        with path.open("rb") as f:
            f.seek(self._log_offset)
            return f.read().decode("utf-8", "replace")

    def _failure_report(self) -> str:
        """The log's first ERROR/FATAL lines of this launch (the cause, usually) and its tail."""
        errors = [line for line in self._log_since_launch().splitlines() if " ERROR " in line or " FATAL " in line]
        first = ("First errors:\n" + "\n".join(errors[:8]) + "\n") if errors else ""
        return f"{first}Log tail ({self.log_path}):\n{self.log_tail(40)}"

    # ----------------------------------------------------------------------------------------- lifecycle

    def __enter__(self: _Server) -> _Server:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self: _Server) -> _Server:
        """Pick ports, write the configs, prepare, launch and wait until the readiness probe passes."""
        if self.is_running:
            return self
        reason = self.unmet_requirements(self.libs_dir)
        if reason:
            raise self.UnavailableError(reason)
        self.java = self._java or find_java()
        t0 = time.monotonic()
        attempts = self.START_ATTEMPTS if 0 in self._want_ports.values() else 1
        for attempt in range(1, attempts + 1):
            try:
                self._prepare_work_dir()
                self._pick_ports()
                self._write_configs()
                self._prepare()
                self._launch()
                self._wait_ready(t0 + self.start_timeout)
            except self.Error:
                log_text = self._log_since_launch()
                if attempt < attempts and any(m in log_text for m in self.PORT_CLASH_MARKERS):
                    log.warning("%s port clash (%s), retrying on new ports", self.NAME, self._ports_text())
                    self._terminate()
                    self._cleanup_work_dir()
                    continue
                self.stop()
                raise
            except BaseException:  # KeyboardInterrupt, OSError, ...: leave no process or directory behind
                self.stop()
                raise
            break
        self.startup_seconds = time.monotonic() - t0
        _RUNNING.add(self)
        log.info(
            "%s up at %s in %.1fs (pid %s, dir %s)",
            self.NAME,
            self.address,
            self.startup_seconds,
            self.pid,
            self.work_dir,
        )
        return self

    def stop(self) -> None:
        """SIGTERM (clean shutdown), SIGKILL after ``stop_timeout`` s (at once if 0), then remove the temporary
        directory."""
        self._terminate()
        _RUNNING.discard(self)
        self._cleanup_work_dir()

    # ---------------------------------------------------------------------------------------------- hooks

    def _merged_config(self, own: Mapping[str, object]) -> dict[str, object]:
        """The main config file's entries: ``own`` (ports, directories), then ``DEFAULT_CONFIG``, then ``config=``."""
        return {**own, **self.DEFAULT_CONFIG, **self.extra_config}

    def _write_configs(self) -> None:
        """Write the server's config files into ``work_dir`` (ports are picked by now)."""

    def _prepare(self) -> None:
        """Run once per launch after the configs are written, e.g. to format storage (default: nothing)."""

    def _command(self) -> list[str]:
        """The server's argv; ``cwd`` is ``work_dir`` and stdout/stderr go to ``log_path``."""
        raise NotImplementedError

    def _environment(self) -> dict[str, str | None]:
        """Environment variables the server process gets besides this process's (None: removed). They go to the
        process directly, never through a command line (``ps`` shows those) or a file."""
        return {}

    def command_text(self, cmd: Sequence[str]) -> str:
        """What ``command.txt`` holds: the environment set (values of secret names, such as ``YT_TOKEN``, hidden)
        and the command, with the values of ``--conf``/``-D`` settings of secret names hidden."""
        env = [
            f"unset {key}" if value is None else f"{key}={_shown_value(key, value)}"
            for key, value in self._environment().items()
        ]
        words = []
        for word in cmd:
            key, equals, value = word.partition("=")
            words.append(f"{key}={_shown_value(key, value)}" if equals else word)
        return "".join(line + "\n" for line in env) + " ".join(words) + "\n"

    def write_command_file(self, cmd: Sequence[str]) -> Path:
        """Write :meth:`command_text` to ``work_dir/command.txt``, readable by its owner only; its path."""
        assert self.work_dir is not None
        path = self.work_dir / "command.txt"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # an older file of a kept work_dir
        with os.fdopen(fd, "w") as file:
            file.write(self.command_text(cmd))
        return path

    def _readiness_probe(self) -> Callable[[float], str | None]:
        """A callable ``probe(remaining_seconds)``: None once the server serves, else why not (default: the client
        port accepts connections). Made once per launch, so it may keep a client between calls."""

        def probe(remaining: float) -> str | None:
            return None if port_accepts(self.host, getattr(self, self.PORTS[0])) else "port not open yet"

        return probe

    def _jvm_flags(self, heap: str) -> list[str]:
        """JVM flags besides ``-Xmx`` and ``jvm_options`` (GC, logging config, system properties)."""
        return ["-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true"]

    def _java_command(
        self, main_class: str, *args: str, heap: str | None = None, flags: Sequence[str] | None = None
    ) -> list[str]:
        """``java -Xmx -<flags> <jvm_options> -cp <classpath> main_class args``, flags defaulting to ``_jvm_flags``."""
        heap = heap or self.heap
        flags = self._jvm_flags(heap) if flags is None else flags
        return java_command(
            self.classpath(self.libs_dir),
            main_class,
            *args,
            heap=heap,
            flags=[*flags, *self.jvm_options],
            java=self.java,
        )

    # ------------------------------------------------------------------------------------------ internals

    def _ports_text(self) -> str:
        return "/".join(str(getattr(self, name)) for name in self.PORTS)

    def _prepare_work_dir(self) -> None:
        if self._given_work_dir is not None:
            self.work_dir = self._given_work_dir
        elif self.work_dir is None:
            self.work_dir = Path(tempfile.mkdtemp(prefix=self.WORK_DIR_PREFIX))
        (self.work_dir / "data").mkdir(parents=True, exist_ok=True)

    def _pick_ports(self) -> None:
        for p in self._want_ports.values():
            if p and not port_is_free(self.host, p):
                raise self.Error(f"{self.host}:{p} is already in use (use port 0 for a free one)")
        given = [p for p in self._want_ports.values() if p]
        if len(set(given)) != len(given):
            raise self.Error(f"{self.NAME}: ports {self._want_ports} must differ")
        free = iter(free_ports(list(self._want_ports.values()).count(0), self.host))
        for name, want in self._want_ports.items():
            setattr(self, name, want or next(free))

    def _launch(self) -> None:
        assert self.work_dir is not None and self.log_path is not None
        cmd = self._command()
        self.write_command_file(cmd)
        env = dict(os.environ)
        for key, value in self._environment().items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self._log_file = open(self.log_path, "ab")
        # PDEATHSIG is tied to the forking *thread*: only use it from the main thread.
        preexec = _die_with_parent_preexec() if threading.current_thread() is threading.main_thread() else None
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            cwd=self.work_dir,
            env=env,
            start_new_session=True,  # its own process group: Ctrl-C in a terminal reaches us, and we stop it cleanly
            preexec_fn=preexec,
        )

    def _wait_ready(self, deadline: float) -> None:
        probe = self._readiness_probe()
        last_error: object = None
        while True:
            assert self._proc is not None
            rc = self._proc.poll()
            if rc is not None:
                raise self.Error(f"{self.NAME} exited with code {rc} during start-up. {self._failure_report()}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.Error(
                    f"{self.NAME} at {self.address} not ready after {self.start_timeout:.0f}s "
                    f"(last error: {last_error}). {self._failure_report()}"
                )
            last_error = probe(remaining)
            if last_error is None:
                return
            time.sleep(0.1)

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None and self.stop_timeout <= 0:
                _signal_group(proc.pid, signal.SIGKILL)  # a clean shutdown is not worth waiting for
                proc.wait(timeout=30)
            elif proc.poll() is None:
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=self.stop_timeout)
                except subprocess.TimeoutExpired:
                    log.warning("%s pid %s ignored SIGTERM for %ss; killing it", self.NAME, proc.pid, self.stop_timeout)
                    _signal_group(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=30)
            _signal_group(proc.pid, signal.SIGKILL)  # whatever it forked and left behind
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _cleanup_work_dir(self) -> None:
        """Remove our own temporary directory; a caller-given ``work_dir`` is left as it is."""
        if self.work_dir is not None and self._given_work_dir is None:
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir = None


# --------------------------------------------------------------------------------------------------- CLI


def server_argument_parser(prog: str, description: str, port: int, heap: str) -> argparse.ArgumentParser:
    """A parser with the options every ``python -m integration.<server>`` takes: --port, --heap, --data-dir,
    --timeout; a server adds its own."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--port", type=int, default=port, help=f"client port (0 = any free port; default {port})")
    parser.add_argument("--heap", default=heap, help=f"JVM max heap (default {heap})")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep config, data and log here across runs (default: a temp dir, deleted on exit)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="start-up timeout in seconds")
    return parser


def run_in_foreground(
    server: JavaServer,
    banner: str,
    describe: Callable[[], str],
    echo_log: bool = False,
    on_ready: Callable[[], None] | None = None,
) -> int:
    """Start ``server``, run ``on_ready`` and print ``describe()`` once it serves, keep it up until Ctrl-C or
    SIGTERM, then stop it.

    Returns the exit status: 0 after Ctrl-C, 1 if it failed or died, 2 if the machine lacks Java or the jars,
    130 if interrupted while starting. ``echo_log`` copies the server log to stdout while it runs."""
    reason = server.unmet_requirements(server.libs_dir)
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    print(banner, flush=True)
    try:
        server.start()
    except server.Error as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        server.stop()
        return 130
    if on_ready is not None:
        try:
            on_ready()
        except Exception as err:  # reported as the command's one-line error
            print(f"error: {err}", file=sys.stderr)
            server.stop()
            return 1
    print(f"{server.NAME} ready in {server.startup_seconds:.1f}s\n{describe()}\nPress Ctrl-C to stop.", flush=True)
    log_path = server.log_path
    offset = log_path.stat().st_size if echo_log and log_path else 0
    try:
        while server.is_running:
            if echo_log and log_path:
                with log_path.open("rb") as f:
                    f.seek(offset)
                    chunk = f.read()
                offset += len(chunk)
                if chunk:
                    sys.stdout.write(chunk.decode("utf-8", "replace"))
                    sys.stdout.flush()
            time.sleep(0.5)
        print(f"error: {server.NAME} exited unexpectedly. Log tail:\n{server.log_tail()}", file=sys.stderr)
        server.stop()
        return 1
    except KeyboardInterrupt:
        print(f"\nStopping {server.NAME} ...", flush=True)
        server.stop()
        print("Stopped.", flush=True)
        return 0
