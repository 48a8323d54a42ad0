"""The YT consumer store's commit costs the same number of HTTP round trips whatever the partition count."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from spyt_queue.errors import ConsumerConflictError
from spyt_queue.stores.yt_consumer import YtConsumerStore
from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.client import YtConnection


@pytest.fixture
def commands() -> Iterator[Counter[str]]:
    """The commands of the HTTP requests ``yt.wrapper`` sends while the test runs."""
    from yt.packages.requests import Session

    counts: Counter[str] = Counter()
    original = Session.send

    def send(self, request, **kwargs):  # type: ignore[no-untyped-def]
        counts[request.path_url.split("?", 1)[0].rsplit("/", 1)[-1]] += 1
        return original(self, request, **kwargs)

    Session.send = send  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        Session.send = original  # type: ignore[method-assign]


def test_advance_of_64_partitions_is_one_request_and_still_compare_and_set(yt, yt_proxy, yt_root, commands) -> None:
    queue, consumer = f"{yt_root}/queue", f"{yt_root}/consumer"
    create_queue(yt, queue, [column("id", "int64")], tablet_count=64)
    create_consumer(yt, consumer, queue)
    store = YtConsumerStore(YtConnection(yt_proxy), queue, consumer)
    keys = [str(i) for i in range(64)]
    store.advance({}, {key: 1 for key in keys})  # warm-up: client, connection
    commands.clear()

    store.advance({key: 1 for key in keys}, {key: 2 + int(key) for key in keys})

    advances = commands["advance_consumer"] + commands["execute_batch"]
    assert advances == 1, f"one request carries every partition's advance, got {dict(commands)}"
    assert store.committed() == {key: 2 + int(key) for key in keys}
    stale = {key: 1 for key in keys}
    with pytest.raises(ConsumerConflictError):  # each part is still a compare-and-set: nothing moves
        store.advance(stale, {key: 100 for key in keys})
    assert store.committed() == {key: 2 + int(key) for key in keys}
