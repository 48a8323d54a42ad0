"""The sinks' option tables in ``docs/`` against the options each sink declares (:class:`spyt_queue.options.Option`):
a table names only options the sink reads, leaves out none, and states the declared defaults (the same checks as
``test_option_declarations.py`` for the sources)."""

from __future__ import annotations

import re

import pytest
from test_option_declarations import covered, shown_default, table_of

from spyt_queue.deadletter import DEAD_LETTER_OPTIONS
from spyt_queue.options import Option, Options, find_option
from spyt_queue.sink_options import SPARK_SINK_OPTIONS
from spyt_queue.sinks.hbase.sink import HBASE_SINK_OPTIONS
from spyt_queue.sinks.kudu.sink import KUDU_SINK_OPTIONS
from spyt_queue.yt.sink import YT_SINK_OPTIONS

#: (page, table index, the sink's declared options).
TABLES: dict[str, tuple[str, int, tuple[Option, ...]]] = {
    "YT sink": ("writing-yt.md", 0, YT_SINK_OPTIONS),
    "Kudu sink": ("kudu.md", 0, KUDU_SINK_OPTIONS),
    "HBase sink": ("hbase.md", 0, HBASE_SINK_OPTIONS),
}


def names_in(cell: str) -> list[str]:
    """The option names a sink table's cell shows in backticks: ``.hash_buckets`` after ``create_table.hash_columns``
    is ``create_table.hash_buckets``; ``save(<table>)`` / ``.save(path)`` forms are left out."""
    names: list[str] = []
    for token in re.findall(r"`([^`]+)`", cell):
        if "(" in token:
            continue
        if token.startswith(".") and names and "." in names[-1]:
            token = names[-1].rsplit(".", 1)[0] + token
        names.append(token)
    return names


#: Accepted by every sink and documented in each table (or on another page).
EVERY_SINK = (*SPARK_SINK_OPTIONS, *DEAD_LETTER_OPTIONS)


@pytest.mark.parametrize("sink", sorted(TABLES))
def test_docs_table_names_only_declared_options(sink: str) -> None:
    page, index, declared = TABLES[sink]
    unknown = [
        token
        for row in table_of(page, index)
        for token in names_in(row[0])
        if not covered(token, (*declared, *EVERY_SINK))
    ]
    assert not unknown, f"docs/{page} documents options the {sink} does not declare: {unknown}"


@pytest.mark.parametrize("sink", sorted(TABLES))
def test_every_declared_option_is_in_its_docs_table(sink: str) -> None:
    page, index, declared = TABLES[sink]
    tokens = [token for row in table_of(page, index) for token in names_in(row[0])]
    missing = [
        option.name
        for option in declared
        if not any(find_option(token, [option]) for token in tokens)
        and not any(t.lower().startswith(option.name.lower().rstrip(".*")) for t in tokens)
    ]
    assert not missing, f"docs/{page} leaves out options of the {sink}: {missing}"


@pytest.mark.parametrize("sink", ["HBase sink", "YT sink"])  # docs/kudu.md's table has no default column
def test_docs_defaults_are_the_declared_ones(sink: str) -> None:
    """A row naming one option shows the declared default in its last cell."""
    page, index, declared = TABLES[sink]
    rows = table_of(page, index)
    wrong = []
    for row in rows:
        options = {find_option(token, declared) for token in names_in(row[0])} - {None}
        if len(options) != 1:
            continue
        (option,) = options
        assert option is not None
        if option.default is None or option.kind == "prefix":
            continue
        if shown_default(option) not in row[-1].replace(",", "").replace("_", "").replace("\\", ""):
            wrong.append(f"{option.name}: table says {row[-1]!r}, declared {shown_default(option)!r}")
    assert not wrong, f"docs/{page}: " + "; ".join(wrong)


def test_every_sink_declaration_has_a_one_line_doc_a_write_mode_and_a_default_of_its_kind() -> None:
    from spyt_queue.kafka.sink import KAFKA_SINK_OPTIONS

    for option in (*YT_SINK_OPTIONS, *KAFKA_SINK_OPTIONS, *KUDU_SINK_OPTIONS, *HBASE_SINK_OPTIONS):
        assert option.doc and "\n" not in option.doc, option.name
        assert "write" in option.modes, option.name
        if option.default is not None and option.kind != "prefix":
            assert Options({}).value(option) == option.default, option.name
