"""Picks an offset store from the ``offsets.store`` option: a URI scheme maps to a store module, no ``if`` chains.

``consumer``, ``group``, ``default`` (or no option) name the source's own store: the YT consumer table, the Kafka
consumer group. A URI (``zookeeper://host:2181/spyt``) names a store of its scheme; adding a store is one line in
:data:`SCHEMES` plus a module with ``parse_uri(uri)`` (validation without connecting) and
``from_uri(uri, source, group)``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from spyt_queue.errors import OptionError
from spyt_queue.stores.base import OffsetStore

OPTION = "offsets.store"
NATIVE = ("default", "consumer", "group")
SCHEMES: dict[str, str] = {
    "zookeeper": "spyt_queue.stores.zookeeper",
    "hbase": "spyt_queue.stores.hbase",
    "kudu": "spyt_queue.stores.kudu",
}


def _module(uri: str) -> ModuleType:
    scheme, sep, _ = uri.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        known = ", ".join(f"{name}://..." for name in SCHEMES)
        raise OptionError(OPTION, f"expected one of {', '.join(NATIVE)} or a store URI ({known}), got {uri!r}")
    return importlib.import_module(SCHEMES[scheme.lower()])


def is_native(uri: str | None) -> bool:
    """Whether ``uri`` names the source's own store (the default)."""
    return uri is None or uri.strip().lower() in NATIVE


def check_uri(uri: str | None) -> None:
    """Validate ``offsets.store`` without connecting (runs at ``load()``)."""
    if not is_native(uri):
        assert uri is not None
        _module(uri).parse_uri(uri)


def open_store(uri: str, source: str, group: str) -> OffsetStore:
    """The store named by a URI, for one source and one group."""
    return _module(uri).from_uri(uri, source, group)
