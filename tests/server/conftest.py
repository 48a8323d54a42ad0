"""Fixtures of the YTsaurus conformance suite.

The suite talks to the cluster only through ``yt.wrapper``; by default that is the embedded local server
(``local_yt`` in ``tests/conftest.py``), with ``YT_PROXY`` set it is a real cluster.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from conformance import configure_client


def make_client(proxy: str):
    """A ``yt.wrapper.YtClient`` built the way the project builds them (as ``tests/conftest.py`` does)."""
    from spyt_queue.yt.client import make_yt_client

    return make_yt_client(proxy, token=os.environ.get("YT_TOKEN"))


@pytest.fixture
def yt(yt):
    """The parent ``yt`` client, configured to fail fast (no dynamic-table retries)."""
    return configure_client(yt)


@pytest.fixture
def make_yt(yt_proxy: str) -> Callable[[], object]:
    """A factory of further independent clients (another "process" view of the cluster)."""

    def factory():
        return configure_client(make_client(yt_proxy))

    return factory


@pytest.fixture
def yt2(make_yt):
    """A second, independent client: sees only committed data of other clients' transactions."""
    return make_yt()
