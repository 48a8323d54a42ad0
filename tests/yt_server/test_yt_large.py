"""Conformance (LOCAL ONLY, slow): a large queue is readable in bounded chunks.

Pulls are capped (1000 rows by default, ``queue_rowset.h``) and ``select_rows`` row ranges touch only
the requested range, so a consumer can walk a large partition chunk by chunk. Meant for the embedded
server (a real cluster is not the subject here, and 200k rows there would be slow to set up).
"""

from __future__ import annotations

import pytest
from conformance import create_queue, pull, select, tablet_infos

TOTAL = 200_000
CHUNK = 20_000


@pytest.mark.slow
def test_large_queue_pull_and_select_in_chunks(yt, yt_root, local_yt):
    """Insert 200k rows in chunks; walk the partition with default-sized pulls (1000 rows each, contiguous
    ``$row_index``) and check a few ``select_rows`` row ranges."""
    path = create_queue(yt, f"{yt_root}/big")
    for start in range(0, TOTAL, CHUNK):
        yt.insert_rows(path, [{"data": f"{i:07d}"} for i in range(start, start + CHUNK)])
    assert tablet_infos(yt, path, 1)[0]["total_row_count"] == TOTAL

    offset = 0
    while offset < TOTAL:
        rows = pull(yt, path, offset=offset)
        assert len(rows) == min(1000, TOTAL - offset)
        assert rows[0]["$row_index"] == offset
        assert rows[-1]["data"] == f"{offset + len(rows) - 1:07d}"
        offset += len(rows)
    assert pull(yt, path, offset=TOTAL) == []

    for start in (0, 123_456, TOTAL - 10):
        rows = select(yt, f"* from [{path}] where [$tablet_index] = 0 and [$row_index] between {start} and {start + 9}")
        assert [r["$row_index"] for r in rows] == list(range(start, min(start + 10, TOTAL)))
