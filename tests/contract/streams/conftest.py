"""Fixtures of the stream contract suites: the parametrisation of the outage scenarios, and the Kafka broker the
Kafka outage scenarios cut off."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from integration.fault_proxy import FaultProxy
from tests.conftest import require_or_skip


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """An outage scenario runs once per :class:`~tests.contract.streams.outages.Case` its class lists for it."""
    cases = getattr(metafunc.cls, "OUTAGE_CASES", None)
    if cases is None or "case" not in metafunc.fixturenames:
        return
    chosen = [case for case in cases if case.test == metafunc.function.__name__]
    assert chosen, f"{metafunc.cls.__name__}.OUTAGE_CASES has no case for {metafunc.function.__name__}"
    metafunc.parametrize("case", chosen, ids=[case.id for case in chosen])


@dataclass
class BrokerBehindProxy:
    """A broker whose clients reach it through :attr:`proxy` (its advertised listener is the proxy's port), and
    that test helpers reach directly at :attr:`direct` (a second listener advertising itself)."""

    proxy: FaultProxy
    direct: str


@pytest.fixture(scope="session")
def kafka_behind_proxy() -> Iterator[BrokerBehindProxy]:
    """A second single-node Kafka broker for the session, for the outage scenarios only: clients bootstrapping at
    ``proxy.address`` are told the broker lives there, so all their traffic passes the :class:`FaultProxy`; the
    session's shared broker is never cut off. Started on first use (about 10 s)."""
    from integration.java_server import free_ports
    from integration.kafka_broker import KafkaBroker, missing_requirements

    require_or_skip(missing_requirements())
    host = "127.0.0.1"
    port, controller, direct, front = free_ports(4, host)
    proxy = FaultProxy((host, port), protocol="kafka", port=front).start()
    config = {
        "listeners": f"PLAINTEXT://{host}:{port},DIRECT://{host}:{direct},CONTROLLER://{host}:{controller}",
        "advertised.listeners": f"PLAINTEXT://{host}:{front},DIRECT://{host}:{direct}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,DIRECT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    }
    broker = KafkaBroker(port, controller, config=config)
    try:
        broker.start()
        yield BrokerBehindProxy(proxy, f"{host}:{direct}")
    finally:
        try:
            broker.stop()
        finally:
            proxy.stop()
