"""Picks an offset store from the ``offsets.store`` option: a URI scheme maps to a store module, no ``if`` chains.

``consumer``, ``group``, ``default`` (or no option) name the source's own store: the YT consumer table, the Kafka
consumer group. A URI (``zookeeper://host:2181/spyt``) names a store of its scheme; adding a store is one line in
:data:`SCHEMES` plus a module with ``parse_uri(uri)`` (validation without connecting) and
``from_uri(uri, source, group)``. A store that authenticates sets ``TAKES_CREDENTIALS = True`` and takes ``user``
and ``password`` keywords in both; one that cannot says why in ``NO_CREDENTIALS``.

Credentials travel apart from the URI (:class:`StoreCredentials`, from the ``offsets.store.user`` and
``offsets.store.password`` options): Spark prints option values in query plans unless the option's name matches
``spark.redaction.regex``, and it does not look inside a URI. Every message shows a URI with its password masked.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType

from spyt_queue.errors import OptionError
from spyt_queue.options import STORE_OPTION, Option
from spyt_queue.redaction import shown, split_uri
from spyt_queue.stores.base import OffsetStore

OPTION = STORE_OPTION
USER_OPTION = "offsets.store.user"
PASSWORD_OPTION = "offsets.store.password"
NATIVE = ("default", "consumer", "group")
#: The offset store options of every source (``offsets.store`` is parsed here; the password has an option of its own,
#: whose name Spark redacts, never a place in the URI that Spark prints).
STORE_OPTIONS = (
    Option(OPTION, "where positions are committed: default (the source's own) or a store URI", default="default"),
    Option("offsets.group", "the group positions belong to in a URI store"),
    Option(USER_OPTION, "user of a URI store"),
    Option(PASSWORD_OPTION, "password of a URI store (Spark redacts it)"),
)
SCHEMES: dict[str, str] = {
    "zookeeper": "spyt_queue.zookeeper.store",
    "hbase": "spyt_queue.sinks.hbase.store",
    "kudu": "spyt_queue.sinks.kudu.store",
}


def _module(uri: str) -> ModuleType:
    scheme, sep, _ = uri.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        known = ", ".join(f"{name}://..." for name in SCHEMES)
        raise OptionError(
            OPTION, f"expected one of {', '.join(NATIVE)} or a store URI ({known}), got {shown(OPTION, uri)}"
        )
    return importlib.import_module(SCHEMES[scheme.lower()])


@dataclass(frozen=True)
class StoreCredentials:
    """The user and password of a URI store, kept out of the URI (``repr()`` never shows the password)."""

    user: str | None = None
    password: str | None = field(default=None, repr=False)

    def __bool__(self) -> bool:
        return bool(self.user) or self.password is not None


def uri_password(uri: str | None) -> bool:
    """Whether ``uri`` holds a password in its user information (``scheme://user:password@host``), the user
    information split off as :func:`~spyt_queue.redaction.split_uri` does (a password may hold ``?``, ``/``, ``@``)."""
    parts = split_uri(uri) if uri else None
    return parts is not None and parts.has_password


def _credentials(module: ModuleType, uri: str, credentials: StoreCredentials | None) -> dict[str, str | None]:
    """The ``user``/``password`` keywords for ``module`` (none when no credentials are given)."""
    if not credentials:
        return {}
    if not getattr(module, "TAKES_CREDENTIALS", False):
        why = getattr(module, "NO_CREDENTIALS", "it has no authentication")
        option = PASSWORD_OPTION if credentials.password is not None else USER_OPTION
        raise OptionError(option, f"the store {shown(OPTION, uri)} takes no credentials; {why}")
    return {"user": credentials.user, "password": credentials.password}


def is_native(uri: str | None) -> bool:
    """Whether ``uri`` names the source's own store (the default)."""
    return uri is None or uri.strip().lower() in NATIVE


def check_uri(uri: str | None, credentials: StoreCredentials | None = None, *, password_in_uri: bool = True) -> None:
    """Validate ``offsets.store`` and its credentials without connecting (runs at ``load()``).

    ``password_in_uri=False`` (the Spark source) refuses ``user:password@`` in the URI, which Spark would print in
    every query plan, naming the options to use instead."""
    if is_native(uri):
        if credentials:
            raise OptionError(
                PASSWORD_OPTION if credentials.password is not None else USER_OPTION,
                "only a store URI (offsets.store=zookeeper://...) takes credentials; the YT consumer table uses the "
                "'token' option (or YT_TOKEN), a Kafka group the kafka.sasl.* options",
            )
        return
    assert uri is not None
    module = _module(uri)
    if not password_in_uri and uri_password(uri) and getattr(module, "TAKES_CREDENTIALS", False):
        raise OptionError(
            OPTION,
            f"{shown(OPTION, uri)} holds a password, which Spark would show in query plans and logs: remove it "
            f"from the URI and set it with .option('{PASSWORD_OPTION}', ...) (Spark redacts that option), the user "
            f"with .option('{USER_OPTION}', ...) or in the URI",
        )
    module.parse_uri(uri, **_credentials(module, uri, credentials))


def open_store(uri: str, source: str, group: str, credentials: StoreCredentials | None = None) -> OffsetStore:
    """The store named by a URI, for one source and one group, authenticated with ``credentials``."""
    module = _module(uri)
    return module.from_uri(uri, source, group, **_credentials(module, uri, credentials))
