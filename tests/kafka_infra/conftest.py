"""Fixtures for tests against a real Apache Kafka broker (integration/kafka_broker.py).

``kafka_broker_fixture`` holds the whole fixture body as a plain generator, so that it can move to the
top-level ``tests/conftest.py`` unchanged: there, define

    @pytest.fixture(scope="session")
    def kafka_broker():
        yield from kafka_broker_fixture()

The broker is skipped (not failed) when Java 17+ or the jars are missing, with a reason that says to run
``integration/install.sh``; set ``SPYT_REQUIRE_KAFKA=1`` (e.g. in CI) to fail instead of skipping.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `integration` is a top-level package of the repo, not installed
    sys.path.insert(0, str(REPO_ROOT))

from integration.kafka_broker import KafkaBroker, missing_requirements  # noqa: E402


def kafka_broker_fixture(**broker_kwargs: object) -> Iterator[KafkaBroker]:
    """Start one broker, yield it, stop it. Skips the test(s) when the machine lacks Java or the jars."""
    reason = missing_requirements()
    if reason:
        if os.environ.get("SPYT_REQUIRE_KAFKA", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"SPYT_REQUIRE_KAFKA is set but: {reason}", pytrace=False)
        pytest.skip(reason)
    broker = KafkaBroker(**broker_kwargs)  # type: ignore[arg-type]
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """One real single-node Kafka (KRaft) on 127.0.0.1 for the whole test session."""
    yield from kafka_broker_fixture()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_broker: KafkaBroker) -> str:
    """``bootstrap.servers`` of the session broker, e.g. ``"127.0.0.1:40123"``."""
    return kafka_broker.bootstrap_servers


@pytest.fixture
def kafka_topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name unique to one test (the session broker is shared, so never reuse names)."""
    base = "".join(c if c.isalnum() or c in "-_." else "_" for c in request.node.name)[:80]
    return f"{base}-{uuid.uuid4().hex[:8]}"
