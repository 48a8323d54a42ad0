"""Committing to a YT consumer through the real client: transient failures retried, then made visible."""

from __future__ import annotations

import logging

import pytest

from spyt_queue.committer import Committer
from spyt_queue.errors import CommitError
from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.backend import YtConnection, YtQueueBackend


def test_transient_failures_are_retried_logged_and_surface_as_commit_error(yt, yt_proxy, yt_root, caplog) -> None:
    queue, consumer = f"{yt_root}/q", f"{yt_root}/c"
    create_queue(yt, queue, [column("id", "int64")], tablet_count=1)
    create_consumer(yt, consumer, queue)
    yt.insert_rows(queue, [{"id": i} for i in range(5)])
    backend = YtQueueBackend(
        YtConnection(yt_proxy, config={"dynamic_table_retries": {"enable": False}}), queue, consumer
    )
    committer = Committer(backend.default_store(), retries=2, backoff_seconds=0.05)
    committer.advance_to({"0": 2})
    yt.unmount_table(consumer, sync=True)  # every advance now fails with "tablet not mounted" (1702)
    with caplog.at_level(logging.WARNING, logger="spyt_queue.commit"), pytest.raises(CommitError, match="3 attempt"):
        committer.advance_to({"0": 5})
    assert caplog.text.count("retrying") == 2
    yt.mount_table(consumer, sync=True)
    assert committer.advance_to({"0": 5}) is True  # progress was kept and is committed once YT is back
    assert backend.default_store().committed() == {"0": 5}


def test_an_advance_applied_despite_a_failure_is_not_mistaken_for_a_conflict(yt, yt_proxy, yt_root) -> None:
    """A timed-out advance may have been applied: the next attempt re-reads the position instead of failing."""
    queue, consumer = f"{yt_root}/q", f"{yt_root}/c"
    create_queue(yt, queue, [column("id", "int64")], tablet_count=1)
    create_consumer(yt, consumer, queue)
    backend = YtQueueBackend(
        YtConnection(yt_proxy, config={"dynamic_table_retries": {"enable": False}}), queue, consumer
    )
    committer = Committer(backend.default_store(), retries=0, backoff_seconds=0.01)
    committer.advance_to({"0": 2})
    yt.unmount_table(consumer, sync=True)
    with pytest.raises(CommitError):
        committer.advance_to({"0": 5})
    yt.mount_table(consumer, sync=True)
    yt.advance_consumer(consumer, queue, partition_index=0, old_offset=2, new_offset=5)  # "the lost response"
    assert committer.advance_to({"0": 5}) is False
    assert committer.advance_to({"0": 7}) is True
    assert backend.default_store().committed() == {"0": 7}
