"""What a fresh Python worker pays to import each data source's modules, side by side in one run.

Spark starts Python workers for a query's tasks (and reuses them); each imports the modules of the data source it
runs. A Kafka-only job must not pay for ``yt.wrapper`` and pandas, a YT job not for ``confluent_kafka``. This runs
each import set in a fresh interpreter ``--rounds`` times (interleaved, so a busy moment hits every set alike) and
prints the median wall time per set, its ratio to a bare ``import pyspark``, and which heavy libraries it loaded.

    python bench/bench_worker_startup.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

#: name -> the modules a Python worker of that job imports (what Spark's discovery and the task's unpickling load).
SETS = {
    "pyspark only": ["pyspark.sql.datasource"],
    "ytqueue source (YT)": ["pyspark_ytqueue", "spyt_queue.datasource", "spyt_queue.yt.backend"],
    "YT sink": ["pyspark_ytqueue", "spyt_queue.datasource", "spyt_queue.yt.sink"],
    "Kafka source": ["pyspark_ytqueue", "spyt_queue.datasource", "spyt_queue.kafka.backend"],
    "Kafka sink": ["pyspark_ytqueue", "spyt_queue.datasource", "spyt_queue.kafka.sink"],
    "Kudu sink": ["pyspark_spyt_kudu", "spyt_queue.sinks.kudu.sink"],
    "HBase sink": ["pyspark_spyt_hbase", "spyt_queue.sinks.hbase.sink"],
}
HEAVY = ("yt.wrapper", "pandas", "confluent_kafka", "jpype", "happybase", "kazoo")

PROBE = """
import importlib, json, sys, time
started = time.perf_counter()
for name in sys.argv[1:]:
    importlib.import_module(name)
elapsed = time.perf_counter() - started
heavy = sorted({h for h in HEAVY if h in sys.modules})
print(json.dumps({"seconds": elapsed, "heavy": heavy}))
""".replace("HEAVY", repr(HEAVY))


def measure(modules: list[str]) -> dict:
    """One fresh interpreter importing ``modules``: seconds and heavy libraries loaded."""
    out = subprocess.run([sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in SETS}
    heavy: dict[str, list[str]] = {}
    for _ in range(args.rounds):
        for name, modules in SETS.items():
            result = measure(modules)
            times[name].append(result["seconds"])
            heavy[name] = result["heavy"]
    base = statistics.median(times["pyspark only"])
    print(f"{'worker imports':24} {'median s':>9} {'x pyspark':>10}  heavy libraries loaded")
    for name in SETS:
        median = statistics.median(times[name])
        print(f"{name:24} {median:9.2f} {median / base:10.2f}  {', '.join(heavy[name]) or '-'}")


if __name__ == "__main__":
    main()
