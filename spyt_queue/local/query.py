"""The ``select_rows`` subset of YT's query language: parser and row predicates.

Supported (anything else fails with a clear error, never a wrong answer)::

    <projection> FROM [<path>] [WHERE <predicate>] [ORDER BY <column> [ASC|DESC], ...] [OFFSET n] [LIMIT n]

* projection: ``*`` or column references (``name``, ``[name]``, ``[$row_index]``) with optional ``AS alias``;
* predicate: ``AND``, ``OR``, ``NOT``, parentheses, ``= != <> < <= > >=``, ``[NOT] BETWEEN a AND b``,
  ``[NOT] IN (v, ...)``, tuples ``(a, b) = (x, y)`` / ``(a, b) IN ((x, y), ...)``, ``is_null(col)``;
* literals: integers, ``123u``, floats, ``'strings'``/``"strings"``, ``true``, ``false``, ``null``/``#``;
* ``ORDER BY`` needs ``LIMIT`` (as in YT). No ``GROUP BY``, aggregates, joins, arithmetic or other functions.

Comparisons follow YT's default (non-canonical) null relations: null equals null and is less than any value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yt.yson as yson

from spyt_queue.local.errors import YtError
from spyt_queue.local.types import INT_RANGES, STRING_TYPES

KEYWORDS = {
    "from",
    "where",
    "and",
    "or",
    "not",
    "between",
    "in",
    "order",
    "by",
    "asc",
    "desc",
    "limit",
    "offset",
    "as",
    "group",
    "having",
    "join",
    "left",
    "with",
    "totals",
    "true",
    "false",
    "null",
    "using",
    "on",
    "array",
    "union",
}

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<bracket>\[(?:[^\]\\]|\\.)*\])
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<number>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+u?)
  | (?P<ident>[A-Za-z_$][A-Za-z0-9_$.]*)
  | (?P<op><=|>=|!=|<>|=|<|>|\(|\)|,|\*|\#|\+|-|/|%|\|\||\|)
""",
    re.VERBOSE,
)


@dataclass
class Token:
    """One lexical token."""

    kind: str
    value: Any
    text: str


def tokenize(query: str) -> list[Token]:
    """Split a query into tokens; unknown characters fail."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(query):
        match = _TOKEN.match(query, pos)
        if not match:
            raise YtError(
                f"Error while parsing query: unexpected character {query[pos]!r} at position {pos}",
                attributes={"query": query},
            )
        pos = match.end()
        kind = match.lastgroup
        text = match.group()
        if kind == "ws":
            continue
        if kind == "bracket":
            tokens.append(Token("bracket", _unescape(text[1:-1]), text))
        elif kind == "string":
            tokens.append(Token("string", _unescape(text[1:-1]).encode("utf-8"), text))
        elif kind == "number":
            if text.endswith("u"):
                tokens.append(Token("number", yson.YsonUint64(int(text[:-1])), text))
            elif any(c in text for c in ".eE"):
                tokens.append(Token("number", float(text), text))
            else:
                tokens.append(Token("number", int(text), text))
        elif kind == "ident":
            lower = text.lower()
            tokens.append(Token("kw" if lower in KEYWORDS else "ident", lower if lower in KEYWORDS else text, text))
        else:
            tokens.append(Token("op", text, text))
    tokens.append(Token("end", None, ""))
    return tokens


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(m.group(1), m.group(1)), text)


# --------------------------------------------------------------------------------------------------------------
# AST


@dataclass
class ColumnRef:
    """A column reference."""

    name: str


@dataclass
class Literal:
    """A constant."""

    value: Any


@dataclass
class Arith:
    """``left <op> right`` for ``+ - * / %`` (projection expressions)."""

    op: str
    left: Any
    right: Any


@dataclass
class TupleExpr:
    """``(a, b, ...)``."""

    items: list[Any]


@dataclass
class Compare:
    """``left op right``."""

    op: str
    left: Any
    right: Any


@dataclass
class Between:
    """``expr [NOT] BETWEEN low AND high``."""

    expr: Any
    low: Any
    high: Any
    negated: bool = False


@dataclass
class InList:
    """``expr [NOT] IN (values)``."""

    expr: Any
    values: list[Any]
    negated: bool = False


@dataclass
class BoolOp:
    """``AND`` / ``OR`` of operands."""

    op: str
    items: list[Any]


@dataclass
class Not:
    """``NOT expr``."""

    expr: Any


@dataclass
class IsNull:
    """``is_null(expr)``."""

    expr: Any


@dataclass
class OrderItem:
    """One ``ORDER BY`` key."""

    column: str
    descending: bool = False


@dataclass
class Query:
    """A parsed query."""

    text: str
    path: str
    projection: list[tuple[Any, str]] | None  # (column name or Arith expression, output name); None = *
    where: Any = None
    order_by: list[OrderItem] = field(default_factory=list)
    limit: int | None = None
    offset: int = 0


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.pos = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def fail(self, message: str) -> YtError:
        return YtError(f"Error while parsing query: {message}", attributes={"query": self.text, "position": self.pos})

    def unsupported(self, what: str) -> YtError:
        return YtError(
            f"{what} not supported by the local YTsaurus server (see spyt_queue/local/README.md "
            "for the supported select_rows subset)",
            attributes={"query": self.text},
        )

    def take(self, kind: str, value: Any = None) -> Token:
        token = self.tok
        if token.kind != kind or (value is not None and token.value != value):
            expected = value if value is not None else kind
            raise self.fail(f"expected {expected!r}, got {token.text or 'end of query'!r}")
        self.pos += 1
        return token

    def accept(self, kind: str, value: Any = None) -> Token | None:
        token = self.tok
        if token.kind == kind and (value is None or token.value == value):
            self.pos += 1
            return token
        return None

    def parse(self) -> Query:
        projection = self.parse_projection()
        self.take("kw", "from")
        table = self.accept("bracket")
        if table is None:
            raise self.fail("expected a table path in brackets after FROM")
        path = str(table.value)
        if self.tok.kind == "ident" or (self.tok.kind == "kw" and self.tok.value in ("as", "join", "left")):
            raise self.unsupported("Table aliases and joins are")
        where = None
        if self.accept("kw", "where"):
            where = self.parse_or()
        if self.tok.kind == "kw" and self.tok.value in ("group", "having", "join", "left", "with", "union"):
            raise self.unsupported(f"{self.tok.text.upper()} is")
        order_by: list[OrderItem] = []
        if self.accept("kw", "order"):
            self.take("kw", "by")
            while True:
                column = self.parse_column_name()
                descending = False
                if self.accept("kw", "desc"):
                    descending = True
                else:
                    self.accept("kw", "asc")
                order_by.append(OrderItem(column, descending))
                if not self.accept("op", ","):
                    break
        offset = 0
        limit = None
        if self.accept("kw", "offset"):
            offset = self.parse_count("OFFSET")
        if self.accept("kw", "limit"):
            limit = self.parse_count("LIMIT")
        if self.tok.kind != "end":
            raise self.fail(f"unexpected {self.tok.text!r}")
        if order_by and limit is None:
            raise YtError("ORDER BY used without LIMIT", attributes={"query": self.text})
        if offset and limit is None:  # query_preparer.cpp: OFFSET needs LIMIT (not ORDER BY)
            raise YtError("OFFSET used without LIMIT", attributes={"query": self.text})
        return Query(self.text, path, projection, where, order_by, limit, offset)

    def parse_count(self, what: str) -> int:
        token = self.take("number")
        if not isinstance(token.value, int) or token.value < 0:
            raise self.fail(f"{what} must be a non-negative integer")
        return int(token.value)

    def parse_projection(self) -> list[tuple[Any, str]] | None:
        if self.accept("op", "*"):
            return None
        items: list[tuple[Any, str]] = []
        while True:
            start = self.pos
            expression = self.parse_sum()
            column: Any = expression.name if isinstance(expression, ColumnRef) else expression
            if isinstance(expression, Literal):
                raise self.unsupported("Constant projection items are")
            if self.tok.kind == "op" and self.tok.value not in (",",):
                raise self.unsupported(f"Operator {self.tok.text!r} in the projection is")
            alias = column if isinstance(column, str) else " ".join(t.text for t in self.tokens[start : self.pos])
            if self.accept("kw", "as"):
                alias_token = self.tok
                if alias_token.kind not in ("ident", "bracket"):
                    raise self.fail("expected an alias after AS")
                self.pos += 1
                alias = str(alias_token.value)
            items.append((column, alias))
            if not self.accept("op", ","):
                break
        return items

    def parse_sum(self) -> Any:
        """``term (+|- term)*``: arithmetic of column references and numeric literals."""
        node = self.parse_product()
        while self.tok.kind == "op" and self.tok.value in ("+", "-"):
            op = str(self.take("op").value)
            node = Arith(op, node, self.parse_product())
        return node

    def parse_product(self) -> Any:
        node = self.parse_factor()
        while self.tok.kind == "op" and self.tok.value in ("*", "/", "%"):
            op = str(self.take("op").value)
            node = Arith(op, node, self.parse_factor())
        return node

    def parse_factor(self) -> Any:
        token = self.tok
        if token.kind == "ident" and self.tokens[self.pos + 1].text == "(":
            raise self.unsupported(f"Function {token.text}() in the projection is")
        if token.kind in ("ident", "bracket"):
            return ColumnRef(self.parse_column_name())
        if token.kind == "number":
            self.pos += 1
            return Literal(token.value)
        if token.kind == "op" and token.value == "-":
            self.pos += 1
            return Arith("-", Literal(0), self.parse_factor())
        if token.kind == "op" and token.value == "(":
            self.pos += 1
            node = self.parse_sum()
            self.take("op", ")")
            return node
        raise self.unsupported(f"Projection item {token.text!r} is")

    def parse_column_name(self) -> str:
        token = self.tok
        if token.kind in ("ident", "bracket"):
            self.pos += 1
            return str(token.value)
        raise self.fail(f"expected a column name, got {token.text or 'end of query'!r}")

    def parse_or(self) -> Any:
        items = [self.parse_and()]
        while self.accept("kw", "or"):
            items.append(self.parse_and())
        return items[0] if len(items) == 1 else BoolOp("or", items)

    def parse_and(self) -> Any:
        items = [self.parse_not()]
        while self.accept("kw", "and"):
            items.append(self.parse_not())
        return items[0] if len(items) == 1 else BoolOp("and", items)

    def parse_not(self) -> Any:
        if self.accept("kw", "not"):
            return Not(self.parse_not())
        return self.parse_predicate()

    def parse_predicate(self) -> Any:
        left = self.parse_operand()
        token = self.tok
        if token.kind == "op" and token.value in ("=", "!=", "<>", "<", "<=", ">", ">="):
            self.pos += 1
            right = self.parse_operand()
            return Compare("!=" if token.value == "<>" else token.value, left, right)
        negated = False
        if token.kind == "kw" and token.value == "not":
            nxt = self.tokens[self.pos + 1]
            if nxt.kind == "kw" and nxt.value in ("between", "in"):
                self.pos += 1
                negated = True
        if self.accept("kw", "between"):
            low = self.parse_operand()
            self.take("kw", "and")
            high = self.parse_operand()
            return Between(left, low, high, negated)
        if self.accept("kw", "in"):
            self.take("op", "(")
            values = [self.parse_operand()]
            while self.accept("op", ","):
                values.append(self.parse_operand())
            self.take("op", ")")
            for value in values:
                if not isinstance(value, (Literal, TupleExpr)) or (
                    isinstance(value, TupleExpr) and not all(isinstance(i, Literal) for i in value.items)
                ):
                    raise self.unsupported("Non-constant values in IN lists are")
            return InList(left, values, negated)
        if negated:
            raise self.fail("expected BETWEEN or IN after NOT")
        if self.tok.kind == "op" and self.tok.value in ("+", "-", "*", "/", "%", "||", "|"):
            raise self.unsupported(f"Operator {self.tok.value!r} is")
        return left

    def parse_operand(self) -> Any:
        token = self.tok
        if token.kind == "op" and token.value == "(":
            self.pos += 1
            first = self.parse_or()
            if self.accept("op", ","):
                items = [first, self.parse_or()]
                while self.accept("op", ","):
                    items.append(self.parse_or())
                self.take("op", ")")
                return TupleExpr(items)
            self.take("op", ")")
            return first
        if token.kind == "op" and token.value == "-":
            self.pos += 1
            number = self.take("number")
            if isinstance(number.value, yson.YsonUint64):
                raise self.fail("a negative unsigned literal")
            return Literal(-number.value)
        if token.kind == "op" and token.value == "#":
            self.pos += 1
            return Literal(None)
        if token.kind == "number":
            self.pos += 1
            return Literal(token.value)
        if token.kind == "string":
            self.pos += 1
            return Literal(token.value)
        if token.kind == "kw" and token.value in ("true", "false", "null"):
            self.pos += 1
            return Literal({"true": True, "false": False, "null": None}[token.value])
        if token.kind == "bracket":
            self.pos += 1
            return ColumnRef(str(token.value))
        if token.kind == "ident":
            if self.tokens[self.pos + 1].text == "(":
                name = token.value.lower()
                if name != "is_null":
                    raise self.unsupported(f"Function {token.value}() is")
                self.pos += 2
                expr = self.parse_operand()
                self.take("op", ")")
                return IsNull(expr)
            self.pos += 1
            return ColumnRef(str(token.value))
        raise self.fail(f"unexpected {token.text or 'end of query'!r}")


def parse_query(text: str) -> Query:
    """Parse a ``select_rows`` query of the supported subset."""
    return _Parser(text).parse()


# --------------------------------------------------------------------------------------------------------------
# Compilation to Python predicates


_NUMERIC = frozenset(INT_RANGES) | {"double", "float"}  # integers and the integer-backed time types
_STRING = STRING_TYPES


def _kind_of_type(type_name: str | None) -> str | None:
    if type_name is None:
        return None
    if type_name in _NUMERIC:
        return "number"
    if type_name in _STRING:
        return "string"
    if type_name == "boolean":
        return "boolean"
    return "any"


def _kind_of_value(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, bytes):
        return "string"
    return "any"


def _rank(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, bytes):
        return (3, value)
    if isinstance(value, str):
        return (3, value.encode("utf-8"))
    return (4, yson.dumps(value))


class Compiler:
    """Turns an AST into ``row -> value`` callables, checking column names and types against the schema."""

    def __init__(self, column_types: dict[str, str], query_text: str) -> None:
        self.column_types = column_types
        self.query_text = query_text

    def column(self, name: str) -> bytes:
        """A referenced column; unknown ones fail as in YT."""
        if name not in self.column_types:
            raise YtError(f"Undefined reference {name!r}", attributes={"query": self.query_text})
        return name.encode("utf-8")

    def kind(self, node: Any) -> str | None:
        if isinstance(node, ColumnRef):
            self.column(node.name)
            return _kind_of_type(self.column_types[node.name])
        if isinstance(node, Literal):
            return _kind_of_value(node.value)
        if isinstance(node, (Compare, Between, InList, BoolOp, Not, IsNull)):
            return "boolean"
        return None

    def check_types(self, left: Any, right: Any) -> None:
        a, b = self.kind(left), self.kind(right)
        if a is not None and b is not None and "any" not in (a, b) and a != b:
            raise YtError(
                f"Type mismatch in expression: cannot compare {a} with {b}", attributes={"query": self.query_text}
            )

    def value(self, node: Any) -> Callable[[dict[bytes, Any]], Any]:
        if isinstance(node, ColumnRef):
            key = self.column(node.name)
            return lambda row: row.get(key)
        if isinstance(node, Literal):
            constant = node.value
            return lambda row: constant
        if isinstance(node, TupleExpr):
            raise YtError("A tuple can only be compared with a tuple", attributes={"query": self.query_text})
        if isinstance(node, Arith):
            return self._arith(node)
        return self.predicate(node)

    def _arith(self, node: Arith) -> Callable[[dict[bytes, Any]], Any]:
        """``+ - * / %`` with YT's rules: null in, null out; integers stay integers (``/`` and ``%`` truncate
        toward zero, as C++), division of an integer by zero is an error."""
        left, right, op, query = self.value(node.left), self.value(node.right), node.op, self.query_text

        def evaluate(row: dict[bytes, Any]) -> Any:
            a, b = left(row), right(row)
            if a is None or b is None:
                return None
            if isinstance(a, bool) or isinstance(b, bool) or isinstance(a, bytes) or isinstance(b, bytes):
                raise YtError(f"Type mismatch in expression: cannot apply {op!r}", attributes={"query": query})
            if op == "+":
                result = a + b
            elif op == "-":
                result = a - b
            elif op == "*":
                result = a * b
            elif isinstance(a, float) or isinstance(b, float):
                result = a / b if op == "/" else math.fmod(a, b)
            elif b == 0:
                raise YtError("Division by zero", attributes={"query": query})
            else:
                quotient = abs(int(a)) // abs(int(b)) * (1 if (a >= 0) == (b >= 0) else -1)
                result = quotient if op == "/" else int(a) - quotient * int(b)
            if isinstance(a, yson.YsonUint64) and isinstance(b, yson.YsonUint64) and not isinstance(result, float):
                return yson.YsonUint64(result % (1 << 64))
            return result

        return evaluate

    def _tuple_parts(self, node: Any) -> list[Any]:
        return node.items if isinstance(node, TupleExpr) else [node]

    def predicate(self, node: Any) -> Callable[[dict[bytes, Any]], bool]:
        """A row predicate for ``node``."""
        if isinstance(node, Compare):
            left_parts, right_parts = self._tuple_parts(node.left), self._tuple_parts(node.right)
            if len(left_parts) != len(right_parts):
                raise YtError("Tuples of different sizes are compared", attributes={"query": self.query_text})
            for a, b in zip(left_parts, right_parts, strict=True):
                self.check_types(a, b)
            lefts = [self.value(p) for p in left_parts]
            rights = [self.value(p) for p in right_parts]
            op = node.op

            def key_of(getters: list[Callable[[dict[bytes, Any]], Any]], row: dict[bytes, Any]) -> tuple:
                return tuple(_rank(g(row)) for g in getters)

            compare = _COMPARATORS[op]
            return lambda row: compare(key_of(lefts, row), key_of(rights, row))
        if isinstance(node, Between):
            self.check_types(node.expr, node.low)
            self.check_types(node.expr, node.high)
            expr, low, high = self.value(node.expr), self.value(node.low), self.value(node.high)
            negated = node.negated
            return lambda row: (_rank(low(row)) <= _rank(expr(row)) <= _rank(high(row))) != negated
        if isinstance(node, InList):
            parts = self._tuple_parts(node.expr)
            getters = [self.value(p) for p in parts]
            keys = set()
            for item in node.values:
                values = self._tuple_parts(item)
                if len(values) != len(parts):
                    raise YtError("Tuples of different sizes in IN", attributes={"query": self.query_text})
                for a, b in zip(parts, values, strict=True):
                    self.check_types(a, b)
                keys.add(tuple(_rank(v.value) for v in values))
            negated = node.negated
            return lambda row: (tuple(_rank(g(row)) for g in getters) in keys) != negated
        if isinstance(node, BoolOp):
            items = [self.predicate(i) for i in node.items]
            if node.op == "and":
                return lambda row: all(p(row) for p in items)
            return lambda row: any(p(row) for p in items)
        if isinstance(node, Not):
            inner = self.predicate(node.expr)
            return lambda row: not inner(row)
        if isinstance(node, IsNull):
            getter = self.value(node.expr)
            return lambda row: getter(row) is None
        if isinstance(node, ColumnRef):
            if self.column_types.get(node.name) != "boolean":
                raise YtError(
                    f"Column {node.name!r} is not boolean and cannot be a predicate",
                    attributes={"query": self.query_text},
                )
            key = self.column(node.name)
            return lambda row: bool(row.get(key))
        if isinstance(node, Literal):
            if not isinstance(node.value, bool):
                raise YtError("A constant predicate must be boolean", attributes={"query": self.query_text})
            constant = node.value
            return lambda row: constant
        raise YtError("Unsupported predicate", attributes={"query": self.query_text})


_COMPARATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def sort_key(columns: list[OrderItem]) -> Callable[[dict[bytes, Any]], Any]:
    """A key function for ``ORDER BY`` (mixed directions via an inverting wrapper)."""
    names = [(c.column.encode("utf-8"), c.descending) for c in columns]

    def key(row: dict[bytes, Any]) -> tuple:
        return tuple(_Desc(_rank(row.get(n))) if desc else _rank(row.get(n)) for n, desc in names)

    return key


class _Desc:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Desc) -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.value == other.value

    def __hash__(self) -> int:  # pragma: no cover - not used in sets
        return hash(self.value)


# --------------------------------------------------------------------------------------------------------------
# Range extraction for ordered tables


def conjuncts(node: Any) -> list[Any]:
    """Top-level AND operands."""
    if node is None:
        return []
    if isinstance(node, BoolOp) and node.op == "and":
        result: list[Any] = []
        for item in node.items:
            result.extend(conjuncts(item))
        return result
    return [node]


def integer_bounds(node: Any, column: str) -> tuple[set[int] | None, int | None, int | None]:
    """From top-level conjuncts: an explicit value set and inclusive ``[low, high]`` bounds for ``column``.

    Only narrows the scan; every row is still checked against the full predicate.
    """
    values: set[int] | None = None
    low: int | None = None
    high: int | None = None

    def is_col(n: Any) -> bool:
        return isinstance(n, ColumnRef) and n.name == column

    def const(n: Any) -> int | None:
        if isinstance(n, Literal) and isinstance(n.value, int) and not isinstance(n.value, bool):
            return int(n.value)
        return None

    for item in conjuncts(node):
        if isinstance(item, Compare) and not isinstance(item.left, TupleExpr):
            op, left, right = item.op, item.left, item.right
            if is_col(right) and const(left) is not None:
                left, right = right, left
                op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
            if is_col(left) and const(right) is not None:
                v = const(right)
                assert v is not None
                if op == "=":
                    values = {v} if values is None else values & {v}
                elif op == ">=":
                    low = v if low is None else max(low, v)
                elif op == ">":
                    low = v + 1 if low is None else max(low, v + 1)
                elif op == "<=":
                    high = v if high is None else min(high, v)
                elif op == "<":
                    high = v - 1 if high is None else min(high, v - 1)
        elif isinstance(item, Between) and not item.negated and is_col(item.expr):
            a, b = const(item.low), const(item.high)
            if a is not None and b is not None:
                low = a if low is None else max(low, a)
                high = b if high is None else min(high, b)
        elif isinstance(item, InList) and not item.negated and is_col(item.expr):
            consts = [const(v) for v in item.values]
            if all(c is not None for c in consts):
                found = {int(c) for c in consts if c is not None}
                values = found if values is None else values & found
    return values, low, high
