"""How spyt-queue builds ``yt.wrapper`` clients: one place for proxy, token and configuration pass-through."""

from __future__ import annotations

import copy
import os
import threading
import time
from typing import Any

from yt.wrapper import YtClient

from spyt_queue.errors import UnreachableError
from spyt_queue.options import DEFAULT_CONNECT_TIMEOUT_S

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
    from yt.wrapper.http_helpers import get_http_api_commands

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
