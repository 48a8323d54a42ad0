"""The HTTP API v4 command registry (descriptors as the YTsaurus driver registers them) and handlers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yt.yson as yson

from spyt_queue.local import ids, multiset, mutations, node_copy, producer, queues, reads, static_tables, tablets
from spyt_queue.local.cypress import check_outside_transaction
from spyt_queue.local.errors import RESOLVE_ERROR, YtError
from spyt_queue.local.formats import (
    Format,
    decode_rows,
    decode_structured,
    encode_row_stream,
    parse_format,
)
from spyt_queue.local.schema import convert_input_types
from spyt_queue.local.state import State, normalize_path
from spyt_queue.local.transactions import PREREQUISITE_CHECK_FAILED
from spyt_queue.local.ypath import RichPath, parse_rich_path, split_path

NULL, STRUCTURED, TABULAR = "null", "structured", "tabular"


@dataclass(frozen=True)
class Command:
    """A command of the HTTP API: its descriptor (``{name, input_type, output_type, is_volatile, is_heavy}`` of
    ``GET /api/v4``) and the handler that runs it."""

    name: str
    input_type: str
    output_type: str
    is_volatile: bool
    is_heavy: bool
    handler: Callable[[State, Request], Result] = field(repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The registry entry."""
        return {
            "name": self.name,
            "input_type": self.input_type,
            "output_type": self.output_type,
            "is_volatile": self.is_volatile,
            "is_heavy": self.is_heavy,
        }


@dataclass
class Request:
    """One command invocation."""

    name: str
    params: dict[str, Any]
    body: bytes
    header_format: str


@dataclass
class Result:
    """A command result: a structured value, or a stream of already-encoded tabular chunks."""

    value: Any = None
    chunks: Iterator[bytes] | None = None
    output_format: Format | None = None
    response_parameters: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------------------
# Parameter helpers


def _get(params: dict[str, Any], name: str, default: Any = None) -> Any:
    value = params.get(name, default)
    return None if isinstance(value, yson.YsonEntity) else value


def _required(params: dict[str, Any], name: str) -> Any:
    value = _get(params, name)
    if value is None:
        raise YtError(f"Error parsing parameters: missing required parameter {name!r}", attributes={"parameter": name})
    return value


def _int(params: dict[str, Any], name: str, default: int | None = None, required: bool = False) -> int | None:
    value = _required(params, name) if required else _get(params, name, default)
    if value is None:
        return None
    if isinstance(value, bool):
        raise YtError(f"Error parsing parameter {name!r}: expected an integer")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise YtError(f"Error parsing parameter {name!r}: expected an integer, got {value!r}") from None


def _bool(params: dict[str, Any], name: str, default: bool = False) -> bool:
    value = _get(params, name, default)
    if isinstance(value, str):
        if value.lower() in ("true", "1"):
            return True
        if value.lower() in ("false", "0"):
            return False
        raise YtError(f"Error parsing parameter {name!r}: expected a boolean, got {value!r}")
    return bool(value)


def _str(params: dict[str, Any], name: str) -> str:
    value = _required(params, name)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def _path(params: dict[str, Any], name: str = "path") -> RichPath:
    return parse_rich_path(_required(params, name), name)


def _plain_path(params: dict[str, Any], name: str = "path") -> str:
    return normalize_path(_path(params, name).path)


def _attributes_list(params: dict[str, Any]) -> list[str] | None:
    value = _get(params, "attributes")
    if value is None:
        return None
    if isinstance(value, dict):  # the {keys=[...]} attribute filter form
        if value.get("paths"):
            raise YtError('Attribute filters with "paths" are not supported by ytqueue local (use "keys")')
        value = value.get("keys", [])
    return [str(v) for v in value]


def _output_format(params: dict[str, Any]) -> Format:
    spec = _get(params, "output_format")
    return parse_format(spec, "output_format") if spec is not None else Format("json", {})


def _complex_type_mode(fmt: Format) -> str:
    """The input format's ``complex_type_mode`` (``named`` by default, as ``TTableParserAdapter`` reads it)."""
    mode = fmt.attributes.get("complex_type_mode", "named")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in ("named", "positional"):
        raise YtError(
            f'Error parsing input format: invalid complex_type_mode {mode!r}, expected one of "named", "positional"'
        )
    return mode


def _input_format(params: dict[str, Any], default: str = "yson") -> Format:
    spec = _get(params, "input_format")
    return parse_format(spec, "input_format") if spec is not None else Format(default, {})


def _tx(state: State, params: dict[str, Any]) -> Any:
    tx_id = _get(params, "transaction_id")
    return state.transaction_for(str(tx_id)) if tx_id is not None else None


def _master_tx_check(state: State, params: dict[str, Any]) -> None:
    """A Cypress command's transaction (it must be alive; ``ping_ancestor_transactions`` renews its ancestors, as
    the master does for a transactional request) and its ``prerequisite_transaction_ids`` (each alive, else 1000
    ``Prerequisite check failed``)."""
    tx_id = _get(params, "transaction_id")
    if tx_id is not None and str(tx_id) != "0-0-0-0":
        state.transactions.get(str(tx_id))
    for prerequisite in _get(params, "prerequisite_transaction_ids") or []:
        state.transactions.prerequisite(_text(prerequisite))
    for item in _get(params, "prerequisite_revisions") or []:
        _check_prerequisite_revision(state, item)


def _outside_transaction_check(state: State, params: dict[str, Any], removing: bool) -> None:
    """A table attribute YTsaurus changes only outside a master transaction, named with one: refused
    (``cypress.check_outside_transaction``)."""
    tx_id = _get(params, "transaction_id")
    if tx_id is None or str(tx_id) == "0-0-0-0":
        return
    path = _path(params).path
    _, attribute = split_path(path)
    if attribute is None:
        return
    with state.lock:
        if state.cypress.value_target(path) is not None:
            return
        node = state.cypress.find(path)
        if node is not None:
            check_outside_transaction(node, attribute, removing)


def _check_prerequisite_revision(state: State, item: Any) -> None:
    """A ``prerequisite_revisions`` item ``{path; revision}``: the node must exist and have that ``@revision``
    (1000 ``Prerequisite check failed``, as the master's prerequisite check)."""
    path = normalize_path(parse_rich_path(_required(item, "path"), "prerequisite path").path)
    expected = int(_required(item, "revision"))
    try:
        actual = int(state.get(path + "/@revision", None))
    except YtError as exc:
        if not exc.contains_code(RESOLVE_ERROR):
            raise
        raise YtError(
            f"Prerequisite check failed: failed to resolve path {path}",
            code=PREREQUISITE_CHECK_FAILED,
            inner_errors=[exc],
        ) from None
    if actual != expected:
        raise YtError(
            f"Prerequisite check failed: revision mismatch for path {path}: expected {expected}, found {actual}",
            code=PREREQUISITE_CHECK_FAILED,
        )


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _deadline(params: dict[str, Any]) -> float | None:
    """``deadline`` of ``start_transaction`` (an ISO 8601 instant, as ``datetime_to_string`` writes it)."""
    import datetime as dt

    value = _get(params, "deadline")
    if value is None:
        return None
    text = _text(value).replace("Z", "+00:00")
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise YtError(f'Error parsing "deadline": invalid instant {_text(value)!r}') from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()


# --------------------------------------------------------------------------------------------------------------
# Handlers


def _start_transaction(state: State, req: Request) -> Result:
    params = req.params
    kind = str(_get(params, "type", "master"))
    parent_id = None
    for name in ("parent_id", "transaction_id"):
        parent = _get(params, name)
        if parent is not None and _text(parent) != "0-0-0-0":
            parent_id = _text(parent)
    attributes = _get(params, "attributes") or {}
    tx = state.transactions.start(
        kind,
        _int(params, "timeout"),
        {str(k): v for k, v in dict(attributes).items()},
        parent_id=parent_id,
        prerequisite_ids=[_text(p) for p in _get(params, "prerequisite_transaction_ids") or []],
        deadline=_deadline(params),
    )
    return Result({"transaction_id": tx.id})


def _ping_transaction(state: State, req: Request) -> Result:
    state.transactions.ping(_str(req.params, "transaction_id"), _bool(req.params, "ping_ancestor_transactions"))
    return Result({})


def _commit_transaction(state: State, req: Request) -> Result:
    tx_id = _str(req.params, "transaction_id")
    prerequisites = [_text(p) for p in _get(req.params, "prerequisite_transaction_ids") or []]
    if prerequisites:
        try:
            for prerequisite in prerequisites:
                state.transactions.prerequisite(prerequisite)
        except YtError:
            # A commit whose prerequisites fail aborts the transaction (test_prerequisite_transactions_on_commit).
            if state.transactions.find(tx_id) is not None:
                state.transactions.finish(tx_id)
            raise
    tx = state.transactions.finish(tx_id)
    if tx.type == "master":
        return Result({})
    commit_ts = state.commit(tx)
    return Result({"primary_commit_timestamp": yson.YsonUint64(commit_ts), "commit_timestamps": {}})


def _abort_transaction(state: State, req: Request) -> Result:
    tx_id = _str(req.params, "transaction_id")
    try:
        state.transactions.finish(tx_id)
    except YtError:
        # The master answers {} for an absent transaction; tablet ones live in the proxy's sticky pool, which
        # reports them as unknown.
        try:
            is_master = ids.object_type_of(tx_id) in (ids.TYPE_TRANSACTION, ids.TYPE_NESTED_TRANSACTION)
        except ValueError:
            is_master = False
        if not is_master:
            raise
    return Result({})


def _generate_timestamp(state: State, req: Request) -> Result:
    return Result({"timestamp": yson.YsonUint64(state.timestamps.generate())})


def _create(state: State, req: Request) -> Result:
    params = req.params
    _master_tx_check(state, params)
    node_type = _str(params, "type")
    path = _new_node_path(state, params, "path")
    attributes = _get(params, "attributes") or {}
    ignore_existing, force = _bool(params, "ignore_existing"), _bool(params, "force")
    if _bool(params, "lock_existing") and not ignore_existing:
        raise YtError('Cannot specify "lock_existing" without "ignore_existing"')
    if ignore_existing and force:
        raise YtError('Cannot specify both "ignore_existing" and "force" options simultaneously')
    if _bool(params, "ignore_type_mismatch"):
        if not ignore_existing:
            raise YtError('Cannot specify "ignore_type_mismatch" without "ignore_existing"')
        if state.exists(path):  # any existing node is kept, whatever its type
            return Result({"node_id": state.get(path + "/@id", None)})
    if node_type == "link":  # create("link", path, attributes={"target_path": ...}), as the link command does
        attributes = {str(k): v for k, v in dict(attributes).items()}
        target = attributes.pop("target_path", None)
        if target is None:
            raise YtError('Error creating link: missing required attribute "target_path"')
        node_id = state.link(
            normalize_path(parse_rich_path(target, "target_path").path),
            path,
            _bool(params, "recursive"),
            _bool(params, "ignore_existing"),
            _bool(params, "force"),
            attributes,
        )
        return Result({"node_id": node_id})
    node_id = state.create(
        node_type,
        path,
        _bool(params, "recursive"),
        _bool(params, "ignore_existing"),
        _bool(params, "force"),
        dict(attributes),
    )
    return Result({"node_id": node_id})


def _new_node_path(state: State, params: dict[str, Any], name: str) -> str:
    """The path a node is to be created at. A trailing slash names a child with an empty name: its parent must
    exist (else the resolve error), and the empty name is a YPath error (test_invalid_link_path_yt_23838)."""
    raw = _path(params, name).path
    if len(raw) > 2 and raw.endswith("/") and not raw.endswith("\\/"):
        if not _bool(params, "recursive"):
            state.get(raw.rstrip("/") + "/@id", None)  # the resolve error of a missing parent
        raise YtError('Expected "literal" in YPath but found end-of-string', attributes={"path": raw})
    return normalize_path(raw)


def _link(state: State, req: Request) -> Result:
    params = req.params
    _master_tx_check(state, params)
    node_id = state.link(
        _plain_path(params, "target_path"),
        _new_node_path(state, params, "link_path"),
        _bool(params, "recursive"),
        _bool(params, "ignore_existing"),
        _bool(params, "force"),
        dict(_get(params, "attributes") or {}),
    )
    return Result({"node_id": node_id})


def _get_command(state: State, req: Request) -> Result:
    _master_tx_check(state, req.params)
    value = state.get(_path(req.params).path, _attributes_list(req.params))
    return Result(value if _bool(req.params, "return_only_value") else {"value": value})


def _list_command(state: State, req: Request) -> Result:
    _master_tx_check(state, req.params)
    value = state.list(_path(req.params).path, _attributes_list(req.params))
    max_size = _get(req.params, "max_size")
    if max_size is not None and len(value) > int(max_size):  # TListNodeOptions::MaxSize: cut, marked incomplete
        value = yson.to_yson_type(list(value)[: int(max_size)], attributes={"incomplete": True})
    return Result(value if _bool(req.params, "return_only_value") else {"value": value})


def _exists(state: State, req: Request) -> Result:
    _master_tx_check(state, req.params)
    return Result({"value": state.exists(_path(req.params).path)})


def _remove(state: State, req: Request) -> Result:
    _master_tx_check(state, req.params)
    _outside_transaction_check(state, req.params, removing=True)
    # TRemoveNodeOptions::Recursive is true by default (yt.wrapper always sends it).
    state.remove(_path(req.params).path, _bool(req.params, "recursive", True), _bool(req.params, "force"))
    return Result({})


def _set(state: State, req: Request) -> Result:
    _master_tx_check(state, req.params)
    _outside_transaction_check(state, req.params, removing=False)
    value = decode_structured(req.body, _input_format(req.params))
    state.set(_path(req.params).path, value, _bool(req.params, "recursive"), _bool(req.params, "force"))
    return Result({})


def _multiset_attributes(state: State, req: Request) -> Result:
    _master_tx_check(state, req.params)
    _outside_transaction_check(state, req.params, removing=False)
    values = decode_structured(req.body, _input_format(req.params))
    multiset.multiset_attributes(state, _path(req.params).path, values)
    return Result({})


def _modify_rows(state: State, req: Request, delete: bool) -> Result:
    params = req.params
    path = _plain_path(params)
    fmt = _input_format(params)
    rows = decode_rows(req.body, fmt)
    mode = _complex_type_mode(fmt)
    update = _bool(params, "update")
    tx = _tx(state, params)
    atomicity = str(_get(params, "atomicity") or "full")
    with state.lock:
        node = state.dynamic_table(path)
        table = node.table
        assert table is not None
        table_atomicity = str(node.attrs.get("atomicity", "full"))
    if atomicity != table_atomicity:  # the tablet node's check of every write request
        raise YtError(f'Invalid atomicity mode: "{atomicity}" instead of "{table_atomicity}"')
    if atomicity != "full":
        raise YtError(f'Writes with atomicity "{atomicity}" are not supported by ytqueue local')
    convert_input_types(table.schema, rows, fmt.attributes)
    if table.ordered:
        if delete:
            raise YtError(f"Table {node.path} is not sorted")
        table.schema.validate_rows(rows, node.path, ordered=True, complex_type_mode=mode)
    else:
        table.schema.validate_rows(
            rows, node.path, ordered=False, keys_only=delete, partial=update, complex_type_mode=mode
        )

    def apply(target: Any) -> None:
        if table.ordered:
            state.buffer_ordered(target, node, rows)
        else:
            state.buffer_sorted(target, node, rows, delete=delete, update=update)

    state.write(tx, apply)
    return Result({})


def _insert_rows(state: State, req: Request) -> Result:
    return _modify_rows(state, req, delete=False)


def _delete_rows(state: State, req: Request) -> Result:
    return _modify_rows(state, req, delete=True)


def _trim_rows(state: State, req: Request) -> Result:
    params = req.params
    tablets.trim_rows(
        state,
        _plain_path(params),
        _int(params, "tablet_index", required=True) or 0,
        _int(params, "trimmed_row_count", required=True) or 0,
    )
    return Result({})


def _select_rows(state: State, req: Request) -> Result:
    params = req.params
    fmt = _output_format(params)
    chunks = reads.select(
        state,
        _str(params, "query"),
        fmt,
        _tx(state, params),
        _get(params, "timestamp"),
        _int(params, "input_row_limit"),
        _int(params, "output_row_limit"),
        _bool(params, "fail_on_incomplete_result", True),
    )
    return Result(chunks=chunks, output_format=fmt)


def _lookup_rows(state: State, req: Request) -> Result:
    params = req.params
    fmt = _output_format(params)
    input_format = _input_format(params)
    keys = decode_rows(req.body, input_format)
    column_names = _get(params, "column_names")
    chunks = reads.lookup(
        state,
        _plain_path(params),
        keys,
        fmt,
        _tx(state, params),
        _get(params, "timestamp"),
        [str(c) for c in column_names] if column_names is not None else None,
        _bool(params, "keep_missing_rows"),
        input_format.attributes,
    )
    return Result(chunks=chunks, output_format=fmt)


def _tablet_action(action: str) -> Callable[[State, Request], Result]:
    def handler(state: State, req: Request) -> Result:
        params = req.params
        chosen = action
        if action == "mount" and _bool(params, "freeze"):
            chosen = "mount_frozen"
        tablets.set_tablet_state(
            state, _plain_path(params), chosen, _int(params, "first_tablet_index"), _int(params, "last_tablet_index")
        )
        return Result({})

    return handler


def _reshard_table(state: State, req: Request) -> Result:
    params = req.params
    if _bool(params, "enable_slicing"):  # pivots from chunk sizes: there are no chunk sizes here
        raise YtError('reshard_table with "enable_slicing" is not supported by ytqueue local')
    tablets.reshard(
        state,
        _plain_path(params),
        _int(params, "tablet_count"),
        _get(params, "pivot_keys"),
        _get(params, "trimmed_row_counts"),
        _int(params, "first_tablet_index"),
        _int(params, "last_tablet_index"),
        _get(params, "cumulative_data_weights"),
    )
    return Result({})


def _get_tablet_infos(state: State, req: Request) -> Result:
    indexes = _required(req.params, "tablet_indexes")
    return Result(tablets.tablet_infos(state, _plain_path(req.params), [int(i) for i in indexes]))


def _register(state: State, req: Request) -> Result:
    params = req.params
    partitions = _get(params, "partitions")
    queues.register(
        state,
        _path(params, "queue_path"),
        _path(params, "consumer_path"),
        _bool(params, "vital"),
        list(partitions) if partitions is not None else None,
    )
    return Result({})


def _unregister(state: State, req: Request) -> Result:
    queues.unregister(state, _path(req.params, "queue_path"), _path(req.params, "consumer_path"))
    return Result({})


def _list_registrations(state: State, req: Request) -> Result:
    params = req.params
    queue = _path(params, "queue_path") if _get(params, "queue_path") is not None else None
    consumer = _path(params, "consumer_path") if _get(params, "consumer_path") is not None else None
    return Result(queues.list_registrations(state, queue, consumer))


def _pull(with_consumer: bool) -> Callable[[State, Request], Result]:
    def handler(state: State, req: Request) -> Result:
        params = req.params
        fmt = _output_format(params)
        consumer = _path(params, "consumer_path") if with_consumer else None
        chunks, response_parameters = queues.pull(
            state,
            _path(params, "queue_path"),
            _int(params, "offset", required=not with_consumer),
            _int(params, "partition_index", required=True) or 0,
            _int(params, "max_row_count"),
            _int(params, "max_data_weight"),
            _int(params, "data_weight_per_row_hint"),
            fmt,
            consumer,
        )
        return Result(chunks=chunks, output_format=fmt, response_parameters=response_parameters)

    return handler


def _advance(state: State, req: Request) -> Result:
    params = req.params
    queues.advance(
        state,
        _path(params, "consumer_path"),
        _path(params, "queue_path"),
        _int(params, "partition_index", required=True) or 0,
        _int(params, "old_offset"),
        _int(params, "new_offset", required=True) or 0,
        _bool(params, "client_side", True),
        _tx(state, params),
    )
    return Result({})


def _execute_batch(state: State, req: Request) -> Result:
    """``execute_batch``: sub-requests ``{command, parameters, input}`` run one after another (the driver runs up to
    ``concurrency`` at once; here the state lock serialises them anyway). Each answer is ``{output}`` or ``{error}``;
    a failing part does not stop the others, as in ``TExecuteBatchCommand``."""
    requests = _required(req.params, "requests")
    if not isinstance(requests, list):
        raise YtError('Error parsing parameters: "requests" must be a list')
    concurrency = _int(req.params, "concurrency", 50)
    if concurrency is None or concurrency <= 0:  # the YSON struct's validator of TExecuteBatchOptions
        raise YtError(
            "Error parsing command arguments",
            inner_errors=[
                YtError(
                    "Validation failed at /concurrency", inner_errors=[YtError(f"Expected > 0, found {concurrency}")]
                )
            ],
        )
    return Result({"results": [_batch_part(state, part, req.header_format) for part in requests]})


def _batch_part(state: State, part: Any, header_format: str) -> dict[str, Any]:
    try:
        if not isinstance(part, dict) or _get(part, "command") is None:
            raise YtError('Error parsing batch request: missing required parameter "command"')
        name = str(part["command"])
        descriptor = BY_NAME.get(name)
        if descriptor is None or name == "execute_batch":
            raise YtError(f"Unknown command {name!r}", attributes={"command": name})
        if descriptor.output_type not in (NULL, STRUCTURED):
            raise YtError(
                f'Command "{name}" cannot be part of a batch since it has inappropriate output type '
                f'"{descriptor.output_type}"'
            )
        if descriptor.input_type == TABULAR:
            raise YtError(f'Command "{name}" with tabular input in a batch is not supported by ytqueue local')
        params = dict(_get(part, "parameters") or {})
        body = b""
        if descriptor.input_type == STRUCTURED:
            if "input" not in part:
                raise YtError(f'Command "{name}" requires input')
            params["input_format"] = yson.to_yson_type("yson", attributes={"format": "binary"})
            body = yson.dumps(part["input"], yson_format="binary")
        result = execute(state, Request(name, params, body, header_format))
        return {"output": result.value} if descriptor.output_type == STRUCTURED else {}
    except YtError as error:
        return {"error": error.to_dict()}


def _create_producer_session(state: State, req: Request) -> Result:
    params = req.params
    result = producer.create_session(
        state,
        _path(params, "producer_path"),
        _path(params, "queue_path"),
        _str(params, "session_id"),
        _get(params, "user_meta"),
    )
    result["user_meta"] = producer.as_structured(result["user_meta"])
    return Result(result)


def _remove_producer_session(state: State, req: Request) -> Result:
    params = req.params
    producer.remove_session(
        state, _path(params, "producer_path"), _path(params, "queue_path"), _str(params, "session_id")
    )
    return Result({})


def _push_producer(state: State, req: Request) -> Result:
    params = req.params
    fmt = _input_format(params)
    rows = decode_rows(req.body, fmt)
    result = producer.push(
        state,
        _path(params, "producer_path"),
        _path(params, "queue_path"),
        _str(params, "session_id"),
        _int(params, "epoch", required=True) or 0,
        rows,
        _int(params, "sequence_number"),
        _get(params, "user_meta"),
        _tx(state, params),
        complex_type_mode=_complex_type_mode(fmt),
    )
    return Result(result)


def _write_table(state: State, req: Request) -> Result:
    params = req.params
    _master_tx_check(state, params)
    path = _path(params)
    fmt = _input_format(params)
    static_tables.write_table(
        state,
        state.local_path(path),
        decode_rows(req.body, fmt),
        _bool(path.attributes, "append"),
        _complex_type_mode(fmt),
    )
    return Result({})


def _read_table(state: State, req: Request) -> Result:
    params = req.params
    _master_tx_check(state, params)
    fmt = _output_format(params)
    path = _path(params)
    if path.attributes.get("ranges") or _get(params, "control_attributes"):
        raise YtError("read_table ranges and control attributes are not supported by ytqueue local")
    rows = static_tables.read_table(state, state.local_path(path))
    return Result(
        chunks=encode_row_stream(iter(rows), fmt),
        output_format=fmt,
        response_parameters={"start_row_index": 0, "approximate_row_count": len(rows)},
    )


def _alter_table(state: State, req: Request) -> Result:
    params = req.params
    _master_tx_check(state, params)
    for name in ("schema_id", "upstream_replica_id", "schema_modification", "replication_progress"):
        if _get(params, name) is not None:
            raise YtError(f'alter_table "{name}" is not supported by ytqueue local (only "dynamic" and "schema")')
    dynamic = _get(params, "dynamic")
    static_tables.alter_table(
        state, _plain_path(params), None if dynamic is None else _bool(params, "dynamic"), _get(params, "schema")
    )
    return Result({})


def _concatenate(state: State, req: Request) -> Result:
    params = req.params
    _master_tx_check(state, params)
    destination = _path(params, "destination_path")
    sources = [state.local_path(parse_rich_path(p, "source_paths")) for p in _required(params, "source_paths")]
    static_tables.concatenate(state, sources, state.local_path(destination), _bool(destination.attributes, "append"))
    return Result({})


def _copy(state: State, req: Request) -> Result:
    params = req.params
    _master_tx_check(state, params)
    node_id = node_copy.copy(
        state,
        _path(params, "source_path").path,  # as given: node_copy refuses a malformed source
        _plain_path(params, "destination_path"),
        _bool(params, "recursive"),
        _bool(params, "force"),
        _bool(params, "ignore_existing"),
        _bool(params, "preserve_expiration_time"),
        _bool(params, "preserve_expiration_timeout"),
        tuple(name for name in ("creation_time", "modification_time") if _bool(params, f"preserve_{name}")),
    )
    return Result({"node_id": node_id})


def _lock(state: State, req: Request) -> Result:
    """``lock``: checked (a master transaction, an existing node, a known mode) and answered, but not enforced:
    master transactions give no isolation here, so a lock protects nothing (yt.wrapper's reads take a snapshot
    lock and read the locked node by its id)."""
    params = req.params
    tx_id = _get(params, "transaction_id")
    if tx_id in (None, "0-0-0-0"):
        raise YtError("Operation cannot be performed outside of a transaction")
    state.transactions.get(str(tx_id))
    mode = str(_get(params, "mode", "exclusive"))
    if mode not in ("snapshot", "shared", "exclusive"):
        raise YtError(f'Error parsing ELockMode value "{mode}"')
    with state.lock:
        node = state.cypress.resolve(_plain_path(params))
    return Result({"lock_id": state.ids.generate(ids.TYPE_LOCK), "node_id": node.id, "revision": 0})


# Every command: its descriptor as the YTsaurus driver registers it (values from yt/yt/client/driver/driver.cpp,
# API v4) and its handler, in one table as the driver's REGISTER_COMMAND does.
COMMANDS = [
    Command("start_transaction", NULL, STRUCTURED, True, False, _start_transaction),
    Command("ping_transaction", NULL, STRUCTURED, True, False, _ping_transaction),
    Command("commit_transaction", NULL, STRUCTURED, True, False, _commit_transaction),
    Command("abort_transaction", NULL, STRUCTURED, True, False, _abort_transaction),
    Command("generate_timestamp", NULL, STRUCTURED, False, False, _generate_timestamp),
    Command("create", NULL, STRUCTURED, True, False, _create),
    Command("get", NULL, STRUCTURED, False, False, _get_command),
    Command("list", NULL, STRUCTURED, False, False, _list_command),
    Command("exists", NULL, STRUCTURED, False, False, _exists),
    Command("remove", NULL, STRUCTURED, True, False, _remove),
    Command("set", STRUCTURED, STRUCTURED, True, False, _set),
    Command("multiset_attributes", STRUCTURED, STRUCTURED, True, False, _multiset_attributes),
    Command("link", NULL, STRUCTURED, True, False, _link),
    Command("insert_rows", TABULAR, STRUCTURED, True, True, _insert_rows),
    Command("delete_rows", TABULAR, STRUCTURED, True, True, _delete_rows),
    Command("trim_rows", NULL, STRUCTURED, True, True, _trim_rows),
    Command("select_rows", NULL, TABULAR, False, True, _select_rows),
    Command("lookup_rows", TABULAR, TABULAR, False, True, _lookup_rows),
    Command("mount_table", NULL, STRUCTURED, True, False, _tablet_action("mount")),
    Command("unmount_table", NULL, STRUCTURED, True, False, _tablet_action("unmount")),
    Command("remount_table", NULL, STRUCTURED, True, False, _tablet_action("remount")),
    Command("freeze_table", NULL, STRUCTURED, True, False, _tablet_action("freeze")),
    Command("unfreeze_table", NULL, STRUCTURED, True, False, _tablet_action("unfreeze")),
    Command("reshard_table", NULL, STRUCTURED, True, False, _reshard_table),
    Command("get_tablet_infos", NULL, STRUCTURED, True, False, _get_tablet_infos),
    Command("register_queue_consumer", NULL, STRUCTURED, True, False, _register),
    Command("unregister_queue_consumer", NULL, STRUCTURED, True, False, _unregister),
    Command("list_queue_consumer_registrations", NULL, STRUCTURED, False, False, _list_registrations),
    Command("pull_queue", NULL, TABULAR, False, True, _pull(False)),
    Command("pull_consumer", NULL, TABULAR, False, True, _pull(True)),
    Command("pull_queue_consumer", NULL, TABULAR, False, True, _pull(True)),
    Command("advance_consumer", NULL, STRUCTURED, True, False, _advance),
    Command("advance_queue_consumer", NULL, STRUCTURED, True, False, _advance),
    Command("create_queue_producer_session", NULL, STRUCTURED, True, False, _create_producer_session),
    Command("remove_queue_producer_session", NULL, STRUCTURED, True, False, _remove_producer_session),
    # The driver declares no input; yt.wrapper forces "tabular" for it (YT-23538) and sends rows in the body.
    Command("push_queue_producer", NULL, STRUCTURED, True, False, _push_producer),
    Command("execute_batch", NULL, STRUCTURED, True, False, _execute_batch),
    Command("write_table", TABULAR, NULL, True, True, _write_table),
    Command("read_table", NULL, TABULAR, False, True, _read_table),
    Command("alter_table", NULL, NULL, True, False, _alter_table),
    Command("concatenate", NULL, NULL, True, False, _concatenate),
    Command("copy", NULL, STRUCTURED, True, False, _copy),
    Command("lock", NULL, STRUCTURED, True, False, _lock),
]
BY_NAME = {c.name: c for c in COMMANDS}


def execute(state: State, req: Request) -> Result:
    """Run one command; unknown commands fail as the driver does."""
    descriptor = BY_NAME.get(req.name)
    if descriptor is None:
        raise YtError(f"Unknown command {req.name!r}", attributes={"command": req.name})
    handler = descriptor.handler
    mutation_id = _get(req.params, "mutation_id")
    if mutation_id is not None and descriptor.is_volatile and descriptor.output_type == STRUCTURED:
        # The response keeper (mutations.py): a retry with the same mutation id gets the kept answer.
        value = mutations.keeper_of(state).run(
            str(mutation_id), _bool(req.params, "retry"), req.name, lambda: handler(state, req).value
        )
        return Result(value, output_format=_output_format(req.params))
    result = handler(state, req)
    if result.chunks is None and result.output_format is None:
        result.output_format = _output_format(req.params)
    return result
