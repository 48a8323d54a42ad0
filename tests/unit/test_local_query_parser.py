"""The select_rows subset: what parses, and what fails clearly instead of answering wrongly."""

from __future__ import annotations

import pytest

from spyt_queue.local.errors import YtError
from spyt_queue.local.query import Compiler, integer_bounds, parse_query

TYPES = {"$tablet_index": "int64", "$row_index": "int64", "data": "string", "n": "uint64", "f": "boolean"}


def predicate(where: str):
    query = parse_query(f"* from [//t] where {where}")
    return Compiler(TYPES, query.text).predicate(query.where)


def test_parses_the_supported_shapes():
    query = parse_query(
        "data, [$row_index] as r from [//tmp/q] where [$tablet_index] = 1 and "
        "[$row_index] between 3 and 9 order by r desc offset 1 limit 5"
    )
    assert query.path == "//tmp/q"
    assert query.projection == [("data", "data"), ("$row_index", "r")]
    assert (query.limit, query.offset, query.order_by[0].descending) == (5, 1, True)
    assert integer_bounds(query.where, "$row_index") == (None, 3, 9)
    assert integer_bounds(query.where, "$tablet_index")[0] == {1}


@pytest.mark.parametrize(
    "where, row, expected",
    [
        ("data = 'a' or not (n > 3u)", {b"data": b"b", b"n": 2}, True),
        ("n in (1, 2, 3)", {b"n": 4}, False),
        ("(data, n) = ('x', 1)", {b"data": b"x", b"n": 1}, True),
        ("is_null(data)", {b"n": 1}, True),
        ("data != null", {b"data": b""}, True),
        ("n not between 2 and 4", {b"n": 3}, False),
        ("1 = 1", {}, True),
    ],
)
def test_predicates(where, row, expected):
    assert predicate(where)(row) is expected


@pytest.mark.parametrize(
    "query",
    [
        "sum(1) from [//t] group by 1",
        "* from [//t] join [//u] using k",
        "* from [//t] where n + 1 = 2",
        "* from [//t] where lower(data) = 'a'",
        "* from [//t] order by n",
        "a = b from [//t]",
        "* from [//t] where data = ",
        "* from //t",
    ],
)
def test_rejects_unsupported_queries(query):
    with pytest.raises(YtError):
        q = parse_query(query)
        Compiler(TYPES, query).predicate(q.where) if q.where is not None else None


def test_type_mismatch_and_unknown_columns_fail():
    with pytest.raises(YtError, match="Type mismatch"):
        predicate("data = 1")
    with pytest.raises(YtError, match="Undefined reference"):
        predicate("missing = 1")


def test_projection_arithmetic():
    """``a + 1 as aa`` (YTsaurus's test_select_from_single_tablet): integer arithmetic, nulls propagate, ``/`` and
    ``%`` truncate toward zero as in C++."""
    query = parse_query("n + 1 as aa, n * 2 - 1, -7 / n, -7 % n from [//t]")
    compiler = Compiler(TYPES, query.text)
    (first, alias), _, _, _ = query.projection
    assert alias == "aa"
    assert compiler.value(first)({b"n": 41}) == 42
    assert compiler.value(first)({b"n": None}) is None
    assert query.projection[1][1] == "n * 2 - 1"
    assert compiler.value(query.projection[1][0])({b"n": 5}) == 9
    assert compiler.value(query.projection[2][0])({b"n": 2}) == -3
    assert compiler.value(query.projection[3][0])({b"n": 2}) == -1
    with pytest.raises(YtError, match="Division by zero"):
        compiler.value(query.projection[2][0])({b"n": 0})

