"""Running the local server: :func:`serve` in the foreground, :class:`LocalYtServer` as a child process."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from spyt_queue.local.state import DEFAULT_CLUSTER_NAME

READY_PREFIX = "ytqueue local server: proxy="
#: The environment variable holding the token a server bound beyond loopback requires (never a command-line
#: argument, which ``ps`` shows).
TOKEN_ENV = "YTQUEUE_LOCAL_TOKEN"


class ExposedServerError(ValueError):
    """A bind beyond loopback without a token: anyone on the network could create and remove tables."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) only reaches this machine: every address it resolves to is a
    loopback one (``127.0.0.0/8``, ``::1``). ``0.0.0.0``, ``::`` and a machine's own address are not."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    addresses = {info[4][0].split("%", 1)[0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(address).is_loopback for address in addresses)


def client_addresses(host: str, port: int) -> list[str]:
    """The ``host:port`` addresses clients use for a server bound to ``host``: for a wildcard bind (``0.0.0.0``,
    ``::``, ``""``), ``127.0.0.1:PORT`` on this machine and this machine's name from others; else ``host:PORT``."""
    if host in ("", "0.0.0.0", "::", "[::]"):
        return [f"127.0.0.1:{port}", f"{socket.getfqdn()}:{port}"]
    return [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]


def exposure_warning(host: str, port: int) -> str | None:
    """What to tell the user when ``host`` reaches beyond this machine (None for loopback)."""
    if is_loopback(host):
        return None
    return (
        f"WARNING: ytqueue local listens on {host or '0.0.0.0'}:{port}, reachable from other machines. It is a "
        "development and test server: one root user, plain HTTP (the token and all data travel unencrypted), no "
        f"ACLs. Every request must carry the token from {TOKEN_ENV}; clients connect with "
        f"YT_PROXY={client_addresses(host, port)[-1]} and YT_TOKEN set to it. Bind 127.0.0.1 unless others must "
        "reach it, and never expose it to an untrusted network."
    )


def serve(
    host: str,
    port: int,
    data_dir: str | Path,
    on_ready: Callable[[str], None] | None = None,
    cluster_name: str = DEFAULT_CLUSTER_NAME,
    max_rows_per_transaction: int | None = None,
    token: str | None = None,
    max_request_bytes: int | None = None,
    idle_timeout: float | None = None,
) -> None:
    """Serve the YTsaurus HTTP API v4 on ``host:port`` from ``data_dir`` until SIGINT/SIGTERM.

    ``port=0`` picks a free port; ``on_ready`` receives the proxy address (``host:port``) once listening.
    ``max_rows_per_transaction`` caps the rows one tablet transaction writes into one tablet (default 100,000).
    ``token``: required from every client (``Authorization: OAuth <token>``, what ``YT_TOKEN`` sends); a ``host``
    beyond loopback needs one (:class:`ExposedServerError` otherwise). ``max_request_bytes``: the largest request
    body after decompression (default 256 MiB); ``idle_timeout``: seconds before a silent connection is closed
    (default 120).
    """
    from spyt_queue.local.http import DEFAULT_IDLE_TIMEOUT_S, DEFAULT_MAX_REQUEST_BYTES, LocalYtHttpServer
    from spyt_queue.local.state import State

    if not token and not is_loopback(host):
        raise ExposedServerError(
            f"--host {host or '0.0.0.0'} reaches beyond this machine, and the server would let anyone on the "
            f"network create and remove tables: set a token in {TOKEN_ENV} (clients then set YT_TOKEN to it), or "
            "bind 127.0.0.1"
        )
    limits = {} if max_rows_per_transaction is None else {"max_rows_per_transaction": max_rows_per_transaction}
    state = State(data_dir, cluster_name=cluster_name, **limits)
    try:
        httpd = LocalYtHttpServer(
            (host, port),
            state,
            token=token or None,
            max_request_bytes=max_request_bytes or DEFAULT_MAX_REQUEST_BYTES,
            idle_timeout=DEFAULT_IDLE_TIMEOUT_S if idle_timeout is None else idle_timeout or None,
        )
    except BaseException:
        state.close()
        raise
    address = client_addresses(host, httpd.server_address[1])[0]
    stop = threading.Event()

    def shutdown(signum: int, frame: object) -> None:
        if not stop.is_set():
            stop.set()
            threading.Thread(target=httpd.shutdown, daemon=True).start()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, shutdown)
    try:
        warning = exposure_warning(host, httpd.server_address[1])
        if warning:  # on stderr whatever the log level: the user must see it
            print(warning, file=sys.stderr, flush=True)
        if on_ready is not None:
            on_ready(address)
        httpd.serve_forever(poll_interval=0.2)
    finally:
        httpd.server_close()
        state.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class LocalYtServer:
    """The local server as a separate process (``python -m spyt_queue.local``) on a data directory (``token``:
    the token every client must send, passed to the process in its environment).

    ``LocalYtServer(data_dir).start()`` waits until ``GET /api/v4`` answers; :attr:`proxy` is the address
    to give ``yt.wrapper.YtClient(proxy=...)``. :meth:`restart` keeps the data directory and the port.
    """

    def __init__(
        self,
        data_dir: str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
        cluster_name: str = DEFAULT_CLUSTER_NAME,
        start_timeout: float = 30.0,
        token: str | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.token = token
        self.host = host
        self.port = port
        self.cluster_name = cluster_name
        self.start_timeout = start_timeout
        self._process: subprocess.Popen[str] | None = None
        self._stderr_path = self.data_dir / "local-yt-server.log"
        self._lines: list[str] = []

    @property
    def proxy(self) -> str:
        """``host:port`` of the running server."""
        if not self.port:
            raise RuntimeError("The local YT server has not been started")
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The server process id while running."""
        return self._process.pid if self._process is not None else None

    def start(self) -> LocalYtServer:
        """Launch the process and wait until it serves requests."""
        if self._process is not None and self._process.poll() is None:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "spyt_queue.local",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
            "--cluster-name",
            self.cluster_name,
        ]
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.pop(TOKEN_ENV, None)
        if self.token:
            env[TOKEN_ENV] = self.token  # the environment, not argv: ps shows argv
        stderr = open(self._stderr_path, "a")
        try:
            self._process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        finally:
            stderr.close()
        ready = threading.Event()
        process = self._process

        def read_stdout() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                self._lines.append(line)
                if line.startswith(READY_PREFIX) and not ready.is_set():
                    address = line[len(READY_PREFIX) :].split()[0]
                    self.port = int(address.rsplit(":", 1)[1])
                    ready.set()

        threading.Thread(target=read_stdout, name="ytqueue-local-stdout", daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        while not ready.wait(0.05):
            if process.poll() is not None:
                raise RuntimeError(
                    f"The local YT server exited with code {process.returncode} before becoming "
                    f"ready:\n{self._stderr_tail()}"
                )
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(
                    f"The local YT server did not start within {self.start_timeout:.0f} s:\n{self._stderr_tail()}"
                )
        while True:
            try:
                with urllib.request.urlopen(f"http://{self.proxy}/api/v4", timeout=2) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            if process.poll() is not None:
                raise RuntimeError(f"The local YT server exited with code {process.returncode}:\n{self._stderr_tail()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"The local YT server does not answer GET /api/v4:\n{self._stderr_tail()}")
            time.sleep(0.05)

    def _stderr_tail(self, limit: int = 4000) -> str:
        try:
            text = self._stderr_path.read_text(errors="replace")
        except OSError:
            return "(no stderr)"
        return text[-limit:]

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, wait, then SIGKILL."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._close(process)

    def kill(self) -> None:
        """SIGKILL (crash simulation): committed data must survive."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.kill()
            process.wait()
        self._close(process)

    def _close(self, process: subprocess.Popen[str]) -> None:
        if process.stdout is not None:
            try:
                process.stdout.close()
            except OSError:
                pass
        self._process = None

    def restart(self) -> LocalYtServer:
        """Stop and start again on the same data directory and port."""
        self.stop()
        return self.start()

    def __enter__(self) -> LocalYtServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LocalYtServer(data_dir={str(self.data_dir)!r}, proxy={self.host}:{self.port})"
