"""A TCP forwarder on 127.0.0.1 in front of one real server, which a test can make unreachable for a while.

Clients are given the forwarder's address instead of the server's; everything they send and receive passes through
unchanged until the test starts an **outage**: from then on, for the given number of seconds, every open connection
is reset and new connections are refused (the listening socket is closed: ``connect()`` gets ``ECONNREFUSED``, as
from a server that is down) or, with ``mode="reset"``, accepted and reset at once. Afterwards the forwarder listens
on the same port again and clients reconnect as they would to a restarted server. The server itself and its other
clients (the rest of a test session) never notice.

An outage can start at once (:meth:`FaultProxy.outage`) or be **armed** to start when a client sends a given request
(:meth:`FaultProxy.arm`): the forwarder recognises requests of two protocols, YTsaurus HTTP proxies (the command of
``POST /api/v4/<command>``) and Kafka (the API of each request frame), so a test can cut the server off exactly when a
query starts a phase: fetching a queue's bounds (``get_tablet_infos``, Kafka ``ListOffsets``), reading
(``pull_consumer``, ``Fetch``) or committing (``start_transaction`` of the consumer advance, ``OffsetCommit``). The
request that starts the outage is never forwarded.

    with FaultProxy(("127.0.0.1", yt_port), protocol="http") as proxy:
        client = make_yt_client(proxy.address)
        proxy.arm({"get_tablet_infos"}, seconds=5)    # the next bounds fetch finds the proxy gone, for 5 s
        ...
        assert proxy.wait_outage(60)                  # it happened
        proxy.wait_healed(60)

Only the standard library; threads, one pair per connection.
"""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["KAFKA_APIS", "FaultProxy", "Outage", "kafka_request_name"]

#: Kafka API keys by name (the ones a test may want to arm on; the others are named ``api-<key>``).
KAFKA_APIS = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "ApiVersions": 18,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "CreateTopics": 19,
    "DeleteRecords": 21,
    "InitProducerId": 22,
    "DescribeConfigs": 32,
}
_KAFKA_NAMES = {key: name for name, key in KAFKA_APIS.items()}
_HTTP_REQUEST = re.compile(rb"(?:GET|POST|PUT|HEAD|DELETE) /api/v\d+/([A-Za-z_]+)[ ?]")
_CHUNK = 64 * 1024


@dataclass
class Outage:
    """One outage: why it started (``"manual"`` or the request that armed it), for how long, and what it cut off:
    ``scope="server"`` everything, ``scope="requests"`` only requests named in ``requests``."""

    cause: str
    seconds: float
    scope: str = "server"
    requests: frozenset[str] = frozenset()
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None


@dataclass
class _Trigger:
    requests: frozenset[str]
    seconds: float
    skip: int
    mode: str
    scope: str


class _Framer:
    """Splits one connection's client-to-server bytes into segments to forward, each tagged with the name of the
    request it starts (``None`` for the bytes of a request already named)."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self.pending = b""  # a Kafka frame not complete yet

    def feed(self, data: bytes) -> list[tuple[bytes, str | None]]:
        if self.protocol == "kafka":
            return self._kafka(data)
        if self.protocol == "http":
            return self._http(data)
        return [(data, None)]

    def _kafka(self, data: bytes) -> list[tuple[bytes, str | None]]:
        """Whole request frames (``int32 size``, then ``int16 api_key``, ...); a partial frame waits for its rest."""
        buffer = self.pending + data
        out: list[tuple[bytes, str | None]] = []
        while len(buffer) >= 6:
            (size,) = struct.unpack(">i", buffer[:4])
            if len(buffer) < 4 + size:
                break
            frame = buffer[4 : 4 + size]
            out.append((buffer[: 4 + size], kafka_request_name(frame)))
            buffer = buffer[4 + size :]
        self.pending = buffer
        return out

    def _http(self, data: bytes) -> list[tuple[bytes, str | None]]:
        """Cut at every request line of a YT command. HTTP clients write a request's header block in one call, so a
        request line arrives within one read."""
        out: list[tuple[bytes, str | None]] = []
        position = 0
        for match in _HTTP_REQUEST.finditer(data):
            if match.start() > position:
                out.append((data[position : match.start()], None))
            out.append((b"", match.group(1).decode()))  # marks the start; its bytes are the next segment
            position = match.start()
        out.append((data[position:], None))
        return out


def kafka_request_name(frame: bytes) -> str:
    """The API of a Kafka request frame (without its size prefix); a ``ListOffsets`` request is named with the number
    of partitions it asks about, ``ListOffsets/2``: an admin client's bounds of a topic ask for all its partitions at
    once, a consumer's watermarks for one."""
    (key,) = struct.unpack(">h", frame[:2])
    name = _KAFKA_NAMES.get(key, f"api-{key}")
    if key == KAFKA_APIS["ListOffsets"]:
        with contextlib.suppress(IndexError, struct.error, ValueError):
            return f"{name}/{_list_offsets_partitions(frame)}"
    return name


def _list_offsets_partitions(frame: bytes) -> int:
    """Partitions of a ``ListOffsets`` request, versions 1-10 (flexible, with compact arrays, from 6 on)."""
    (version,) = struct.unpack(">h", frame[2:4])
    flexible = version >= 6
    (client_id,) = struct.unpack(">h", frame[8:10])  # request header: key, version, correlation id, client id
    at = 10 + max(client_id, 0)
    if flexible:
        at = _skip_tags(frame, at)
    at += 4 + (1 if version >= 2 else 0)  # replica id, isolation level
    topics, at = _array_length(frame, at, flexible)
    total = 0
    for _ in range(topics):
        if flexible:
            length, at = _uvarint(frame, at)
            at += length - 1
        else:
            (length,) = struct.unpack(">h", frame[at : at + 2])
            at += 2 + length
        partitions, at = _array_length(frame, at, flexible)
        total += partitions
        for _ in range(partitions):
            at += 4 + (4 if version >= 4 else 0) + 8 + (4 if version == 0 else 0)
            if flexible:
                at = _skip_tags(frame, at)
        if flexible:
            at = _skip_tags(frame, at)
    return total


def _uvarint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def _array_length(data: bytes, at: int, flexible: bool) -> tuple[int, int]:
    if flexible:
        length, at = _uvarint(data, at)
        return max(length - 1, 0), at
    (length,) = struct.unpack(">i", data[at : at + 4])
    return max(length, 0), at + 4


def _skip_tags(data: bytes, at: int) -> int:
    count, at = _uvarint(data, at)
    for _ in range(count):
        _tag, at = _uvarint(data, at)
        size, at = _uvarint(data, at)
        at += size
    return at


class FaultProxy:
    """Forwards ``host:port`` (default: a free port of 127.0.0.1) to ``upstream``; see the module docstring.

    ``protocol``: ``"http"`` (YTsaurus HTTP proxies), ``"kafka"`` or ``"raw"`` (no request names: outages can only
    be started by :meth:`outage`). :attr:`requests` counts the requests seen by name, :attr:`outages` lists the
    outages so far.
    """

    def __init__(
        self, upstream: tuple[str, int] | str, protocol: str = "raw", host: str = "127.0.0.1", port: int = 0
    ) -> None:
        if isinstance(upstream, str):
            upstream_host, _, upstream_port = upstream.rpartition(":")
            upstream = (upstream_host or "127.0.0.1", int(upstream_port))
        if protocol not in ("http", "kafka", "raw"):
            raise ValueError(f"protocol must be http, kafka or raw, got {protocol!r}")
        self.upstream = upstream
        self.protocol = protocol
        self.host = host
        self.port = port
        self.requests: Counter[str] = Counter()
        self.outages: list[Outage] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._listener: socket.socket | None = None
        self._connections: set[socket.socket] = set()
        self._trigger: _Trigger | None = None
        self._down: Outage | None = None
        self._mode = "refuse"
        self._stopped = False
        self._acceptor: threading.Thread | None = None
        self._healer: threading.Timer | None = None

    # -- life cycle ------------------------------------------------------------------------------------------
    @property
    def address(self) -> str:
        """``host:port`` for clients."""
        return f"{self.host}:{self.port}"

    def start(self) -> FaultProxy:
        self._listen()
        self._acceptor = threading.Thread(target=self._accept_loop, name=f"fault-proxy-{self.port}", daemon=True)
        self._acceptor.start()
        return self

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._trigger = None
            if self._healer is not None:
                self._healer.cancel()
            self._changed.notify_all()
        self._close_listener()
        self._reset_connections()
        if self._acceptor is not None:
            self._acceptor.join(5)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- faults ----------------------------------------------------------------------------------------------
    def outage(
        self,
        seconds: float,
        mode: str = "refuse",
        scope: str = "server",
        requests: Iterable[str] = (),
        cause: str = "manual",
    ) -> Outage:
        """Make the server unreachable now, for ``seconds``.

        ``scope="server"``: open connections are reset, new ones refused (``mode="refuse"``: the port is closed) or
        accepted and reset at once (``mode="reset"``). ``scope="requests"``: only the requests named in
        ``requests`` fail: a connection that sends one is reset before it is forwarded (a partition leader down
        while the rest of the cluster answers)."""
        if mode not in ("refuse", "reset"):
            raise ValueError(f"mode must be refuse or reset, got {mode!r}")
        if scope not in ("server", "requests"):
            raise ValueError(f"scope must be server or requests, got {scope!r}")
        names = frozenset(requests)
        if scope == "requests" and not names:
            raise ValueError("an outage of scope requests needs request names")
        with self._lock:
            if self._down is not None:
                raise RuntimeError("an outage is already running")
            outage = Outage(cause, seconds, scope, names)
            self._down = outage
            self._mode = mode
            self.outages.append(outage)
            self._healer = threading.Timer(seconds, self.heal)
            self._healer.daemon = True
            self._healer.start()
            self._changed.notify_all()
        if scope == "server":
            if mode == "refuse":
                self._close_listener()
            self._reset_connections()
        return outage

    def arm(
        self, requests: Iterable[str], seconds: float, skip: int = 0, mode: str = "refuse", scope: str = "server"
    ) -> None:
        """Start an outage of ``seconds`` (see :meth:`outage`; with ``scope="requests"`` it cuts off the requests
        named here) when a client sends a request named in ``requests``, after letting ``skip`` of them through.
        That request is not forwarded."""
        names = frozenset(requests)
        if self.protocol == "raw" or not names:
            raise ValueError("arming needs request names and the http or kafka protocol")
        with self._lock:
            self._trigger = _Trigger(names, seconds, skip, mode, scope)

    def disarm(self) -> None:
        """Forget an armed outage that has not started."""
        with self._lock:
            self._trigger = None

    def heal(self) -> None:
        """End the running outage now (it also ends by itself after its seconds)."""
        with self._lock:
            outage, self._down = self._down, None
            if self._healer is not None:
                self._healer.cancel()
                self._healer = None
            if outage is not None:
                outage.ended = time.monotonic()
            relisten = outage is not None and self._listener is None and not self._stopped
        if relisten:
            self._listen()
        with self._lock:
            self._changed.notify_all()

    @property
    def down(self) -> bool:
        """Whether an outage is running."""
        return self._down is not None

    def wait_outage(self, timeout: float, count: int = 1) -> bool:
        """Wait until ``count`` outages have started (armed ones included); whether they did within ``timeout`` s."""
        with self._lock:
            return self._changed.wait_for(lambda: len(self.outages) >= count, timeout)

    def wait_healed(self, timeout: float) -> bool:
        """Wait until no outage is running; whether that was so within ``timeout`` s."""
        with self._lock:
            return self._changed.wait_for(lambda: self._down is None, timeout)

    # -- plumbing --------------------------------------------------------------------------------------------
    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(128)
        listener.settimeout(0.1)
        self.port = listener.getsockname()[1]
        with self._lock:
            self._listener = listener

    def _close_listener(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()

    def _server_down(self) -> bool:
        down = self._down
        return down is not None and down.scope == "server"

    def _accept_loop(self) -> None:
        while not self._stopped:
            listener = self._listener
            if listener is None:
                time.sleep(0.05)
                continue
            try:
                client, _ = listener.accept()
            except OSError:  # the accept timeout, or the socket closed by an outage or stop()
                continue
            if self._server_down():
                _reset(client)
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            _reset(client)
            return
        client.settimeout(None)
        server.settimeout(None)
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            if self._server_down() or self._stopped:
                _reset(client)
                server.close()
                return
            self._connections.update((client, server))
        upward = threading.Thread(target=self._pump_up, args=(client, server), daemon=True)
        upward.start()
        self._pump_down(server, client)
        upward.join()
        with self._lock:
            self._connections.discard(client)
            self._connections.discard(server)
        client.close()
        server.close()

    def _pump_down(self, server: socket.socket, client: socket.socket) -> None:
        """Server to client: bytes as they come."""
        try:
            while True:
                data = server.recv(_CHUNK)
                if not data:
                    break
                client.sendall(data)
        except OSError:
            pass
        _shutdown(client)

    def _pump_up(self, client: socket.socket, server: socket.socket) -> None:
        """Client to server: request by request, each checked against the outages before it is forwarded."""
        framer = _Framer(self.protocol)
        try:
            while True:
                data = client.recv(_CHUNK)
                if not data:
                    break
                for segment, name in framer.feed(data):
                    if name is not None and self._refused(name):
                        _reset(client)
                        _reset(server)
                        return  # the request stays unsent
                    if segment:
                        server.sendall(segment)
        except OSError:
            pass
        _shutdown(server)

    def _refused(self, name: str) -> bool:
        """Count request ``name``; whether it must not pass: it starts the armed outage, or a running outage of
        scope ``requests`` cuts it off."""
        with self._lock:
            self.requests[name] += 1
            down = self._down
            if down is not None:
                return down.scope == "server" or name in down.requests
            trigger = self._trigger
            if trigger is None or name not in trigger.requests:
                return False
            if trigger.skip > 0:
                trigger.skip -= 1
                return False
            self._trigger = None  # one outage per arming, even when two connections send the request at once
        self.outage(trigger.seconds, trigger.mode, trigger.scope, trigger.requests, cause=name)
        return True

    def _reset_connections(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, set()
        for sock in connections:
            _reset(sock)


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset (``SO_LINGER`` 0), as a vanished server's host would answer."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
