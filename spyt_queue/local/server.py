"""Running the local server: :func:`serve` in the foreground, :class:`LocalYtServer` as a child process."""

from __future__ import annotations

import os
import signal
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


def serve(
    host: str,
    port: int,
    data_dir: str | Path,
    on_ready: Callable[[str], None] | None = None,
    cluster_name: str = DEFAULT_CLUSTER_NAME,
    max_rows_per_transaction: int | None = None,
) -> None:
    """Serve the YTsaurus HTTP API v4 on ``host:port`` from ``data_dir`` until SIGINT/SIGTERM.

    ``port=0`` picks a free port; ``on_ready`` receives the proxy address (``host:port``) once listening.
    ``max_rows_per_transaction`` caps the rows one tablet transaction writes into one tablet (default 100,000).
    """
    from spyt_queue.local.http import LocalYtHttpServer
    from spyt_queue.local.state import State

    limits = {} if max_rows_per_transaction is None else {"max_rows_per_transaction": max_rows_per_transaction}
    state = State(data_dir, cluster_name=cluster_name, **limits)
    httpd = LocalYtHttpServer((host, port), state)
    address = f"{host}:{httpd.server_address[1]}"
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
        if on_ready is not None:
            on_ready(address)
        httpd.serve_forever(poll_interval=0.2)
    finally:
        httpd.server_close()
        state.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class LocalYtServer:
    """The local server as a separate process (``python -m spyt_queue.local``) on a data directory.

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
    ) -> None:
        self.data_dir = Path(data_dir)
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
