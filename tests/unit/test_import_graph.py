"""The import graph of the plugin: no circles between its modules, and an embedded server that imports none of it.

Every import statement counts, at any depth (inside functions and ``TYPE_CHECKING`` blocks too): a function-level
import that only dodges a circle is still a circle. ``spyt_queue.sinks.*`` is the top-level ``sinks/`` folder
(``spyt_queue/sinks/__init__.py`` points there), so both names are one module here.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Folders of the plugin's own code; ``spyt_queue.sinks.X`` is ``sinks.X``.
PACKAGES = ("spyt_queue", "sinks")
SINKS_ALIAS = "spyt_queue.sinks."


def module_files(root: Path) -> dict[str, Path]:
    """Module name -> file, for every ``.py`` under the plugin's folders (a package is its ``__init__.py``)."""
    files: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join(parts)] = path
    return files


def canonical(name: str) -> str:
    """``spyt_queue.sinks.kudu.sink`` -> ``sinks.kudu.sink`` (the same file in a checkout and in a wheel)."""
    return "sinks." + name[len(SINKS_ALIAS) :] if name.startswith(SINKS_ALIAS) else name


def imported_names(module: str, path: Path) -> Iterable[str]:
    """Every module name an import statement of ``path`` may load (relative imports resolved), at any depth."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base_parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_edges(root: Path) -> dict[str, set[str]]:
    """Module -> the plugin's modules it imports: the deepest module an import names, and the packages above it
    (importing ``a.b.c`` runs ``a/b/__init__.py`` first), leaving out the importer's own packages."""
    files = module_files(root)
    edges: dict[str, set[str]] = {name: set() for name in files}
    for module, path in files.items():
        own = canonical(module)
        for raw in imported_names(module, path):
            target = canonical(raw)
            while target and target not in files:
                target = target.rpartition(".")[0]
            while target:
                if target != own and not own.startswith(target + "."):
                    edges[module].add(target)
                target = target.rpartition(".")[0]
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Groups of modules that import each other, directly or through others (strongly connected, more than one)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for node in sorted(edges):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


def printed_by(code: str, timeout: float = 120) -> str:
    """What ``code`` prints, run by this interpreter in a fresh process from the project's root."""
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=timeout
    ).stdout


def test_no_import_circles() -> None:
    found = circles(import_edges(ROOT))
    assert not found, "import circles (move the shared helper down into a module both can import):\n" + "\n".join(
        " <-> ".join(group) for group in found
    )


def test_the_checker_finds_a_circle_hidden_in_a_function_and_behind_the_sinks_alias(tmp_path: Path) -> None:
    """The check above can fail: a lazy import and the ``spyt_queue.sinks`` name do not hide a circle."""
    (tmp_path / "spyt_queue" / "spark").mkdir(parents=True)
    (tmp_path / "sinks" / "kudu").mkdir(parents=True)
    (tmp_path / "spyt_queue" / "__init__.py").write_text("")
    (tmp_path / "spyt_queue" / "spark" / "__init__.py").write_text("")
    (tmp_path / "sinks" / "__init__.py").write_text("")
    (tmp_path / "sinks" / "kudu" / "__init__.py").write_text("")
    (tmp_path / "spyt_queue" / "spark" / "source.py").write_text(
        "def writer():\n    from spyt_queue.sinks.kudu.sink import KuduWriter\n    return KuduWriter\n"
    )
    (tmp_path / "sinks" / "kudu" / "sink.py").write_text("from spyt_queue.spark.source import writer\n")
    (tmp_path / "sinks" / "kudu" / "other.py").write_text("from .sink import writer\n")
    assert circles(import_edges(tmp_path)) == [["sinks.kudu.sink", "spyt_queue.spark.source"]]


def test_the_embedded_server_imports_nothing_of_the_plugin() -> None:
    """``spyt_queue/local/`` is a YTsaurus server for tests and demos: it must not depend on the plugin it serves."""
    edges = import_edges(ROOT)
    allowed = ("spyt_queue", "spyt_queue.local")
    outside = {
        module: sorted(t for t in targets if t not in allowed and not t.startswith("spyt_queue.local."))
        for module, targets in edges.items()
        if module.startswith("spyt_queue.local")
    }
    assert not {module: targets for module, targets in outside.items() if targets}
    assert "spyt_queue.local.server" in outside, "the server's modules were not found"


def test_importing_the_embedded_server_loads_no_plugin_module_and_no_spark() -> None:
    """At run time too (``spyt_queue/__init__.py`` runs first): only ``spyt_queue`` itself and ``spyt_queue.local``."""
    code = (
        "import importlib, pkgutil, sys, spyt_queue.local\n"
        "for info in pkgutil.iter_modules(spyt_queue.local.__path__, 'spyt_queue.local.'):\n"
        "    if not info.name.endswith('__main__'):\n"
        "        importlib.import_module(info.name)\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('spyt_queue', 'sinks', 'pyspark', 'confluent_kafka', 'kazoo', 'jpype', 'happybase', 'thriftpy2'))))\n"
    )
    loaded = printed_by(code).split()
    assert "spyt_queue.local.server" in loaded
    assert [m for m in loaded if m != "spyt_queue" and not m.startswith("spyt_queue.local")] == []


def test_importing_every_module_loads_no_heavy_optional_dependency() -> None:
    """JPype, happybase, thriftpy2 and kazoo load only where Kudu, HBase or ZooKeeper is used (the remaining lazy
    imports of the plugin are there for this), not in every Spark worker that imports a source."""
    code = (
        "import importlib, pkgutil, sys, spyt_queue\n"
        "names = [i.name for i in pkgutil.walk_packages(spyt_queue.__path__, 'spyt_queue.') "
        "if not i.name.endswith('__main__')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "heavy = {'jpype', 'happybase', 'Hbase_thrift', 'thriftpy2', 'kazoo'}\n"
        "print(' '.join(names))\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & heavy)))\n"
    )
    imported, heavy = printed_by(code, timeout=300).split("\n")[:2]
    assert {"spyt_queue.sinks.kudu.client", "spyt_queue.sinks.hbase.sink", "spyt_queue.zookeeper.store"} <= set(
        imported.split()
    )
    assert heavy == "", f"loaded by a module-level import: {heavy}"


def test_the_data_sources_load_no_ytsaurus_client_until_a_query_needs_it() -> None:
    """Spark imports a data source's module in every Python worker it starts: ``yt.wrapper`` and pandas (1-2 s) load
    only where YTsaurus is read or written (the technology dispatch in ``connect``, ``deadletter_targets`` and the
    ``ytqueue`` source's writers imports them on first use), not for a Kafka source or a Kudu or HBase sink."""
    code = (
        "import sys, spyt_queue.datasource, spyt_queue.sinks.kudu.source, spyt_queue.sinks.hbase.source\n"
        "print(*sorted({'yt.wrapper', 'pandas', 'spyt_queue.yt.backend'} & set(sys.modules)))\n"
    )
    loaded = printed_by(code).split()
    assert loaded == []


def test_a_ytsaurus_query_and_ytqueue_status_load_no_kafka_client() -> None:
    """``confluent_kafka`` (~0.3 s per Python worker) loads only where Kafka is read or written: importing the
    ``ytqueue`` source and sink, checking a YT source's options, building its backend and running ``ytqueue status``
    on a YT queue leave it out (the Kafka backend, clients and dead-letter target are imported on first use)."""
    code = (
        "import sys\n"
        "import pyspark_ytqueue, spyt_queue.datasource, spyt_queue.yt.sink\n"
        "from typer.testing import CliRunner\n"
        "from spyt_queue import connect\n"
        "from spyt_queue.cli import app\n"
        "from spyt_queue.options import Options\n"
        "options = Options({'path': '//home/q', 'proxy': '127.0.0.1:9', 'consumer_path': '//home/c', "
        "'deadLetter.path': '//home/dead'})\n"
        "connect.check_source_options(options)\n"
        "connect.settings_for(options, True)\n"
        "connect.backend_for(options, True)\n"
        "result = CliRunner().invoke(app, ['status', '--queue', '//home/q', '--consumer', '//home/c', "
        "'--proxy', '127.0.0.1:9'])\n"
        "assert 'cannot reach 127.0.0.1:9' in result.output, result.output\n"
        "print(*sorted(m for m in sys.modules if m.split('.')[0] == 'confluent_kafka'))\n"
    )
    loaded = printed_by(code).split()
    assert loaded == [], f"a YTsaurus-only process loaded the Kafka client: {loaded}"


def test_a_kafka_only_process_never_loads_the_ytsaurus_client() -> None:
    """A Kafka-only job's Python workers import the Kafka source, sink, backend and dead-letter topic target: none of
    them loads ``yt.wrapper`` or pandas (3-4 s of a fresh worker's import when the Kafka sink borrowed helpers from the
    YT table writer)."""
    code = (
        "import sys\n"
        "import spyt_queue.kafka.sink, spyt_queue.kafka.backend, spyt_queue.kafka.group_store\n"
        "from spyt_queue import connect\n"
        "from spyt_queue.deadletter_targets import dead_letter_target\n"
        "from spyt_queue.options import Options\n"
        "options = Options({'kafka.bootstrap.servers': '127.0.0.1:9', 'subscribe': 'events'})\n"
        "connect.check_source_options(options)\n"
        "connect.settings_for(options, True)\n"
        "sink = Options({'kafka.bootstrap.servers': '127.0.0.1:9', 'topic': 'out', 'deadLetter.topic': 'dead'})\n"
        "assert dead_letter_target(sink).describe() == 'kafka:dead'\n"
        "print(*sorted({'yt.wrapper', 'pandas', 'spyt_queue.yt.table_writer'} & set(sys.modules)))\n"
    )
    loaded = printed_by(code).split()
    assert loaded == [], f"a Kafka-only process loaded the YTsaurus client: {loaded}"


#: The floors of the plugin, lowest first (CONTRIBUTING.md, "Which layer may import which"): a module imports only
#: from its own floor or the floors below. A name ending in ``.`` is a folder, any other a module; the most specific
#: match wins. ``spyt_queue.local`` (the embedded server) imports nothing of the plugin (tested above).
FLOORS: tuple[tuple[str, ...], ...] = (
    # 0: shared values and contracts, no technology, no Spark data source class
    (
        "spyt_queue.errors",
        "spyt_queue.options",
        "spyt_queue.redaction",
        "spyt_queue.offsets",
        "spyt_queue.records",
        "spyt_queue.backend",
        "spyt_queue.stores.",
        "spyt_queue.planner",
        "spyt_queue.positions",
        "spyt_queue.settings",
        "spyt_queue.committer",
        "spyt_queue.collector",
        "spyt_queue.lag",
        "spyt_queue.deadletter",
        "spyt_queue.deadletter_targets",
        "spyt_queue.sink_options",
    ),
    # 1: Spark's base classes: readers, partitions, the sink skeleton, one-line errors, discovery
    ("spyt_queue.spark.",),
    # 2: one folder per technology
    ("spyt_queue.yt.", "spyt_queue.kafka.", "spyt_queue.zookeeper.", "sinks.", "spyt_queue.sinks."),
    # 3: the one wiring point from a user's options to backends, stores and writers
    ("spyt_queue.connect",),
    # 4: entry points: Spark's data source, the command line, the demo, the package's face
    ("spyt_queue.datasource", "spyt_queue.cli", "spyt_queue.demo", "spyt_queue"),
)


def floor_of(module: str) -> int | None:
    """The floor of ``module`` (the most specific entry of :data:`FLOORS` naming it), ``None`` if none does."""
    best: tuple[int, int] | None = None
    for floor, names in enumerate(FLOORS):
        for name in names:
            matches = module.startswith(name) or module == name[:-1] if name.endswith(".") else module == name
            if matches and (best is None or len(name) > best[1]):
                best = (floor, len(name))
    return None if best is None else best[0]


def test_every_import_runs_downhill() -> None:
    """No module imports from a floor above its own (at any depth, lazy imports included): the technologies never
    reach up into the wiring point or the entry points, and the shared floor knows no technology."""
    edges = import_edges(ROOT)
    unplaced = sorted(m for m in edges if not m.startswith("spyt_queue.local") and floor_of(m) is None)
    assert unplaced == [], f"modules on no floor (add them to FLOORS and to CONTRIBUTING.md): {unplaced}"
    upward = sorted(
        f"{module} (floor {floor_of(module)}) -> {target} (floor {floor_of(target)})"
        for module, targets in edges.items()
        if not module.startswith("spyt_queue.local")
        for target in targets
        if target != "spyt_queue"  # the package's face runs before any of its modules: not an import of its own
        and floor_of(target) is not None
        and floor_of(target) > floor_of(module)  # type: ignore[operator]
    )
    assert upward == [], "imports running up a floor:\n" + "\n".join(upward)


def test_the_floor_check_can_fail() -> None:
    """A technology importing the wiring point is found."""
    assert floor_of("spyt_queue.kafka.sink") == 2 and floor_of("spyt_queue.connect") == 3
    assert floor_of("spyt_queue.stores.registry") == 0 and floor_of("spyt_queue.datasource") == 4


def test_the_cli_goes_through_the_library_and_no_store_internals() -> None:
    """``ytqueue`` is a thin caller: it imports the wiring point, and no store module's internals (it lists a
    store's groups through ``OffsetStore.groups()``); ``status`` gets its backend, store and dead-letter target
    from the library (``connect.watch``, ``deadletter_targets``), building none of them and naming no group itself."""
    edges = import_edges(ROOT)["spyt_queue.cli"]
    assert "spyt_queue.connect" in edges
    assert not {e for e in edges if e.startswith(("spyt_queue.zookeeper", "sinks.", "spyt_queue.sinks"))}, edges
    built_by_the_library = {
        "spyt_queue.kafka.backend",
        "spyt_queue.kafka.deadletter",
        "spyt_queue.kafka.options",
        "spyt_queue.yt.deadletter",
        "spyt_queue.stores.per_query",
    }
    assert not edges & built_by_the_library, edges & built_by_the_library
