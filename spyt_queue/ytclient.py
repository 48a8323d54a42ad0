"""How spyt-queue builds ``yt.wrapper`` clients: one place for proxy, token and configuration pass-through."""

from __future__ import annotations

import os
from typing import Any

from yt.wrapper import YtClient


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
