"""Fixtures of the YTsaurus conformance suite.

The suite talks to the cluster only through ``yt.wrapper``; by default that is the embedded local server
(``local_yt`` in ``tests/conftest.py``), with ``YT_PROXY`` set it is a real cluster.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conformance import configure_client, create_queue
from yt.wrapper.errors import YtResponseError


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


@pytest.fixture
def queue(yt, yt_root: str) -> str:
    """A mounted one-tablet queue ``<yt_root>/q`` with the default ``data: string`` schema."""
    return create_queue(yt, f"{yt_root}/q")


def error_codes(error: dict[str, Any]) -> set[int]:
    """Every code of a YT error and of its inner errors, at any depth."""
    codes, stack = set(), [error]
    while stack:
        item = stack.pop()
        codes.add(int(item.get("code", 0)))
        stack.extend(item.get("inner_errors") or [])
    return codes


@pytest.fixture
def yt_error() -> Callable[[int], contextlib.AbstractContextManager[pytest.ExceptionInfo[YtResponseError]]]:
    """``with yt_error(code) as failure: ...``: the block must raise a ``YtResponseError`` whose error (or one of
    its inner errors) has ``code``; ``failure.value`` is the error, for further checks after the block."""

    @contextlib.contextmanager
    def expect(code: int) -> Iterator[pytest.ExceptionInfo[YtResponseError]]:
        with pytest.raises(YtResponseError) as failure:
            yield failure
        assert code in error_codes(failure.value.error), failure.value

    return expect
