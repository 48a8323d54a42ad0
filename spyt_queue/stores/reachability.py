"""Whether the servers of an ``offsets.store`` URI answer, checked at ``load()`` as the YT proxy and the Kafka brokers
are: a wrong host or port fails in one line naming the store, at once when the connection is refused, within
``connect_timeout`` when nothing answers, instead of a client library's timeout and traceback once the query runs.

Only TCP: whether something listens on one of the URI's ``host:port`` endpoints. The store's own client connects
when the query starts (credentials, paths and tables are checked there).
"""

from __future__ import annotations

import importlib
import socket
import time

from spyt_queue.errors import UnreachableError
from spyt_queue.redaction import mask_uri, split_uri
from spyt_queue.stores.registry import SCHEMES, is_native

#: How messages name the server of each store scheme.
SERVERS = {"zookeeper": "ZooKeeper", "hbase": "the HBase Thrift server", "kudu": "the Kudu master"}

#: Seconds between connection attempts while nothing answers (refused connections are not retried).
RETRY_S = 0.5


def endpoints(uri: str, default_port: int) -> list[tuple[str, int]]:
    """The ``(host, port)`` endpoints of ``scheme://[user[:password]@]host[:port][,host[:port]...][/path][?query]``
    (``default_port`` where none is given); empty when the URI names none."""
    parts = split_uri(uri)
    hosts = parts.hosts if parts is not None else ""
    found = []
    for host in filter(None, (h.strip() for h in hosts.split(","))):
        if host.startswith("["):  # [IPv6]:port
            name, _, port = host[1:].partition("]")
            port = port.lstrip(":")
        else:
            name, _, port = host.rpartition(":") if ":" in host else (host, "", "")
        found.append((name, int(port) if port.isdigit() else default_port))
    return found


def check_store_reachable(uri: str, default_port: int, what: str, timeout_s: float) -> None:
    """Raise :class:`UnreachableError` naming the store (its URI masked) unless one endpoint accepts a connection:
    at once when every endpoint refuses, after ``timeout_s`` seconds when none answers."""
    targets = endpoints(uri, default_port)
    deadline = time.monotonic() + timeout_s
    last = ""
    while targets:
        refused = 0
        for host, port in targets:
            remaining = max(0.1, deadline - time.monotonic())
            try:
                with socket.create_connection((host, port), timeout=min(remaining, 5.0)):
                    return
            except ConnectionRefusedError:
                refused += 1
                last = f"connection to {host}:{port} refused"
            except OSError as error:
                last = f"{host}:{port}: {error.strerror or error}"
        if refused == len(targets):
            raise UnreachableError(
                f"offsets.store {mask_uri(uri)}: nothing listens there ({last}): is {what} running on that host "
                "and port?"
            )
        if time.monotonic() >= deadline:
            break
        time.sleep(RETRY_S)
    raise UnreachableError(
        f"offsets.store {mask_uri(uri)}: {what} did not answer within {timeout_s:g} s ({last or 'no host'}); check "
        "the host and port, or raise connect_timeout"
    )


def check_uri_store_reachable(uri: str | None, timeout_s: float) -> None:
    """:func:`check_store_reachable` for the ``offsets.store`` option's URI (nothing for the source's own store)."""
    if is_native(uri):
        return
    assert uri is not None
    scheme = uri.partition("://")[0].lower()
    if scheme not in SCHEMES:
        return  # refused with its own message by the registry's URI check
    port = int(importlib.import_module(SCHEMES[scheme]).DEFAULT_PORT)
    check_store_reachable(uri, port, SERVERS.get(scheme, scheme), timeout_s)
