"""Fixtures of the YT integration tests (queries through Spark against the session's YT server)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.yt.helpers import Pipeline, make_pipeline


@pytest.fixture
def pipe(yt: Any, yt_proxy: str, yt_root: str, checkpoint: str) -> Pipeline:
    """A queue (2 tablets) with a registered consumer, an ordered output table and a checkpoint path."""
    return make_pipeline(yt, yt_proxy, yt_root, checkpoint)
