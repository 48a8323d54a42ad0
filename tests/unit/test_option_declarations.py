"""The option tables of ``docs/`` against the options the code declares (:class:`spyt_queue.options.Option`).

Each component declares its options once, beside the code that reads them; these tests fail when a docs table names
an option the component does not read, leaves out one it does, or states another default than the declaration.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from spyt_queue.connect import KAFKA_SOURCE, YT_SOURCE
from spyt_queue.deadletter import DEAD_LETTER_KAFKA, DEAD_LETTER_OPTIONS
from spyt_queue.options import Option, Options, find_option

DOCS = Path(__file__).resolve().parents[2] / "docs"
OPTION_HEADERS = ("option", "writer option")


def option_tables(page: Path) -> list[list[list[str]]]:
    """The tables of ``page`` whose first header cell is an option header, as rows of cells (header and rule out)."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] | None = None
    for line in page.read_text().splitlines():
        if not line.startswith("|"):
            current = None
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if current is None:
            current = [] if cells and cells[0] in OPTION_HEADERS else None
            if current is not None:
                tables.append(current)
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        current.append(cells)
    return tables


def names_in(cell: str) -> list[str]:
    """The option names a table cell shows in backticks (``.load(path)`` forms left out)."""
    return [token for token in re.findall(r"`([^`]+)`", cell) if not token.startswith(".")]


def family(token: str) -> str | None:
    """``yt.<key>`` / ``kafka.*`` / ``deadLetter.*``: the prefix a table row stands for, else ``None``."""
    match = re.fullmatch(r"([A-Za-z.]+\.)(<[a-z]+>|\*)", token)
    return match.group(1) if match else None


def covered(token: str, declared: Iterable[Option]) -> bool:
    """Whether a name (or family) from a table is something the component reads."""
    declared = list(declared)
    prefix = family(token)
    if prefix is not None:
        return any(o.name.lower().startswith(prefix.lower()) for o in declared)
    if find_option(token, declared) is not None:
        return True
    return any(o.kind == "prefix" and token.lower().startswith(o.name.lower()) for o in declared)


def table_of(page: str, index: int = 0) -> list[list[str]]:
    tables = option_tables(DOCS / page)
    assert len(tables) > index, f"docs/{page} has no option table #{index}"
    return tables[index]


#: (page, table index, the component's declared options, options documented on another page of the component).
TABLES = {
    "YT source": ("reading.md", 0, YT_SOURCE.declared(), set(o.name for o in DEAD_LETTER_OPTIONS)),
    "Kafka source": ("kafka.md", 0, KAFKA_SOURCE.declared(), set()),
    "dead letters": ("dead-letters.md", 0, (*DEAD_LETTER_OPTIONS, DEAD_LETTER_KAFKA), set()),
}


@pytest.mark.parametrize("component", sorted(TABLES))
def test_docs_table_names_only_declared_options(component: str) -> None:
    page, index, declared, _ = TABLES[component]
    unknown = [token for row in table_of(page, index) for token in names_in(row[0]) if not covered(token, declared)]
    assert not unknown, f"docs/{page} documents options {component} does not declare: {unknown}"


@pytest.mark.parametrize("component", sorted(TABLES))
def test_every_declared_option_is_in_its_docs_table(component: str) -> None:
    page, index, declared, elsewhere = TABLES[component]
    tokens = [token for row in table_of(page, index) for token in names_in(row[0])]
    missing = [
        option.name
        for option in declared
        if option.name not in elsewhere
        and not any(find_option(token, [option]) for token in tokens)
        and not any(family(token) and option.name.lower().startswith(str(family(token)).lower()) for token in tokens)
        and not (option.kind == "prefix" and any(t.lower().startswith(option.name.lower()) for t in tokens))
    ]
    assert not missing, f"docs/{page} leaves out options of {component}: {missing}"


def shown_default(option: Option) -> str:
    """How a docs table writes the declared default."""
    if option.kind == "bool":
        return str(option.default).lower()
    if option.kind == "seconds" and float(option.default).is_integer():
        return str(int(option.default))
    return str(option.default)


def wrong_defaults(rows: list[list[str]], declared: Iterable[Option]) -> list[str]:
    """Rows naming one option (and its aliases) whose last cell does not show the declared default."""
    declared = list(declared)
    wrong = []
    for row in rows:
        options = {find_option(token, declared) for token in names_in(row[0])} - {None}
        if len(options) != 1:
            continue
        (option,) = options
        assert option is not None
        if option.default is None or option.kind == "prefix":
            continue
        if shown_default(option) not in row[-1].replace(",", "").replace("_", ""):
            wrong.append(f"{option.name}: table says {row[-1]!r}, declared {shown_default(option)!r}")
    return wrong


@pytest.mark.parametrize("component", sorted(TABLES))
def test_docs_defaults_are_the_declared_ones(component: str) -> None:
    """A row naming one option (and its aliases) shows the declared default in its last cell."""
    page, index, declared, _ = TABLES[component]
    wrong = wrong_defaults(table_of(page, index), declared)
    assert not wrong, f"docs/{page}: " + "; ".join(wrong)


def test_a_wrong_default_in_a_table_is_found() -> None:
    """The default check can fail: a row stating another default is reported, the declared one is not."""
    from spyt_queue.yt.options import PULL_BATCH_ROWS

    assert wrong_defaults([["`pull_batch_rows`", "rows per pull", "`1000`"]], [PULL_BATCH_ROWS])
    assert not wrong_defaults([["`pull_batch_rows`", "rows per pull", "`50000`"]], [PULL_BATCH_ROWS])


def test_every_declaration_has_a_one_line_doc_and_a_default_of_its_kind() -> None:
    every = {id(o): o for _, _, declared, _ in TABLES.values() for o in declared}.values()
    for option in every:
        assert option.doc and "\n" not in option.doc, option.name
        if option.default is not None and option.kind != "prefix":
            assert Options({}).value(option) == option.default, option.name


def test_a_declared_option_is_read_through_its_aliases_with_its_type() -> None:
    from spyt_queue.settings import MAX_ROWS_PER_PARTITION, MIN_ROWS_PER_TASK, READ_MODE

    options = Options({"maxRowsPerPartition": "7", "MINROWSPERTASK": "0", "read_mode": "Driver"})
    assert options.value(MAX_ROWS_PER_PARTITION) == 7
    assert options.value(MIN_ROWS_PER_TASK) == 0
    assert options.value(READ_MODE) == "driver"
    assert Options({}).value(MIN_ROWS_PER_TASK) == MIN_ROWS_PER_TASK.default


def test_an_undeclared_family_or_name_is_not_covered() -> None:
    """The checks above can fail: a made-up name and a made-up family are not covered."""
    assert not covered("max_rows_per_partiton", YT_SOURCE.declared())
    assert not covered("kafka.*", YT_SOURCE.declared())
    assert covered("yt.<key>", YT_SOURCE.declared())
    assert covered("kafka.group.id", KAFKA_SOURCE.declared())
