"""Helpers for the HBase tests."""

from __future__ import annotations

import os
import socket


def close_from_the_gateway_side(sock: socket.socket) -> None:
    """Make ``sock`` (a client's connection to a Thrift gateway) what it becomes when the gateway closes a connection
    idle longer than ``hbase.thrift.server.socket.read.timeout`` (60 s by default): its peer has closed it, so the
    next call reads end-of-file. The file descriptor is replaced in place (``dup2``) by a real TCP connection whose
    server end is closed, so every layer of the client keeps its objects, as in the real case."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        dead = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        accepted.close()
    os.dup2(dead.fileno(), sock.fileno())
    dead.close()
