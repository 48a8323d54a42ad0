"""How spyt-queue reaches YTsaurus: ``yt.wrapper`` clients (process-wide and per thread), the connection settings
that travel to executors, and the reachability check. The one place where YT clients are made."""

from __future__ import annotations

import contextlib
import copy
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from yt.packages.requests import Session
from yt.wrapper import YtClient
from yt.wrapper.http_helpers import get_http_api_commands

from spyt_queue.errors import UnreachableError
from spyt_queue.options import DEFAULT_CONNECT_TIMEOUT_S
from spyt_queue.redaction import REDACTED, redact_mapping

_REACHED: set[str] = set()  # proxies this process already reached: checked once per process
_REACHED_LOCK = threading.Lock()


def make_yt_client(
    proxy: str | None = None,
    token: str | None = None,
    config: dict[str, Any] | None = None,
) -> YtClient:
    """Return a ``YtClient`` for ``proxy`` (default: ``YT_PROXY``) with ``token`` (default: ``YT_TOKEN``).

    ``config`` entries are merged over the client defaults, exactly as ``yt.wrapper`` accepts them
    (for example ``{"proxy": {"request_timeout": 30000}}``).
    """
    proxy = proxy or os.environ.get("YT_PROXY")
    if not proxy:
        raise ValueError(
            "No YTsaurus proxy given: set the 'proxy' option (or the YT_PROXY environment variable) "
            "to a proxy address such as 'localhost:8000'"
        )
    merged: dict[str, Any] = {"pickling": {"enable_modules_compatibility_filter": False}}
    if config:
        merged.update(config)
    return YtClient(proxy=proxy, token=token or os.environ.get("YT_TOKEN"), config=merged)


def _fail_fast_config(config: dict[str, Any] | None, attempt_timeout_ms: int) -> dict[str, Any]:
    """``config`` with ``yt.wrapper``'s own retries off and one attempt bounded by ``attempt_timeout_ms``."""
    merged = copy.deepcopy(config or {})
    proxy = merged.setdefault("proxy", {})
    proxy["retries"] = {**proxy.get("retries", {}), "enable": False}
    proxy["connect_timeout"] = attempt_timeout_ms
    proxy["request_timeout"] = attempt_timeout_ms
    return merged


def check_proxy_reachable(
    proxy: str,
    config: dict[str, Any] | None = None,
    timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    option: str = "proxy",
) -> None:
    """Fail within about ``timeout_s`` seconds, naming ``proxy``, unless it answers as a YTsaurus HTTP proxy.

    ``yt.wrapper`` retries an unreachable proxy for two minutes by default; this asks for the proxy's command
    list (``GET /api/v4``, no token needed) with its retries off, again every second or two until ``timeout_s``
    has passed (a proxy that is just starting is waited for), and raises :class:`UnreachableError` in one line.
    A proxy reached once is not checked again in this process.
    """
    if proxy in _REACHED:
        return
    deadline = time.monotonic() + timeout_s
    delay = 0.5
    while True:
        remaining = deadline - time.monotonic()
        attempt_ms = int(max(0.5, min(remaining, 5.0)) * 1000)
        client = make_yt_client(proxy, config=_fail_fast_config(config, attempt_ms))
        try:
            get_http_api_commands(client=client)
        except Exception as error:  # connection refused, unknown host, timeout, not a YT proxy
            last = _short(error)
        else:
            with _REACHED_LOCK:
                _REACHED.add(proxy)
            return
        if time.monotonic() + delay >= deadline:
            raise UnreachableError(
                f"YTsaurus proxy {proxy} did not answer within {timeout_s:g} s ({last}): check the '{option}' "
                "option or YT_PROXY (for the embedded server, the address 'ytqueue local' prints); "
                "connect_timeout sets the wait"
            )
        time.sleep(delay)
        delay = min(delay * 2, 2.0)


def _short(error: BaseException) -> str:
    """The gist of a connection error in a few words (urllib3's messages repeat the whole URL and object)."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    for marker in ("Failed to establish a new connection: ", "Caused by ", "] "):
        if marker in text:
            text = text.split(marker, 1)[1]
    text = text.rstrip(")'\"")
    if "not be decoded from JSON" in text:
        return "the answer is not a YTsaurus HTTP proxy's"
    return text[:200]


_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()
_THREAD = threading.local()


def _key(proxy: str, token: str | None, config: Mapping[str, Any]) -> tuple[Any, ...]:
    return (proxy, token, repr(sorted(config.items())))


def cached_client(proxy: str, token: str | None, config: Mapping[str, Any]) -> YtClient:
    """One ``YtClient`` per process and connection settings (Python workers are reused across tasks)."""
    key = _key(proxy, token, config)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = make_yt_client(proxy, token, dict(config))
            _CLIENTS[key] = client
        return client


@dataclass
class YtConnection:
    """How to reach a cluster: proxy, token and extra ``yt.wrapper`` configuration (picklable; clients are not).

    ``repr()`` and ``str()`` never show the token: ``token`` and ``config`` (which may hold one, from ``yt.token``)
    are left out of generated ``repr()`` s, subclasses' included, and :meth:`__repr__` shows the configuration with
    the values of keys Spark redacts (``token``, ``*password*``, ``*secret*``) masked."""

    proxy: str
    token: str | None = field(default=None, repr=False)
    config: dict[str, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        token = "" if self.token is None else f", token={REDACTED!r}"
        config = f", config={redact_mapping(self.config)!r}" if self.config else ""
        return f"{type(self).__name__}(proxy={self.proxy!r}{token}{config})"

    def client(self) -> YtClient:
        """The process-wide cached client for this connection."""
        return cached_client(self.proxy, self.token, self.config)

    def push_client(self) -> YtClient:
        """The process-wide cached client for ``push_queue_producer``: it sends request bodies uncompressed.

        ``yt.wrapper`` sends that command's rows through a gzip generator (it forces a tabular input on a command
        the driver declares without one, YT-23538) and, the command not being heavy, retries it at the HTTP level
        with the same generator: after a dropped connection the retry carries an empty body, which the proxy takes
        as zero rows and acknowledges. With ``content_encoding=identity`` the body stays bytes and a retry sends all
        of it again (the session's sequence numbers make that retry exactly-once)."""
        proxy = {**dict(self.config.get("proxy") or {}), "content_encoding": "identity"}
        return cached_client(self.proxy, self.token, {**self.config, "proxy": proxy})

    def thread_client(self) -> YtClient:
        """A client used by this thread only, for tablet transactions: ``yt.wrapper`` keeps the current transaction
        in the client object, so a transaction on the process-wide client would be joined by other threads' calls
        (failing them with "No such transaction" or nesting them)."""
        clients: dict[tuple[Any, ...], Any] = _THREAD.__dict__.setdefault("clients", {})
        key = _key(self.proxy, self.token, self.config)
        if key not in clients:
            clients[key] = make_yt_client(self.proxy, self.token, dict(self.config))
        return clients[key]


@contextlib.contextmanager
def counting_requests() -> Iterator[Counter[str]]:
    """Count the HTTP requests ``yt.wrapper`` sends in this process while the block runs, by command name (a
    diagnostic for round trips: benchmarks and tests use it; not thread-safe against other patchers)."""
    counts: Counter[str] = Counter()
    original = Session.send

    def send(self: Any, request: Any, **kwargs: Any) -> Any:
        counts[request.path_url.split("?", 1)[0].rsplit("/", 1)[-1]] += 1
        return original(self, request, **kwargs)

    Session.send = send  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        Session.send = original  # type: ignore[method-assign]
