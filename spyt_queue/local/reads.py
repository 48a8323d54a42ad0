"""``select_rows`` and ``lookup_rows`` execution over sorted and ordered tables, streaming bounded memory."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import Any

from spyt_queue.local import ordered, sorted_tables, tablet_checks
from spyt_queue.local.cypress import Node
from spyt_queue.local.errors import YtError
from spyt_queue.local.formats import Format, encode_row_stream
from spyt_queue.local.query import Compiler, integer_bounds, parse_query, sort_key
from spyt_queue.local.schema import (
    ROW_INDEX,
    TABLET_INDEX,
    TableSchema,
    coerce_key_value,
    convert_input_types,
    encode_key,
)
from spyt_queue.local.state import State, normalize_path
from spyt_queue.local.transactions import Transaction

DEFAULT_INPUT_ROW_LIMIT = 1_000_000
DEFAULT_OUTPUT_ROW_LIMIT = 1_000_000


def select(
    state: State,
    query_text: str,
    fmt: Format,
    tx: Transaction | None,
    timestamp: Any,
    input_row_limit: int | None,
    output_row_limit: int | None,
    fail_on_incomplete_result: bool,
) -> Iterator[bytes]:
    """Plan and validate a query now (errors surface before any output), then stream its rows."""
    query = parse_query(query_text)
    input_limit = DEFAULT_INPUT_ROW_LIMIT if input_row_limit is None else int(input_row_limit)
    output_limit = DEFAULT_OUTPUT_ROW_LIMIT if output_row_limit is None else int(output_row_limit)
    with state.lock:
        node = state.dynamic_table(normalize_path(query.path))
        table = node.table
        assert table is not None
        schema = table.schema
        column_types: dict[str, str] = {c.name: c.type for c in schema.columns}
        if table.ordered:
            column_types = {"$tablet_index": "int64", "$row_index": "int64", **column_types}
        compiler = Compiler(column_types, query_text)
        predicate = compiler.predicate(query.where) if query.where is not None else None
        if query.projection is None:
            output = [(name, name) for name in column_types]
        else:
            output = query.projection
            for column, _alias in output:
                if isinstance(column, str):
                    compiler.column(column)
        getters = [
            (alias.encode("utf-8"), compiler.value(column) if not isinstance(column, str) else None)
            for column, alias in output
        ]
        aliases = {alias: column for column, alias in output if alias != column and isinstance(column, str)}
        for item in query.order_by:
            if item.column not in column_types and item.column in aliases:
                item.column = aliases[item.column]
            compiler.column(item.column)
        ts = state.read_timestamp(tx, timestamp)
        if table.ordered:
            ranges = _ordered_ranges(node, query.where)
            tablet_checks.validate_tablets_mounted(node, _ordered_tablets(node, query.where))
            total_input = sum(end - begin for _, begin, end in ranges)
            source: Iterator[dict[bytes, Any]] = _ordered_rows(state, node.id, ranges)
        else:
            prefix = _sorted_prefix(schema, query.where)
            tablet_checks.validate_range_mounted(node, prefix)
            total_input = state.storage.count_live_keys(node.id) if prefix is None else 0
            source = sorted_tables.scan(state.storage, node.id, ts, prefix)
    if total_input > input_limit and fail_on_incomplete_result:
        raise YtError(
            "Query terminated prematurely due to excessive input; consider rewriting your query or "
            "changing input limit",
            attributes={"input_row_limit": input_limit, "query": query_text},
        )
    rows: Iterator[dict[bytes, Any]] = source
    if predicate is not None:
        rows = filter(predicate, rows)
    if query.order_by:
        assert query.limit is not None
        top = heapq.nsmallest(query.offset + query.limit, rows, key=sort_key(query.order_by))
        rows = iter(top[query.offset :])
    elif query.limit is not None:
        rows = itertools.islice(rows, query.offset, query.offset + query.limit)
    if all(getter is None for _, getter in getters):
        names = [(column.encode("utf-8"), alias.encode("utf-8")) for column, alias in output]
        projected = ({alias: row.get(column) for column, alias in names} for row in rows)
    else:
        pairs = zip(getters, output, strict=True)
        keys = [(alias, getter or _getter(column)) for (alias, getter), (column, _) in pairs]
        projected = ({alias: get(row) for alias, get in keys} for row in rows)
    any_columns = [
        alias.encode("utf-8")
        for column, alias in output
        if isinstance(column, str) and column_types.get(column) == "any"
    ]
    limited = _limit_output(projected, output_limit, fail_on_incomplete_result, query_text)
    return encode_row_stream(limited, fmt, any_columns=any_columns)


def _getter(column: str) -> Any:
    key = column.encode("utf-8")
    return lambda row: row.get(key)


def _limit_output(rows: Iterator[dict[bytes, Any]], limit: int, fail: bool, query: str) -> Iterator[dict[bytes, Any]]:
    for count, row in enumerate(rows):
        if count >= limit:
            if fail:
                raise YtError(
                    "Query terminated prematurely due to excessive output; consider rewriting your query "
                    "or changing output limit",
                    attributes={"output_row_limit": limit, "query": query},
                )
            return
        yield row


def _ordered_tablets(node: Node, where: Any) -> list[int]:
    """The tablets of an ordered table a query reads (top-level ``$tablet_index`` conditions; all by default)."""
    table = node.table
    assert table is not None
    tablets, t_low, t_high = integer_bounds(where, "$tablet_index")
    return [
        t.index
        for t in table.tablets
        if (tablets is None or t.index in tablets)
        and (t_low is None or t.index >= t_low)
        and (t_high is None or t.index <= t_high)
    ]


def _ordered_ranges(node: Node, where: Any) -> list[tuple[int, int, int]]:
    table = node.table
    assert table is not None
    _, r_low, r_high = integer_bounds(where, "$row_index")
    ranges = []
    for index in _ordered_tablets(node, where):
        tablet = table.tablets[index]
        begin = tablet.trimmed_row_count if r_low is None else max(tablet.trimmed_row_count, r_low)
        end = tablet.total_row_count if r_high is None else min(tablet.total_row_count, r_high + 1)
        if begin < end:
            ranges.append((tablet.index, begin, end))
    return ranges


def _ordered_rows(state: State, table_id: str, ranges: list[tuple[int, int, int]]) -> Iterator[dict[bytes, Any]]:
    for tablet, begin, end in ranges:
        yield from ordered.read_rows(state.storage, table_id, tablet, begin, end)


def _sorted_prefix(schema: TableSchema, where: Any) -> bytes | None:
    """A key prefix from ``first_key_column = constant`` among top-level conjuncts (a scan bound only)."""
    from spyt_queue.local.query import ColumnRef, Compare, Literal, conjuncts

    first = schema.key_columns[0]
    for item in conjuncts(where):
        if isinstance(item, Compare) and item.op == "=":
            left, right = item.left, item.right
            if isinstance(right, ColumnRef) and isinstance(left, Literal):
                left, right = right, left
            if (
                isinstance(left, ColumnRef)
                and left.name == first.name
                and isinstance(right, Literal)
                and right.value is not None
            ):
                value = coerce_key_value(first, right.value)
                try:
                    return encode_key([value])
                except YtError:
                    return None
    return None


def lookup(
    state: State,
    path: str,
    keys: list[dict[bytes, Any]],
    fmt: Format,
    tx: Transaction | None,
    timestamp: Any,
    column_names: list[str] | None,
    keep_missing_rows: bool,
    input_attributes: dict[Any, Any] | None = None,
) -> Iterator[bytes]:
    """``lookup_rows``: rows in the order of ``keys``; missing ones skipped or kept as null."""
    with state.lock:
        node = state.dynamic_table(normalize_path(path))
        table = node.table
        assert table is not None
        if table.ordered:
            raise YtError(f"Table {node.path} is not sorted")
        schema = table.schema
        convert_input_types(schema, keys, input_attributes or {})
        schema.validate_rows(keys, node.path, ordered=False, keys_only=True)
        tablet_checks.validate_keys_mounted(
            node, (sorted_tables.key_of(schema, key) for key in keys), write=False
        )
        if column_names is not None:
            for name in column_names:
                if name not in schema.by_name:
                    raise YtError(f"No such column {name!r}", attributes={"table_path": node.path})
            columns = [name.encode("utf-8") for name in column_names]
        else:
            columns = [c.bname for c in schema.columns]
        ts = state.read_timestamp(tx, timestamp)
        results = []
        for row in state.lookup(node, keys, ts):
            if row is None:
                if keep_missing_rows:
                    results.append(None)
                continue
            results.append(sorted_tables.project(row, columns))
    return encode_row_stream(iter(results), fmt, any_columns=[c.bname for c in schema.columns if c.type == "any"])


__all__ = ["ROW_INDEX", "TABLET_INDEX", "lookup", "select"]
