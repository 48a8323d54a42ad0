"""Transactional exactly-once with Spark's checkpoint on a real HDFS (a NameNode and a DataNode from Maven Central's
``hadoop-client-minicluster``, the session's ``hdfs`` fixture).

``transactional=true`` commits a micro-batch's rows and the consumer's advance in one tablet transaction; the batch's
range comes from the journal the source keeps on the consumer node, never from the checkpoint. Here the checkpoint
lives only on HDFS (Spark writes it with its own Hadoop client), so a sink that read it from the driver's local disk
would fail or see nothing; the pipeline must still write every kept row exactly once, through a forced replay of its
last batch.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from spyt_queue.yt.admin import column, create_consumer, create_queue
from spyt_queue.yt.batch_journal import PLANS_ATTRIBUTE
from tests.yt.helpers import EVENT_SCHEMA, produce_ids

pytestmark = pytest.mark.spark

OUT_SCHEMA = [column("payload", "string")]  # the README's //home/me/log, which the recipe writes
#: The documentation block this test runs.
RECIPE = ("docs/clusters.md", "Checkpoints on HDFS", "python")


class HdfsCheckpoint:
    """A checkpoint directory on HDFS, read and changed through the Hadoop FileSystem of the Spark driver's JVM."""

    def __init__(self, spark: Any, uri: str) -> None:
        self.uri = uri
        self._jvm = spark._jvm
        self.fs = self._path(uri).getFileSystem(spark._jsc.hadoopConfiguration())

    def _path(self, uri: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(uri)

    def names(self, sub: str) -> list[str]:
        """The entries of ``<checkpoint>/<sub>`` (hidden ``.N.crc`` files and temporaries left out)."""
        return sorted(s.getPath().getName() for s in self.fs.listStatus(self._path(f"{self.uri}/{sub}")))

    def batches(self, sub: str) -> list[int]:
        """The batch ids logged in ``offsets`` or ``commits``."""
        return sorted(int(name) for name in self.names(sub) if name.isdigit())

    def purge_last_commit(self) -> int:
        """Delete the newest ``commits/N`` (and its checksum) so Spark replays batch N, as if the driver had died
        right after the sink committed."""
        last = self.batches("commits")[-1]
        assert self.fs.delete(self._path(f"{self.uri}/commits/{last}"), False)
        self.fs.delete(self._path(f"{self.uri}/commits/.{last}.crc"), False)
        return last


class Pipeline:
    """A queue with 2 tablets and a registered consumer, an ordered output table: ``queue -> filter -> output``."""

    def __init__(self, yt: Any, proxy: str, root: str) -> None:
        self.yt, self.proxy, self.root = yt, proxy, root
        self.queue, self.consumer, self.output = f"{root}/queue", f"{root}/consumer", f"{root}/log"
        create_queue(yt, self.queue, EVENT_SCHEMA, tablet_count=2)
        create_consumer(yt, self.consumer, self.queue)
        create_queue(yt, self.output, OUT_SCHEMA)

    def run(self, spark: Any, checkpoint: str) -> None:
        """One availableNow run of the filter pipeline (every third id): the "Checkpoints on HDFS" block of
        docs/clusters.md as written, its addresses, ``//home/me/`` and checkpoint replaced by this test's."""
        from tests.docs.test_readme_examples import DOCS, page_blocks

        (block,) = [b for b in page_blocks(DOCS / "clusters.md") if b.key == RECIPE]
        code = block.code
        for value, replacement in {
            "localhost:8000": self.proxy,
            "//home/me/": f"{self.root}/",
            "hdfs://namenode:8020/checkpoints/events": checkpoint,
        }.items():
            assert value in code, f"the block at {block.where} no longer names {value}"
            code = code.replace(value, replacement)
        code = code.replace("query.awaitTermination()", "query.awaitTermination(180)")
        scope: dict[str, Any] = {"spark": spark}
        exec(compile(code, block.where, "exec"), scope)  # the documentation's own example, as written
        query = scope["query"]
        if query.isActive:
            query.stop()
            raise AssertionError("the query did not finish within 180 s")
        if query.exception() is not None:
            raise query.exception()

    def ids(self) -> list[int]:
        """The ids of the rows written (payload ``e<id>``, see ``produce_ids``)."""
        return sorted(int(r["payload"][1:]) for r in self.yt.select_rows(f"payload from [{self.output}]"))

    def offsets(self) -> dict[int, int]:
        rows = self.yt.select_rows(f'* from [{self.consumer}] where queue_path = "{self.queue}"')
        return {int(r["partition_index"]): int(r["offset"]) for r in rows}


def test_checkpoint_on_hdfs_every_row_once_through_a_replay(spark, hdfs, yt, yt_proxy, yt_root) -> None:
    """The docs recipe commits its batch with the consumer; that commit is deleted from the HDFS checkpoint, so the
    next run replays the batch (already committed: it writes nothing) before the new rows' batch. Every kept id ends
    up in the output exactly once, the consumer at the tablets' ends, and Spark's logs only on HDFS."""
    pipe = Pipeline(yt, yt_proxy, yt_root)
    name = f"spyt-transactional-{uuid.uuid4().hex[:12]}"
    chk = HdfsCheckpoint(spark, hdfs.uri(f"/chk/{name}"))
    assert chk.fs.getClass().getName() == "org.apache.hadoop.hdfs.DistributedFileSystem"

    ids = produce_ids(yt, pipe.queue, 0, 20)
    pipe.run(spark, chk.uri)
    assert pipe.ids() == [i for i in ids if i % 3 == 0]
    assert pipe.offsets() == {0: 10, 1: 10}
    assert chk.batches("offsets") == [0] and chk.batches("commits") == [0]
    assert yt.exists(f"{pipe.consumer}/@{PLANS_ATTRIBUTE}"), "the source journals the batches on the consumer"

    assert chk.purge_last_commit() == 0
    assert chk.batches("commits") == []
    more = produce_ids(yt, pipe.queue, 20, 10)
    pipe.run(spark, chk.uri)
    assert pipe.ids() == [i for i in ids + more if i % 3 == 0], "no duplicate from the replay, nothing lost"
    assert pipe.offsets() == {0: 15, 1: 15}
    assert chk.batches("offsets") == [0, 1] and chk.batches("commits") == [0, 1]

    # The checkpoint is on HDFS, seen by the NameNode itself (WebHDFS), and nowhere on the local filesystem.
    listed = {s["pathSuffix"]: s["type"] for s in hdfs.list_status(f"/chk/{name}")}
    assert {"offsets", "commits", "metadata"} <= set(listed) and listed["offsets"] == "DIRECTORY"
    assert {"0", "1"} <= {s["pathSuffix"] for s in hdfs.list_status(f"/chk/{name}/commits")}
    assert not Path(f"/chk/{name}").exists() and not (Path.cwd() / "hdfs:").exists()
