"""Wire formats: parameters, structured values and tabular rows in YSON (binary/text) and JSON.

Rows are held as ``dict[bytes, value]`` with YT strings as ``bytes`` (``yt.yson.loads(..., encoding=None)``);
structured values (parameters, attributes, command results) use ``str``.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yt.yson as yson

from spyt_queue.local.errors import YtError

try:  # The C bindings; ``yt.yson`` uses them too, this only skips a Python-level wrapper.
    import yt_yson_bindings as _bindings
except ImportError:  # pragma: no cover - the package requires the bindings
    _bindings = None

YSON_CONTENT_TYPES = {
    "binary": "application/x-yt-yson-binary",
    "text": "application/x-yt-yson-text",
    "pretty": "application/x-yt-yson-pretty",
}
SUPPORTED_FORMATS = ("yson", "json")


@dataclass(frozen=True)
class Format:
    """A parsed YT format specification (``<format=binary>yson``, ``<encode_utf8=%false>json``...)."""

    name: str
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def yson_format(self) -> str:
        """``binary``, ``text`` or ``pretty`` for YSON."""
        return str(self.attributes.get("format", "binary"))

    @property
    def is_binary_yson(self) -> bool:
        """Whether stored binary YSON rows can be sent as they are."""
        return self.name == "yson" and self.yson_format == "binary"

    @property
    def content_type(self) -> str:
        """The HTTP Content-Type of a body in this format."""
        if self.name in ("json", "web_json"):
            return "application/json"
        if self.name == "schemaful_dsv":
            return "text/tab-separated-values"
        return YSON_CONTENT_TYPES.get(self.yson_format, "application/x-yt-yson-binary")

    @property
    def encode_utf8(self) -> bool:
        """JSON ``encode_utf8`` (default true): YT byte strings map byte-per-code-point."""
        return bool(self.attributes.get("encode_utf8", True))


def parse_format(spec: Any, what: str = "format") -> Format:
    """Parse a format parameter value; unsupported formats fail with a YT error."""
    if spec is None:
        raise YtError(f"Missing {what}")
    if isinstance(spec, dict) and "$value" in spec:  # JSON-encoded YSON with attributes
        name, attributes = spec["$value"], dict(spec.get("$attributes") or {})
    else:
        name = spec
        attributes = dict(spec.attributes) if getattr(spec, "has_attributes", lambda: False)() else {}
    if isinstance(name, bytes):
        name = name.decode()
    if not isinstance(name, str):
        raise YtError(f"Error parsing {what}: expected a string, got {type(name).__name__}")
    name = str.__str__(name)
    attributes = {_to_str(k): v for k, v in attributes.items()}
    if what == "output_format" and name not in (*SUPPORTED_FORMATS, "schemaful_dsv", "web_json"):
        # CreateSchemafulWriterForFormat / CreateConsumerForFormat (yt/yt/library/formats/format.cpp): arrow, skiff,
        # protobuf, dsv, yamr... are static-table (read_table) formats only.
        raise YtError(f'Unsupported output format "{name}"', attributes={"format": name})
    if name == "schemaful_dsv" and what == "output_format":
        _schemaful_dsv_config(attributes)
        return Format(name, attributes)
    if name == "web_json" and what == "output_format":
        _web_json_config(attributes)
        return Format(name, attributes)
    if name not in SUPPORTED_FORMATS:
        raise YtError(
            f"Format {name!r} is not supported by the local server (supported: yson, json)", attributes={"format": name}
        )
    if name == "yson" and str(attributes.get("format", "binary")) not in YSON_CONTENT_TYPES:
        raise YtError(f"Invalid YSON format {attributes.get('format')!r}")
    return Format(str(name), attributes)


def _to_str(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# --------------------------------------------------------------------------------------------------------------
# Parameters and structured values


def parse_parameters(data: bytes, header_format: str) -> dict[str, Any]:
    """Parameters from ``X-YT-Parameters`` or a POST body in the header format (``yson`` or ``json``)."""
    if not data.strip():
        return {}
    try:
        if header_format == "json":
            value = yson.json_to_yson(json.loads(data))
        else:
            value = yson.loads(data)
    except Exception as exc:  # the YSON/JSON parsers raise several types
        raise YtError(f"Unable to parse parameters: {exc}") from None
    if not isinstance(value, dict):
        raise YtError("Parameters must be a map")
    return dict(value)


def header_format_of(header: str | None) -> str:
    """``yson`` or ``json`` from ``X-YT-Header-Format`` (``<format=text>yson``, ``json``); default ``json``."""
    if not header:
        return "json"
    text = header.strip()
    if text.endswith("yson"):
        return "yson"
    if text.endswith("json"):
        return "json"
    raise YtError(f"Unsupported header format {header!r}")


def encode_header_value(value: Any, header_format: str) -> str:
    """A structured value for a response header, in the request's header format."""
    if header_format == "yson":
        return yson.dumps(value, yson_format="text").decode("latin-1")
    return json.dumps(to_json(value, encode_utf8=True), ensure_ascii=True)


def to_json(value: Any, encode_utf8: bool = True) -> Any:
    """YSON value to YT's JSON representation (``$attributes``/``$value``, byte strings per ``encode_utf8``)."""
    attributes = None
    if getattr(value, "has_attributes", None) is not None and value.has_attributes():
        attributes = value.attributes
    if isinstance(value, bytes):
        result: Any = value.decode("latin-1") if encode_utf8 else value.decode("utf-8", "replace")
    elif isinstance(value, str):
        result = value.encode("utf-8").decode("latin-1") if encode_utf8 else str(value)
    elif isinstance(value, bool):
        result = bool(value)
    elif isinstance(value, int):
        result = int(value)
    elif isinstance(value, float):
        result = float(value)
    elif isinstance(value, dict):
        result = {_json_key(k, encode_utf8): to_json(v, encode_utf8) for k, v in value.items()}
    elif isinstance(value, (list, tuple)):
        result = [to_json(v, encode_utf8) for v in value]
    elif value is None or isinstance(value, yson.YsonEntity):
        result = None
    else:
        result = str(value)
    if attributes:
        return {"$attributes": to_json(attributes, encode_utf8), "$value": result}
    return result


def _json_key(key: Any, encode_utf8: bool) -> str:
    if isinstance(key, bytes):
        return key.decode("latin-1") if encode_utf8 else key.decode("utf-8", "replace")
    return key.encode("utf-8").decode("latin-1") if encode_utf8 else str(key)


def encode_structured(value: Any, fmt: Format) -> bytes:
    """A structured command result in ``fmt``."""
    if fmt.name in ("schemaful_dsv", "web_json"):
        raise YtError(f'Unsupported output format "{fmt.name}"', attributes={"format": fmt.name})
    if fmt.name == "json":
        # YTsaurus's JSON writer is compact: no spaces after ":" and ","
        return json.dumps(to_json(value, fmt.encode_utf8), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return yson.dumps(value, yson_format=fmt.yson_format)


def decode_structured(data: bytes, fmt: Format) -> Any:
    """A structured input value (``set``) in ``fmt``."""
    try:
        if fmt.name == "json":
            return _json_input_value(json.loads(data), fmt.encode_utf8, as_bytes=False)
        return yson.loads(data)
    except YtError:
        raise
    except Exception as exc:
        raise YtError(f"Error parsing input value: {exc}") from None


# --------------------------------------------------------------------------------------------------------------
# Tabular rows


def decode_rows(data: bytes, fmt: Format) -> list[dict[bytes, Any]]:
    """Rows of a tabular request body (binary/text YSON list fragment or JSON lines)."""
    if not data:
        return []
    try:
        if fmt.name == "yson":
            if _bindings is not None:
                rows = list(
                    _bindings.loads(data, yson_type="list_fragment", encoding=None, always_create_attributes=False)
                )
            else:  # pragma: no cover
                rows = list(yson.loads(data, yson_type="list_fragment", encoding=None))
        else:
            rows = [
                _json_input_value(json.loads(line), fmt.encode_utf8, as_bytes=True)
                for line in data.splitlines()
                if line.strip()
            ]
    except YtError:
        raise
    except Exception as exc:
        raise YtError(f"Error parsing input rows in format {fmt.name}: {exc}") from None
    for row in rows:
        if not isinstance(row, dict):
            raise YtError(f"Invalid row: expected a map, got {type(row).__name__}")
    return rows


def _json_input_value(value: Any, encode_utf8: bool, as_bytes: bool) -> Any:
    if isinstance(value, dict):
        if "$value" in value and set(value) <= {"$value", "$attributes", "$type"}:
            inner = _json_input_value(value["$value"], encode_utf8, as_bytes)
            if value.get("$type") == "uint64":
                inner = yson.YsonUint64(int(inner))
            attributes = value.get("$attributes")
            if attributes:
                return yson.to_yson_type(inner, attributes=_json_input_value(attributes, encode_utf8, as_bytes))
            return inner
        return {
            _json_input_value(k, encode_utf8, as_bytes): _json_input_value(v, encode_utf8, as_bytes)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_json_input_value(v, encode_utf8, as_bytes) for v in value]
    if isinstance(value, str):
        if encode_utf8:
            try:
                raw = value.encode("latin-1")
            except UnicodeEncodeError:
                raise YtError("Invalid JSON string: a code point above 255 with encode_utf8=%true") from None
        else:
            raw = value.encode("utf-8")
        return raw if as_bytes else raw.decode("utf-8", "replace")
    return value


def dumps_rows(rows: list[Any], fmt: Format) -> bytes:
    """Rows in ``fmt``: a YSON list fragment, JSON lines or schemaful DSV lines."""
    if not rows:
        return b""
    if fmt.name == "schemaful_dsv":
        return _schemaful_dsv(rows, fmt)
    if fmt.name == "yson":
        if _bindings is not None and fmt.yson_format == "binary":
            return _bindings.dumps(rows, yson_type="list_fragment", yson_format="binary")
        return yson.dumps(rows, yson_type="list_fragment", yson_format=fmt.yson_format)
    parts = [json.dumps(to_json(row, fmt.encode_utf8), ensure_ascii=False, separators=(",", ":")) for row in rows]
    return ("\n".join(parts) + "\n").encode("utf-8")


def loads_fragment(data: bytes) -> list[Any]:
    """Binary YSON list fragment to rows (the storage format)."""
    if not data:
        return []
    if _bindings is not None:
        return list(_bindings.loads(data, yson_type="list_fragment", encoding=None, always_create_attributes=False))
    return list(yson.loads(data, yson_type="list_fragment", encoding=None))  # pragma: no cover


def dumps_fragment(rows: list[Any]) -> bytes:
    """Rows to a binary YSON list fragment (the storage format)."""
    if _bindings is not None:
        return _bindings.dumps(rows, yson_type="list_fragment", yson_format="binary")
    return yson.dumps(rows, yson_type="list_fragment", yson_format="binary")  # pragma: no cover


def dumps_value(value: Any) -> bytes:
    """One binary YSON value (for ``any`` columns and data weight)."""
    return yson.dumps(value, yson_format="binary")


def encode_row_stream(
    rows: Iterable[Any], fmt: Format, batch: int = 2048, any_columns: Iterable[bytes] = ()
) -> Iterator[bytes]:
    """Encode rows in batches, for streaming responses of unbounded length (``any_columns``: the columns of type
    ``any`` or composite, for the web JSON field weight limit)."""
    if fmt.name == "web_json":
        return web_json_stream(_batches(rows, batch), fmt, any_columns)
    return _encode_batches(rows, fmt, batch)


def _batches(rows: Iterable[Any], batch: int) -> Iterator[list[Any]]:
    iterator = iter(rows)
    while chunk := list(itertools.islice(iterator, batch)):
        yield chunk


def _encode_batches(rows: Iterable[Any], fmt: Format, batch: int) -> Iterator[bytes]:
    buffer: list[Any] = []
    for row in rows:
        buffer.append(row)
        if len(buffer) >= batch:
            yield dumps_rows(buffer, fmt)
            buffer = []
    if buffer:
        yield dumps_rows(buffer, fmt)


# --------------------------------------------------------------------------------------------------------------
# Schemaful DSV (yt/yt/library/formats/schemaful_dsv_writer.cpp, TSchemafulDsvFormatConfig)


@dataclass(frozen=True)
class _DsvConfig:
    columns: tuple[bytes, ...] | None
    record_separator: bytes
    field_separator: bytes
    escaping: bool
    escaping_symbol: bytes
    missing_value_mode: str
    missing_value_sentinel: bytes
    header: bool


def _dsv_char(attributes: dict[str, Any], name: str, default: str) -> bytes:
    value = attributes.get(name, default)
    raw = value if isinstance(value, bytes) else str(value).encode("utf-8")
    if len(raw) != 1:
        raise YtError(f'Error parsing schemaful DSV format: "{name}" must be one character', code=2)
    return raw


def _schemaful_dsv_config(attributes: dict[str, Any]) -> _DsvConfig:
    """The writer config with YTsaurus's defaults (``\\n``, ``\\t``, escaping on with ``\\``, missing values
    fail); duplicate columns are refused as the config postprocessor refuses them."""
    columns = attributes.get("columns")
    names: tuple[bytes, ...] | None = None
    if columns is not None:
        names = tuple(c if isinstance(c, bytes) else str(c).encode("utf-8") for c in columns)
        seen: set[bytes] = set()
        for name in names:
            if name in seen:
                raise YtError(
                    f'Duplicate column name "{name.decode("utf-8", "replace")}" in schemaful DSV configuration'
                )
            seen.add(name)
    mode = attributes.get("missing_value_mode", "fail")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in ("fail", "skip_row", "print_sentinel"):
        raise YtError(f'Error parsing EMissingSchemafulDsvValueMode value "{mode}"')
    sentinel = attributes.get("missing_value_sentinel", "")
    return _DsvConfig(
        names,
        _dsv_char(attributes, "record_separator", "\n"),
        _dsv_char(attributes, "field_separator", "\t"),
        bool(attributes.get("enable_escaping", True)),
        _dsv_char(attributes, "escaping_symbol", "\\"),
        mode,
        sentinel if isinstance(sentinel, bytes) else str(sentinel).encode("utf-8"),
        bool(attributes.get("enable_column_names_header", False)),
    )


# EscapeForward of escape.h: the escaped byte is written after the escaping symbol as itself, except these.
_ESCAPE_FORWARD = {0: b"0", 9: b"t", 10: b"n", 13: b"r"}


def _dsv_escaper(config: _DsvConfig) -> Callable[[bytes], bytes]:
    """``EscapeAndWrite`` with the table of ``ConfigureEscapeTable``: only the record separator, the field separator
    and the escaping symbol are escaped (``\\r`` and NUL pass through unless one of them is a separator), in one pass
    over the value."""
    if not config.escaping:
        return lambda value: value
    stops = {config.record_separator, config.field_separator, config.escaping_symbol}
    table = {stop: config.escaping_symbol + _ESCAPE_FORWARD.get(stop[0], stop) for stop in stops}
    pattern = re.compile(b"[" + b"".join(re.escape(stop) for stop in sorted(stops)) + b"]")

    def escape(value: bytes) -> bytes:
        if pattern.search(value) is None:
            return value
        return pattern.sub(lambda match: table[match.group()], value)

    return escape


def _dsv_escape(value: bytes, config: _DsvConfig) -> bytes:
    """One value escaped as :func:`_dsv_escaper` escapes it."""
    return _dsv_escaper(config)(value)


def format_double(value: float) -> bytes:
    """A double as YTsaurus's ``WriteDouble`` prints it: Arcadia's ``FloatToString`` (shortest round-trip digits,
    decimal notation for exponents in [-10, 21), else ``d.ddde+XX``), with ``.`` appended when the text has neither
    a ``.`` nor an ``e`` (``42.``, ``inf.``, ``nan.``)."""
    shortest = repr(value)
    if "e" not in shortest and shortest[-1].isdigit():  # Python's decimal range (1e-4 <= |x| < 1e16) is within YT's
        return shortest.rstrip("0").encode("ascii")  # 100.0 -> 100., 0.5 -> 0.5
    if value != value:
        text = "nan"
    elif value in (float("inf"), float("-inf")):
        text = "inf" if value > 0 else "-inf"
    elif value == 0:
        text = "-0" if str(value).startswith("-") else "0"
    else:
        sign = value < 0
        mantissa, _, power = repr(abs(value)).partition("e")  # repr: the shortest digits that round-trip
        whole, _, fraction = mantissa.partition(".")
        all_digits = whole + fraction
        point = len(whole) + int(power or 0)  # decimal point position from the left
        text_digits = all_digits.lstrip("0")
        point -= len(all_digits) - len(text_digits)
        text_digits = text_digits.rstrip("0")
        scientific = point - 1
        if -10 <= scientific < 21:
            if point <= 0:
                body = "0." + "0" * (-point) + text_digits
            elif point >= len(text_digits):
                body = text_digits + "0" * (point - len(text_digits))
            else:
                body = text_digits[:point] + "." + text_digits[point:]
        else:
            mantissa = text_digits[0] + ("." + text_digits[1:] if len(text_digits) > 1 else "")
            body = f"{mantissa}e{'+' if scientific >= 0 else '-'}{abs(scientific)}"
        text = ("-" if sign else "") + body
    if "." not in text and "e" not in text:
        text += "."
    return text.encode("ascii")


def _dsv_value(value: Any, column: bytes, config: _DsvConfig) -> bytes:
    if isinstance(value, bool) or isinstance(value, yson.YsonBoolean):
        return b"true" if value else b"false"
    if isinstance(value, int):
        return str(int(value)).encode("ascii")
    if isinstance(value, float):
        return format_double(float(value))
    if isinstance(value, bytes):
        return _dsv_escape(value, config)
    if isinstance(value, str):
        return _dsv_escape(value.encode("utf-8"), config)
    kind = "composite" if isinstance(value, (list, dict)) else "any"
    raise YtError(
        f'Values of type "{kind}" are not supported by the chosen format',
        code=315,  # NTableClient::EErrorCode::FormatCannotRepresentRow
        attributes={"column": column.decode("utf-8", "replace")},
    )


#: Below this many rows the row writer is the faster (the columnar one pays ~0.1 ms of Arrow calls per table).
DSV_COLUMNAR_MIN_ROWS = 128


def _schemaful_dsv(rows: list[Any], fmt: Format, columnar_from: int = DSV_COLUMNAR_MIN_ROWS) -> bytes:
    """``TSchemafulWriterForSchemafulDsv``: the ``columns`` in their order (all columns of the row when absent),
    nulls and missing columns per ``missing_value_mode`` (``fail``: error, ``skip_row``, ``print_sentinel``).

    Whole columns at a time (:func:`_schemaful_dsv_columns`) from ``columnar_from`` rows when every column holds
    values of one plain kind; otherwise, and for every error, row by row (:func:`_schemaful_dsv_rows`), which gives
    the same bytes."""
    config = _schemaful_dsv_config(fmt.attributes)
    if config.columns and len(rows) >= columnar_from:  # an empty list: the row writer writes every column
        written = _schemaful_dsv_columns(rows, config)
        if written is not None:
            return written
    return _schemaful_dsv_rows(rows, config)


def _dsv_escape_passes(config: _DsvConfig) -> list[tuple[bytes, bytes]] | None:
    """The escaping of :func:`_dsv_escaper` as whole-column replacements, the escaping symbol's first; ``None`` when
    passes one after the other would escape a letter an earlier pass wrote (a separator that is the escaped form of
    another, such as a record separator ``n`` beside a newline field separator)."""
    if not config.escaping:
        return []
    symbol = config.escaping_symbol
    stops = {config.record_separator, config.field_separator, symbol}
    passes = []
    for stop in [symbol, *sorted(stops - {symbol})]:
        forward = _ESCAPE_FORWARD.get(stop[0], stop)
        if forward != stop and forward in stops:
            return None
        passes.append((stop, symbol + forward))
    return passes


def _dsv_column(values: list[Any], passes: list[tuple[bytes, bytes]]) -> Any:
    """One column as a ``large_binary`` Arrow array of its fields (nulls left null), or ``None`` when its values are
    not all of one plain kind (bytes, str, integers, booleans, doubles) or Arrow refuses them: the row writer then
    writes the table, and raises its errors."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kinds = set(map(type, values))
    if yson.YsonEntity in kinds:
        values = [None if type(value) is yson.YsonEntity else value for value in values]
    kinds -= {type(None), yson.YsonEntity}
    try:
        if kinds == {bytes} or kinds == {str}:
            array = pa.array(values, pa.large_binary() if bytes in kinds else pa.large_string())
            array = array.cast(pa.large_binary())
            data = array.buffers()[2]
            text = data.to_pybytes() if data is not None else b""
            for pattern, replacement in passes:  # a pass writes no stop of a later pass (_dsv_escape_passes)
                if pattern in text:
                    array = pc.replace_substring(array, pattern, replacement)
            return array
        if kinds and kinds <= {int, yson.YsonUint64}:
            try:
                array = pa.array(values, pa.int64())
            except (OverflowError, pa.ArrowInvalid):
                array = pa.array(values, pa.uint64())
        elif kinds == {bool}:
            array = pa.array(values, pa.bool_())
        elif kinds == {float}:
            return pa.array([None if v is None else format_double(v) for v in values], pa.large_binary())
        elif not kinds:
            return pa.nulls(len(values), pa.large_binary())
        else:
            return None
        return array.cast(pa.large_string()).cast(pa.large_binary())
    except (OverflowError, UnicodeError, pa.ArrowException):
        return None


def _schemaful_dsv_columns(rows: list[Any], config: _DsvConfig) -> bytes | None:
    """The columnar writer: each column gathered, escaped and printed whole with Arrow compute, then the columns
    joined with the field separator and the rows with the record separator. ``None`` when a column is not of one
    plain kind, a row is not a ``dict``, a null meets ``missing_value_mode=fail`` or the escaping cannot be done in
    passes: the row writer gives those tables' bytes and errors.

    Rows hold their columns under ``bytes`` names (the server's rows); a value missing there is looked up under the
    ``str`` name, as the row writer looks it up (first ``str``, then ``bytes``: they differ only for a row holding a
    column under both names)."""
    passes = _dsv_escape_passes(config)
    assert config.columns is not None
    if passes is None or not rows:
        return None if passes is None else b""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return None
    arrays = []
    for name in config.columns:
        try:
            values = [row.get(name) for row in rows]
        except AttributeError:  # a row that is not a dict
            return None
        text, position = name.decode("utf-8", "replace"), -1
        try:
            while True:  # each null: is the value under the str name? (a C-level scan between nulls)
                position = values.index(None, position + 1)
                other = rows[position].get(text)
                if other is not None:
                    values[position] = other
        except ValueError:
            pass
        array = _dsv_column(values, passes)
        if array is None:
            return None
        arrays.append(array)
    if any(array.null_count for array in arrays):
        if config.missing_value_mode == "fail":
            return None
        if config.missing_value_mode == "skip_row":
            keep = arrays[0].is_valid()
            for array in arrays[1:]:
                keep = pc.and_(keep, array.is_valid())
            arrays = [array.filter(keep) for array in arrays]
            if not len(arrays[0]):
                return b""
        else:
            sentinel = pa.scalar(config.missing_value_sentinel, pa.large_binary())
            arrays = [pc.fill_null(array, sentinel) if array.null_count else array for array in arrays]
    lines = pc.binary_join_element_wise(*arrays, pa.scalar(config.field_separator, pa.large_binary()))
    whole = pa.LargeListArray.from_arrays(pa.array([0, len(lines)], pa.int64()), lines)
    joined = pc.binary_join(whole, pa.scalar(config.record_separator, pa.large_binary()))[0]
    return joined.as_py() + config.record_separator


def _schemaful_dsv_rows(rows: list[Any], config: _DsvConfig) -> bytes:
    """The row-by-row writer: the reference the columnar writer must match, and its fallback."""
    escape = _dsv_escaper(config)
    sentinel, separator = config.missing_value_sentinel, config.field_separator
    lines: list[bytes] = []
    given = [(name, name.decode("utf-8", "replace")) for name in config.columns or ()]
    for row in rows:
        keys = given or [(k if isinstance(k, bytes) else k.encode(), k) for k in row]
        fields: list[bytes] = []
        for name, text in keys:
            value = row.get(text)
            if value is None:
                value = row.get(name)
            kind = type(value)
            if kind is bytes:
                fields.append(escape(value))
            elif kind is int:
                fields.append(b"%d" % value)
            elif kind is str:
                fields.append(escape(value.encode("utf-8")))
            elif value is None or isinstance(value, yson.YsonEntity):
                if config.missing_value_mode == "skip_row":
                    break
                if config.missing_value_mode == "fail":
                    raise YtError(f'Column "{name.decode("utf-8", "replace")}" is in schema but missing')
                fields.append(sentinel)
            else:
                fields.append(_dsv_value(value, name, config))
        else:
            lines.append(separator.join(fields))
    if not lines:
        return b""
    return config.record_separator.join(lines) + config.record_separator


# --------------------------------------------------------------------------------------------------------------
# Web JSON (yt/yt/library/formats/web_json_writer.cpp with the TJsonConsumer of yt/yt/core/json/json_writer.cpp)


@dataclass(frozen=True)
class _WebJsonConfig:
    max_selected_column_count: int
    field_weight_limit: int
    string_weight_limit: int
    max_all_column_names_count: int
    column_names: frozenset[bytes] | None
    value_format: str


_WEB_JSON_LIMITS = {
    "max_selected_column_count": 50,
    "field_weight_limit": 1024,
    "string_weight_limit": 200,
    "max_all_column_names_count": 2000,
}


def _web_json_config(attributes: dict[str, Any]) -> _WebJsonConfig:
    """``TWebJsonFormatConfig`` with its defaults and checks (limits >= 0, no duplicate ``column_names``)."""
    limits: dict[str, int] = {}
    for name, default in _WEB_JSON_LIMITS.items():
        value = attributes.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise YtError(f'Error parsing web_json format config: "{name}" must be an integer, got {value!r}')
        if value < 0:
            raise YtError(f'Error parsing web_json format config: "{name}" must be >= 0, got {value}')
        limits[name] = int(value)
    names: frozenset[bytes] | None = None
    if attributes.get("column_names") is not None:
        listed = [c if isinstance(c, bytes) else str(c).encode("utf-8") for c in attributes["column_names"]]
        seen: set[bytes] = set()
        for name in listed:
            if name in seen:
                text = name.decode("utf-8", "replace")
                raise YtError(f'Duplicate column name "{text}" in "column_names" parameter of web_json format config')
            seen.add(name)
        names = frozenset(listed)
    value_format = _to_str(attributes.get("value_format", "schemaless"))
    if value_format == "yql":
        raise YtError(
            'web_json "value_format=yql" is not supported by the local server (use the default "schemaless")',
            attributes={"value_format": value_format},
        )
    if value_format != "schemaless":
        raise YtError(f'Error parsing EWebJsonValueFormat value "{value_format}"')
    return _WebJsonConfig(column_names=names, value_format=value_format, **limits)


_JSON_ESCAPES = {ord('"'): '\\"', ord("\\"): "\\\\", 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}
_JSON_ESCAPES.update({c: f"\\u{c:04X}" for c in range(32) if c not in _JSON_ESCAPES})


def _json_string(raw: bytes) -> str:
    """A YT byte string as yajl writes it after the UTF-8 transcoder (each byte one code point; ``"``, ``\\`` and
    control characters escaped, ``\\uXXXX`` in upper case)."""
    return '"' + raw.decode("latin-1").translate(_JSON_ESCAPES) + '"'


def _typed(type_name: str, text: bytes, incomplete: bool = False) -> str:
    head = '{"$incomplete":true,' if incomplete else "{"
    return f'{head}"$type":"{type_name}","$value":{_json_string(text)}}}'


def _scalar_json(value: Any) -> str | None:
    """A scalar as ``TJsonConsumer`` with ``stringify`` and ``annotate_with_types`` writes it; None if not one."""
    if value is None or isinstance(value, yson.YsonEntity):
        return "null"
    if isinstance(value, (bool, yson.YsonBoolean)):
        return _typed("boolean", b"true" if value else b"false")
    if isinstance(value, yson.YsonUint64):
        return _typed("uint64", str(int(value)).encode("ascii"))
    if isinstance(value, int):
        return _typed("int64", str(int(value)).encode("ascii"))
    if isinstance(value, float):
        return _typed("double", format_double(float(value)).rstrip(b"."))  # FloatToString, no "." appended
    return None


def _node_json(value: Any) -> str:
    """A YSON node replayed into the consumer (``OnRaw``): attributes as ``$attributes``, keys starting with ``$``
    doubled, scalars typed, strings never cut."""
    attributes = value.attributes if getattr(value, "has_attributes", lambda: False)() else None
    if isinstance(value, (bytes, str)):
        body = _typed("string", value if isinstance(value, bytes) else value.encode("utf-8"))
    elif isinstance(value, dict):
        body = "{" + ",".join(f"{_json_key_text(k)}:{_node_json(v)}" for k, v in value.items()) + "}"
    elif isinstance(value, (list, tuple)):
        body = "[" + ",".join(_node_json(v) for v in value) + "]"
    else:
        body = _scalar_json(value) or "null"
    if not attributes:
        return body
    head = '{"$attributes":{' + ",".join(f"{_json_key_text(k)}:{_node_json(v)}" for k, v in attributes.items()) + "}"
    if body.startswith('{"$type"') or body.startswith('{"$incomplete"'):
        return head + "," + body[1:]  # a typed scalar continues the map that holds the attributes
    return head + ',"$value":' + body + "}"


def _json_key_text(key: Any) -> str:
    raw = key if isinstance(key, bytes) else str(key).encode("utf-8")
    return _json_string(b"$" + raw if raw.startswith(b"$") else raw)


class WebJsonWriter:
    """``TWriterForWebJson`` with the schemaless value writer, as ``CreateSchemafulWriterForFormat`` builds it for
    ``pull_queue``, ``pull_consumer`` and ``select_rows`` (system columns kept): one JSON document ``{"rows": [...],
    "incomplete_columns", "incomplete_all_column_names", "all_column_names"}``.

    Columns are accepted in the order first seen, up to ``max_selected_column_count`` (or exactly the
    ``column_names``); ``all_column_names`` lists up to ``max_all_column_names_count`` names, sorted. Strings longer
    than ``field_weight_limit`` bytes are cut (``$incomplete``); ``any`` and composite values whose binary YSON is
    longer are replaced by an empty incomplete ``any``.
    """

    def __init__(self, fmt: Format, any_columns: Iterable[bytes] = ()) -> None:
        self.config = _web_json_config(fmt.attributes)
        self.any_columns = frozenset(any_columns)
        self._accepted: set[bytes] = set()
        self._all_names: set[bytes] = set()
        self._incomplete_columns = False
        self._incomplete_all_names = False
        self._first = True

    def _register(self, name: bytes) -> bool:
        config = self.config
        if len(self._all_names) < config.max_all_column_names_count:
            self._all_names.add(name)
        elif name not in self._all_names:
            self._incomplete_all_names = True
        if config.column_names is not None:
            accepted = name in config.column_names
        elif len(self._accepted) < config.max_selected_column_count:
            self._accepted.add(name)
            accepted = True
        else:
            accepted = name in self._accepted
        if not accepted:
            self._incomplete_columns = True
        return accepted

    def _value(self, name: bytes, value: Any) -> str:
        limit = self.config.field_weight_limit
        if (
            name in self.any_columns
            or isinstance(value, (dict, list, tuple))
            or (getattr(value, "has_attributes", lambda: False)() and value.attributes)
        ):
            if value is None or (isinstance(value, yson.YsonEntity) and not value.attributes):
                return "null"
            if len(dumps_value(value)) > limit:
                return _typed("any", b"", incomplete=True)
            return _node_json(value)
        if isinstance(value, (bytes, str)):
            raw = value if isinstance(value, bytes) else value.encode("utf-8")
            return _typed("string", raw[:limit], incomplete=True) if len(raw) > limit else _typed("string", raw)
        return _scalar_json(value) or _node_json(value)

    def rows(self, rows: Iterable[dict[Any, Any]]) -> bytes:
        """The next rows of the ``rows`` list."""
        parts = []
        for row in rows:
            fields = []
            for key, value in row.items():
                name = key if isinstance(key, bytes) else str(key).encode("utf-8")
                if self._register(name):
                    fields.append(f"{_json_key_text(name)}:{self._value(name, value)}")
            parts.append("{" + ",".join(fields) + "}")
        if not parts:
            return b""
        text = ",".join(parts)
        if not self._first:
            text = "," + text
        self._first = False
        return text.encode("utf-8")

    @staticmethod
    def prefix() -> bytes:
        """The document's start."""
        return b'{"rows":['

    def suffix(self) -> bytes:
        """The document's end, after every row was written."""
        names = ",".join(_json_string(n) for n in sorted(self._all_names))
        return (
            f'],"incomplete_columns":"{str(self._incomplete_columns).lower()}",'
            f'"incomplete_all_column_names":"{str(self._incomplete_all_names).lower()}",'
            f'"all_column_names":[{names}]}}'
        ).encode()


def web_json_stream(
    batches: Iterable[list[dict[Any, Any]]], fmt: Format, any_columns: Iterable[bytes] = ()
) -> Iterator[bytes]:
    """Batches of rows as one web JSON document (the envelope is written even with no rows)."""
    writer = WebJsonWriter(fmt, any_columns)
    yield writer.prefix()
    for batch in batches:
        data = writer.rows(batch)
        if data:
            yield data
    yield writer.suffix()
