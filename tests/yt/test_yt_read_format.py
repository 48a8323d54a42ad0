"""``read_format`` through Spark: a queue of tricky strings, doubles and NULLs reads the same with ``dsv`` (columnar
``schemaful_dsv`` pulls) as with ``yson``, in batch and streaming queries; ``dsv`` is refused for a queue it cannot
carry."""

from __future__ import annotations

import random
from typing import Any

import pytest

from spyt_queue.yt.admin import column, create_consumer, create_queue

pytestmark = pytest.mark.spark

SCHEMA = [
    column("id", "int64", required=True),
    column("s", "string"),
    column("d", "double"),
    column("t", "timestamp"),
    column("flag", "boolean"),
    column("n", "int32"),
]
PIECES = ["\t", "\n", "\\", "\\\\", "\x00", "\\N", "N", "t", "n", "é", " ", "\\t"]


def tricky_rows(rng: random.Random, count: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i in range(count):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 10)))
        rows.append(
            {
                "$tablet_index": i % 2,
                "id": i,
                "s": rng.choice([text, text, text, None, "\\N", ""]),
                "d": rng.choice([None, -0.0, 0.1, 1e300, 5e-324, rng.uniform(-1e9, 1e9)]),
                "t": rng.choice([None, 0, rng.randint(0, 2**50)]),
                "flag": rng.choice([None, True, False]),
                "n": rng.choice([None, -(2**31), 2**31 - 1, rng.randint(-100, 100)]),
            }
        )
    rows[1]["s"] = "tablet 1 has a raw CR\r"  # that pull is read in YSON
    return rows


def exact(row: Any) -> tuple:
    return tuple(v.hex() if isinstance(v, float) else v for v in row)


def sorted_rows(rows: list[Any]) -> list[tuple]:
    return sorted((exact(r) for r in rows), key=lambda r: r[0])


def test_dsv_and_yson_read_alike_in_batch_and_stream(spark, yt, yt_proxy, yt_root) -> None:
    queue = f"{yt_root}/queue"
    create_queue(yt, queue, SCHEMA, tablet_count=2)
    rows = tricky_rows(random.Random(7), 300)
    yt.insert_rows(queue, rows)
    columns = ["id", "s", "d", "t", "flag", "n"]

    batch = {}
    for read_format in ("yson", "dsv"):
        df = (
            spark.read.format("ytqueue")
            .option("proxy", yt_proxy)
            .option("read_format", read_format)
            .option("pull_batch_rows", "40")
            .load(queue)
        )
        batch[read_format] = sorted_rows(df.select(*columns).collect())
    assert batch["dsv"] == batch["yson"]
    assert [r[1] for r in batch["dsv"]] == [r["s"] for r in rows]
    assert sum(1 for r in batch["dsv"] if r[1] is None) > 20 and sum(1 for r in batch["dsv"] if r[1] == "\\N") > 20

    streamed = {}
    for read_format in ("yson", "dsv"):
        consumer = f"{yt_root}/consumer-{read_format}"
        create_consumer(yt, consumer, queue)
        name = f"read_format_{read_format}_{yt_root.rsplit('-', 1)[-1]}"
        query = (
            spark.readStream.format("ytqueue")
            .option("proxy", yt_proxy)
            .option("consumer_path", consumer)
            .option("read_format", read_format)
            .option("max_rows_per_partition", "70")
            .load(queue)
            .writeStream.format("memory")
            .queryName(name)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None
        streamed[read_format] = sorted_rows(spark.sql(f"select {', '.join(columns)} from {name}").collect())
    assert streamed["dsv"] == streamed["yson"] == batch["yson"]


def test_dsv_is_refused_for_a_queue_with_an_any_column(spark, yt, yt_proxy, yt_root) -> None:
    queue = f"{yt_root}/queue"
    create_queue(yt, queue, [column("id", "int64"), column("payload", "any")])
    with pytest.raises(Exception, match=r"Invalid option 'read_format'.*'payload'.*read_format=auto"):
        spark.read.format("ytqueue").option("proxy", yt_proxy).option("read_format", "dsv").load(queue).collect()
