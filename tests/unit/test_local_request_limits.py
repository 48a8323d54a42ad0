"""The embedded server's request limits (issue 31, item 6): a decompressed body over ``max_request_bytes`` gets a
YTsaurus error (JSON body and ``X-YT-Error``) without being inflated whole, an oversized ``Content-Length`` is refused
unread, and a silent connection is closed after ``idle_timeout``."""

from __future__ import annotations

import http.client
import json
import resource
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from spyt_queue.local.http import DEFAULT_MAX_REQUEST_BYTES, LocalYtHttpServer
from spyt_queue.local.state import State

MIB = 1024 * 1024


@contextmanager
def running(tmp_path: Path, **limits: object) -> Iterator[int]:
    """A server on 127.0.0.1 with ``limits``, serving in a thread; its port."""
    state = State(tmp_path / "yt")
    server = LocalYtHttpServer(("127.0.0.1", 0), state, **limits)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        state.close()
        thread.join(timeout=30)


def gzip_of_zeros(size: int) -> bytes:
    """A gzip body that inflates to ``size`` zero bytes (compressed in 1 MiB steps: little memory here)."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MIB)
    parts = [deflater.compress(zeros) for _ in range(size // MIB)]
    return b"".join(parts) + deflater.flush()


def post(port: int, body: bytes, headers: dict[str, str]) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("PUT", "/api/v4/write_table", body=body, headers=headers)
    return connection.getresponse()


def test_a_gzip_body_inflating_past_the_limit_is_refused_without_inflating_it(tmp_path: Path) -> None:
    """1 GiB of zeros in a ~1 MiB gzip body, against the default limit (256 MiB): a YT error naming the limit, and
    the process's peak memory grows by far less than the inflated size (it grew by about 2 GiB before)."""
    body = gzip_of_zeros(1024 * MIB)
    assert len(body) < 2 * MIB, len(body)
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with running(tmp_path) as port:
        started = time.monotonic()
        response = post(
            port,
            body,
            {
                "Content-Encoding": "gzip",
                "X-YT-Parameters": json.dumps({"path": "//tmp/t"}),
                "X-YT-Header-Format": "json",
                "X-YT-Input-Format": "json",
            },
        )
        payload = response.read()
        elapsed = time.monotonic() - started
    peak_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - peak_before
    assert response.status == 400, (response.status, payload)
    error = json.loads(payload)
    assert json.loads(response.getheader("X-YT-Error")) == error
    assert "Request body is too large" in error["message"] and str(DEFAULT_MAX_REQUEST_BYTES) in error["message"]
    assert error["attributes"]["max_request_bytes"] == DEFAULT_MAX_REQUEST_BYTES
    assert peak_growth < DEFAULT_MAX_REQUEST_BYTES + 256 * MIB, f"peak memory grew by {peak_growth // MIB} MiB"
    assert elapsed < 60


def test_an_oversized_content_length_is_refused_unread(tmp_path: Path) -> None:
    """A ``Content-Length`` over the limit is answered at once (the body is not read) and the connection closed."""
    with running(tmp_path, max_request_bytes=1024) as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            b"PUT /api/v4/write_table HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n"
            b'X-YT-Parameters: {"path": "//tmp/t"}\r\n\r\n' + b"x" * 2048
        )
        sock.settimeout(10)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, payload = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), received[:300]
    assert b"Connection: close" in head
    assert "Content-Length 1000000 exceeds" in json.loads(payload)["message"]


def test_a_silent_connection_is_closed_after_the_idle_timeout(tmp_path: Path) -> None:
    """A client that connects and sends nothing (or stops mid-request) is disconnected after ``idle_timeout``."""
    with running(tmp_path, idle_timeout=0.5) as port:
        for opening in (b"", b"GET /api/v4 HTTP/1.1\r\nHost: x\r\n"):
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(opening)
                sock.settimeout(10)
                started = time.monotonic()
                assert sock.recv(1024) == b""
                assert time.monotonic() - started < 5
        # and a request in time is still served
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/api/v4")
        assert connection.getresponse().status == 200
