"""Queue reads in ``web_json`` through ``yt.wrapper`` (raw format), byte for byte as a YTsaurus proxy writes them.

``pull_queue``, ``pull_consumer`` and ``select_rows`` build their writer with ``CreateSchemafulWriterForFormat``
(yt/yt/library/formats/format.cpp), which for ``web_json`` is ``TWriterForWebJson`` with the schemaless value writer
and system columns kept (``web_json_writer.cpp``). The expected documents follow that writer and the JSON consumer
of ``yt/yt/core/json/json_writer.cpp`` (``stringify`` + ``annotate_with_types``): one JSON object ``{"rows": [...],
"incomplete_columns": "true"|"false", "incomplete_all_column_names": ..., "all_column_names": [sorted names]}``;
every scalar as ``{"$type": "int64"|"uint64"|"double"|"boolean"|"string", "$value": "<text>"}`` (doubles as
``FloatToString``: ``42``, ``0.5``, ``1e+300``), null as ``null``, keys starting with ``$`` doubled (``$$row_index``),
strings longer than ``field_weight_limit`` bytes cut with ``"$incomplete": true``, an ``any`` value whose binary
YSON is longer replaced by ``{"$incomplete": true, "$type": "any", "$value": ""}``, columns past
``max_selected_column_count`` (or outside ``column_names``) left out with ``incomplete_columns`` set.
"""

from __future__ import annotations

import json

import pytest
import yt.yson as yson
from conformance import create_consumer, create_queue, register_consumer
from yt.wrapper import YsonFormat
from yt.wrapper.errors import YtResponseError
from yt.wrapper.format import Format

SCHEMA = [
    {"name": "i", "type": "int64"},
    {"name": "u", "type": "uint64"},
    {"name": "d", "type": "double"},
    {"name": "b", "type": "boolean"},
    {"name": "s", "type": "string"},
    {"name": "y", "type": "any"},
]


def _web_json(**attributes) -> Format:
    return Format("web_json", attributes=attributes)


def _raw(stream) -> bytes:
    return stream.read() if hasattr(stream, "read") else b"".join(stream)


@pytest.fixture
def web_queue(yt, yt_root):
    path = create_queue(yt, f"{yt_root}/q", schema=SCHEMA)
    yt.insert_rows(
        path,
        [
            {
                b"i": -42,
                b"u": yson.YsonUint64(2**64 - 1),
                b"d": 42.0,
                b"b": True,
                b"s": b'q"\\\n\x01\xff',
                b"y": {b"$k": [1, yson.to_yson_type(b"v", attributes={b"a": 1.5})]},
            },
            {b"i": 7, b"u": yson.YsonUint64(0), b"d": 1e300, b"b": False, b"s": None, b"y": None},
        ],
        format=YsonFormat(encoding=None),
    )
    return path


ROW_0 = (
    '{"$$tablet_index":{"$type":"int64","$value":"0"},"$$row_index":{"$type":"int64","$value":"0"},'
    '"i":{"$type":"int64","$value":"-42"},"u":{"$type":"uint64","$value":"18446744073709551615"},'
    '"d":{"$type":"double","$value":"42"},"b":{"$type":"boolean","$value":"true"},'
    '"s":{"$type":"string","$value":"q\\"\\\\\\n\\u0001\u00ff"},'
    '"y":{"$$k":[{"$type":"int64","$value":"1"},{"$attributes":{"a":{"$type":"double","$value":"1.5"}},'
    '"$type":"string","$value":"v"}]}}'
)
ROW_1 = (
    '{"$$tablet_index":{"$type":"int64","$value":"0"},"$$row_index":{"$type":"int64","$value":"1"},'
    '"i":{"$type":"int64","$value":"7"},"u":{"$type":"uint64","$value":"0"},'
    '"d":{"$type":"double","$value":"1e+300"},"b":{"$type":"boolean","$value":"false"},"s":null,"y":null}'
)
ALL_NAMES = '["$row_index","$tablet_index","b","d","i","s","u","y"]'


def test_pull_queue_web_json_is_the_ytsaurus_document(yt, web_queue):
    data = _raw(yt.pull_queue(web_queue, offset=0, partition_index=0, format=_web_json(), raw=True))
    expected = (
        '{"rows":[' + ROW_0 + "," + ROW_1 + '],"incomplete_columns":"false",'
        '"incomplete_all_column_names":"false","all_column_names":' + ALL_NAMES + "}"
    )
    assert data.decode("utf-8") == expected
    json.loads(data)  # one valid JSON document


def test_web_json_field_weight_limit_cuts_strings_and_replaces_any(yt, web_queue):
    data = _raw(
        yt.pull_queue(
            web_queue, offset=0, partition_index=0, max_row_count=1, format=_web_json(field_weight_limit=3), raw=True
        )
    )
    row = json.loads(data)["rows"][0]
    assert row["s"] == {"$incomplete": True, "$type": "string", "$value": 'q"\\'}
    assert row["y"] == {"$incomplete": True, "$type": "any", "$value": ""}
    assert row["i"] == {"$type": "int64", "$value": "-42"}  # numbers are never cut
    assert b'"s":{"$incomplete":true,"$type":"string","$value":"q\\"\\\\"}' in data


def test_web_json_column_limits(yt, web_queue):
    data = _raw(
        yt.pull_queue(web_queue, offset=0, partition_index=0, format=_web_json(max_selected_column_count=3), raw=True)
    )
    document = json.loads(data)
    assert [list(row) for row in document["rows"]] == [["$$tablet_index", "$$row_index", "i"]] * 2
    assert document["incomplete_columns"] == "true"
    assert document["incomplete_all_column_names"] == "false"
    assert document["all_column_names"] == json.loads(ALL_NAMES)

    data = _raw(
        yt.pull_queue(
            web_queue,
            offset=0,
            partition_index=0,
            format=_web_json(column_names=["s", "$row_index"], max_all_column_names_count=2),
            raw=True,
        )
    )
    document = json.loads(data)
    assert [list(row) for row in document["rows"]] == [["$$row_index", "s"]] * 2
    assert document["incomplete_columns"] == "true"
    assert document["incomplete_all_column_names"] == "true"
    assert document["all_column_names"] == ["$row_index", "$tablet_index"]  # the first two seen, sorted


def test_select_rows_and_pull_consumer_in_web_json(yt, yt_root, web_queue):
    query = f"i + 1 as ii, s from [{web_queue}] where i > 0"
    data = _raw(yt.select_rows(query, format=_web_json(), raw=True))
    assert data == (
        b'{"rows":[{"ii":{"$type":"int64","$value":"8"},"s":null}],"incomplete_columns":"false",'
        b'"incomplete_all_column_names":"false","all_column_names":["ii","s"]}'
    )
    empty = _raw(yt.select_rows(f"i from [{web_queue}] where i > 100", format=_web_json(), raw=True))
    assert empty == (
        b'{"rows":[],"incomplete_columns":"false","incomplete_all_column_names":"false","all_column_names":[]}'
    )

    consumer = create_consumer(yt, f"{yt_root}/c")
    register_consumer(yt, web_queue, consumer)
    fmt = _web_json(column_names=["$row_index", "i"])
    data = _raw(yt.pull_consumer(consumer, web_queue, offset=1, partition_index=0, format=fmt, raw=True))
    assert data == (
        b'{"rows":[{"$$row_index":{"$type":"int64","$value":"1"},"i":{"$type":"int64","$value":"7"}}],'
        b'"incomplete_columns":"true","incomplete_all_column_names":"false",'
        b'"all_column_names":["$row_index","$tablet_index","b","d","i","s","u","y"]}'
    )


def test_web_json_config_errors(yt, web_queue):
    with pytest.raises(YtResponseError, match='Duplicate column name "s" in "column_names"'):
        _raw(yt.pull_queue(web_queue, offset=0, partition_index=0, format=_web_json(column_names=["s", "s"]), raw=True))
    with pytest.raises(YtResponseError, match="field_weight_limit"):
        _raw(yt.pull_queue(web_queue, offset=0, partition_index=0, format=_web_json(field_weight_limit=-1), raw=True))
