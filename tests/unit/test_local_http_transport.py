"""The local server's HTTP transport: socket options of accepted connections."""

from __future__ import annotations

import socket
import threading
import urllib.request
from pathlib import Path

from spyt_queue.local.http import Handler, LocalYtHttpServer
from spyt_queue.local.state import State


def test_connections_disable_nagle_so_responses_are_not_held_for_a_delayed_ack(tmp_path: Path) -> None:
    """Headers and body go out in two writes; with Nagle's algorithm on, the body waited for the client's delayed
    ACK (~40 ms per request on loopback), which capped pulls at ~25 requests per second and connection."""
    seen: list[int] = []

    class Recording(Handler):
        def setup(self) -> None:
            super().setup()
            seen.append(self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    state = State(tmp_path / "yt")
    server = LocalYtHttpServer(("127.0.0.1", 0), state)
    server.RequestHandlerClass = Recording
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/api/v4", timeout=30) as response:
            assert response.status == 200
    finally:
        server.shutdown()
        server.server_close()
        state.close()
        thread.join(timeout=30)
    assert seen and all(seen), f"TCP_NODELAY on accepted connections: {seen}"
