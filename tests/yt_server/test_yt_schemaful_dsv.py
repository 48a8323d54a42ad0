"""Queue reads in ``schemaful_dsv`` and the formats YTsaurus refuses for them, through ``yt.wrapper``.

``pull_queue``, ``pull_consumer`` and ``select_rows`` write rows with ``CreateSchemafulWriterForFormat``
(yt/yt/library/formats/format.cpp): YSON, JSON, schemaful DSV and web JSON; Arrow and Skiff are refused with
``Unsupported output format``. The expected bytes follow ``schemaful_dsv_writer.cpp`` and ``escape.h``: only the
record separator, the field separator and the escaping symbol are escaped (``\\n`` -> ``\\\\n``, ``\\t`` ->
``\\\\t``, ``\\\\`` -> ``\\\\\\\\``); ``\\r``, NUL and non-UTF-8 bytes pass through; doubles print as Arcadia's
``FloatToString`` with ``.`` appended to integral values (``42.``).
"""

from __future__ import annotations

import pytest
import yt.yson as yson
from conformance import create_consumer, create_queue, register_consumer
from yt.wrapper import SchemafulDsvFormat, YsonFormat
from yt.wrapper.errors import YtResponseError

SCHEMA = [
    {"name": "i", "type": "int64"},
    {"name": "u", "type": "uint64"},
    {"name": "d", "type": "double"},
    {"name": "b", "type": "boolean"},
    {"name": "s", "type": "string"},
]
TRICKY = b"tab\there\nnew\\back\rcr\x00nul\xff\xfeend"


@pytest.fixture
def dsv_queue(yt, yt_root):
    path = create_queue(yt, f"{yt_root}/q", schema=SCHEMA)
    yt.insert_rows(
        path,
        [
            {b"i": -42, b"u": yson.YsonUint64(2**64 - 1), b"d": 42.0, b"b": True, b"s": TRICKY},
            {b"i": 7, b"u": yson.YsonUint64(0), b"d": 1e300, b"b": False, b"s": None},
        ],
        format=YsonFormat(encoding=None),
    )
    return path


def _raw(stream) -> bytes:
    return stream.read() if hasattr(stream, "read") else b"".join(stream)


def test_pull_queue_schemaful_dsv_prints_and_escapes_as_ytsaurus(yt, dsv_queue):
    fmt = SchemafulDsvFormat(
        columns=["$row_index", "i", "u", "d", "b", "s"],
        attributes={"missing_value_mode": "print_sentinel", "missing_value_sentinel": "\\N"},
    )
    data = _raw(yt.pull_queue(dsv_queue, offset=0, partition_index=0, format=fmt, raw=True))
    assert data == (
        b"0\t-42\t18446744073709551615\t42.\ttrue\ttab\\there\\nnew\\\\back\rcr\x00nul\xff\xfeend\n"
        b"1\t7\t0\t1e+300\tfalse\t\\N\n"
    )


def test_schemaful_dsv_null_fails_by_default_and_skip_row_skips(yt, dsv_queue):
    with pytest.raises(YtResponseError) as failure:
        _raw(yt.pull_queue(dsv_queue, offset=0, partition_index=0, format="<columns=[i;s]>schemaful_dsv", raw=True))
    assert 'Column "s" is in schema but missing' in str(failure.value)
    skip = SchemafulDsvFormat(columns=["i", "s"], attributes={"missing_value_mode": "skip_row"})
    data = _raw(yt.pull_queue(dsv_queue, offset=0, partition_index=0, format=skip, raw=True))
    assert data == b"-42\ttab\\there\\nnew\\\\back\rcr\x00nul\xff\xfeend\n"


def test_select_rows_and_pull_consumer_in_schemaful_dsv(yt, yt_root, dsv_queue):
    fmt = SchemafulDsvFormat(columns=["aa", "b"])
    query = f"i + 1 as aa, b from [{dsv_queue}]"
    assert _raw(yt.select_rows(query, format=fmt, raw=True)) == b"-41\ttrue\n8\tfalse\n"
    consumer = create_consumer(yt, f"{yt_root}/c")
    register_consumer(yt, dsv_queue, consumer)
    fmt = SchemafulDsvFormat(columns=["$row_index", "i"])
    data = _raw(yt.pull_consumer(consumer, dsv_queue, offset=0, partition_index=0, format=fmt, raw=True))
    assert data == b"0\t-42\n1\t7\n"


def test_schemaful_dsv_refuses_duplicate_columns(yt, dsv_queue):
    with pytest.raises(YtResponseError, match="Duplicate column name"):
        _raw(yt.pull_queue(dsv_queue, offset=0, partition_index=0, format="<columns=[i;i]>schemaful_dsv", raw=True))


@pytest.mark.parametrize("fmt", ["arrow", "dsv"])
def test_queue_reads_refuse_read_table_formats(yt, dsv_queue, fmt):
    with pytest.raises(YtResponseError, match=f'Unsupported output format "{fmt}"'):
        _raw(yt.pull_queue(dsv_queue, offset=0, partition_index=0, format=fmt, raw=True))
    with pytest.raises(YtResponseError, match=f'Unsupported output format "{fmt}"'):
        _raw(yt.select_rows(f"* from [{dsv_queue}]", format=fmt, raw=True))


def test_a_long_pull_in_schemaful_dsv_has_the_bytes_of_its_rows_written_one_by_one(yt, yt_root):
    """Tens of thousands of rows over many stored chunks (the embedded server writes them whole columns at a time, in
    tables of thousands of rows): the bytes of the row-by-row writer, itself checked against YTsaurus's above, for the
    rows a YSON pull of the same range returns."""
    from spyt_queue.local.formats import _schemaful_dsv_config, _schemaful_dsv_rows

    path = create_queue(yt, f"{yt_root}/long", schema=SCHEMA)
    rows = [
        {
            b"i": i * (-1) ** i * 2**40,
            b"u": yson.YsonUint64(2**64 - 1 - i),
            b"d": i / 7,
            b"b": i % 3 == 0,
            b"s": None if i % 11 == 0 else (TRICKY if i % 5 == 0 else b"plain %d" % i),
        }
        for i in range(40_000)
    ]
    yt.insert_rows(path, rows, format=YsonFormat(encoding=None))
    attributes = {
        "columns": ["$row_index", "i", "u", "d", "b", "s"],
        "missing_value_mode": "print_sentinel",
        "missing_value_sentinel": "\\N",
    }
    fmt = SchemafulDsvFormat(
        columns=attributes["columns"], attributes={k: v for k, v in attributes.items() if k != "columns"}
    )
    offset = 0
    while offset < len(rows):
        data = _raw(yt.pull_queue(path, offset=offset, partition_index=0, format=fmt, max_row_count=30_000, raw=True))
        pulled = list(
            yson.loads(
                _raw(
                    yt.pull_queue(
                        path, offset=offset, partition_index=0, max_row_count=30_000, format=YsonFormat(), raw=True
                    )
                ),
                yson_type="list_fragment",
                encoding=None,
                always_create_attributes=False,
            )
        )
        assert pulled, offset
        assert data == _schemaful_dsv_rows(pulled, _schemaful_dsv_config(attributes)), offset
        offset += len(pulled)
