"""Which endpoints ``ytqueue`` probes for a connect string, and the one line it prints when none answers."""

from __future__ import annotations

import socket

import pytest

from spyt_queue.cli import CliError, check_endpoints, endpoints_of


@pytest.mark.parametrize(
    ("kind", "servers", "expected"),
    [
        ("kafka", "PLAINTEXT://b1:9093,b2", ["b1:9093", "b2:9092"]),
        ("zookeeper", "alice@zk1,zk2:2182", ["zk1:2181", "zk2:2182"]),
        ("kudu", "m1:7051, m2", ["m1:7051", "m2:7051"]),
        ("hbase", "thrift-host", ["thrift-host:9090"]),
        ("kafka", "", []),
    ],
)
def test_endpoints_of_a_connect_string_take_the_default_port(kind: str, servers: str, expected: list[str]) -> None:
    assert endpoints_of(kind, servers) == expected


def test_one_endpoint_that_answers_is_enough_and_none_is_one_line_naming_them_all() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = closed.getsockname()[1]
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        alive = listening.getsockname()[1]
        check_endpoints("zookeeper", f"127.0.0.1:{dead},127.0.0.1:{alive}", "--store", timeout_s=5)
    with pytest.raises(CliError) as raised:
        check_endpoints("zookeeper", f"127.0.0.1:{dead},127.0.0.1:{alive}", "--store", timeout_s=5)
    message = str(raised.value)
    assert message.startswith(f"cannot reach ZooKeeper at 127.0.0.1:{dead}, 127.0.0.1:{alive} (Connection refused)")
    assert message.endswith("check --store") and "\n" not in message
