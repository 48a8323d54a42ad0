"""Fixtures of the Kafka tests; the session broker itself (``kafka_broker``, ``kafka_bootstrap``) lives in
``tests/conftest.py`` and is shared with every other folder that talks to Kafka."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def kafka_topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name unique to one test (the session broker is shared, so never reuse names)."""
    base = "".join(c if c.isalnum() or c in "-_." else "_" for c in request.node.name)[:80]
    return f"{base}-{uuid.uuid4().hex[:8]}"
