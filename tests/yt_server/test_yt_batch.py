"""Conformance: ``execute_batch``.

Sources: ``yt/yt/client/driver/etc_commands.cpp`` (``TExecuteBatchCommand``: ``requests`` of ``{command,
parameters, input}``, ``concurrency`` default 50; each answer is ``{output}`` or ``{error}``; a part whose command
has tabular output "cannot be part of a batch"), ``yt/python/yt/wrapper/batch_execution.py`` (v4 answers
``{"results": [...]}``).
"""

from __future__ import annotations

from conformance import (
    CONSUMER_OFFSET_CONFLICT,
    consumer_offsets,
    create_consumer,
    create_queue,
    register_consumer,
)


def test_parts_answer_output_or_error_independently(yt, yt_root) -> None:
    answer = yt.execute_batch(
        requests=[
            {"command": "get", "parameters": {"path": f"{yt_root}/@type"}},
            {"command": "get", "parameters": {"path": f"{yt_root}/missing"}},
            {"command": "select_rows", "parameters": {"query": f"* from [{yt_root}/missing]"}},
            {"command": "set", "parameters": {"path": f"{yt_root}/@batch_attr"}, "input": 7},
        ]
    )
    results = answer["results"]
    assert results[0]["output"]["value"] == "map_node"
    assert results[1]["error"]["code"] == 500
    assert "cannot be part of a batch" in results[2]["error"]["message"]
    assert "error" not in results[3]
    assert yt.get(f"{yt_root}/@batch_attr") == 7


def test_advances_of_a_tablet_transaction_in_one_batch(yt, yt_root) -> None:
    queue = create_queue(yt, f"{yt_root}/q", tablet_count=3)
    consumer = create_consumer(yt, f"{yt_root}/c")
    register_consumer(yt, queue, consumer)

    class Refused(Exception):
        pass

    def advance(old: int, new: int) -> list[dict]:
        try:
            return _advance(old, new)
        except Refused as refused:
            return refused.args[0]

    def _advance(old: int, new: int) -> list[dict]:
        with yt.Transaction(type="tablet") as tx:
            requests = [
                {
                    "command": "advance_consumer",
                    "parameters": {
                        "consumer_path": consumer,
                        "queue_path": queue,
                        "partition_index": i,
                        "old_offset": old,
                        "new_offset": new,
                        "transaction_id": tx.transaction_id,
                    },
                }
                for i in range(3)
            ]
            results = yt.execute_batch(requests=requests)["results"]
            if any("error" in r for r in results):
                raise Refused(results)  # leaving the block aborts the transaction
            return results

    assert all("error" not in r for r in advance(0, 4))
    assert consumer_offsets(yt, consumer, queue) == {0: 4, 1: 4, 2: 4}
    stale = advance(0, 9)
    assert [r["error"]["code"] for r in stale] == [CONSUMER_OFFSET_CONFLICT] * 3
    assert consumer_offsets(yt, consumer, queue) == {0: 4, 1: 4, 2: 4}
