"""Committed positions in Apache ZooKeeper (the classic Kafka/Storm place), through ``kazoo``.

URI (the ``offsets.store`` option)::

    zookeeper://[user:password@]host[:port][,host[:port]...][/root/path][?acl=...&layout=...&timeout=...]

* **hosts**: one or more ``host:port`` (port 2181 by default), comma-separated, as in a ZooKeeper connect string.
* **root path** (default ``/consumers``): every znode the store writes is below it, so it works as a chroot; a
  missing root and missing parents are created. ``.``/``..``/empty segments are refused.
* **group**: the query's group (``kafka.group.id`` for Kafka sources, the consumer for YT ones, as the Spark
  adapter passes it) is one more level, URL-encoded: ``<root>/<group>``. Two groups never see each other.
* **layout** (default ``source``): where a partition's znode is below ``<root>/<group>/offsets``:

  - ``source``: ``<source>/<partition>``, the source id and partition key each URL-encoded into one znode name
    (``/`` and ``%`` and non-ASCII are escaped, ``:`` stays readable), e.g.
    ``/consumers/my-group/offsets/yt:%2F%2Fhome%2Fq#1-2-3-4/0``. Two sources never see each other.
  - ``kafka``: for Kafka partition keys ``<topic>:<n>`` only, ``<topic>/<n>``, exactly what old Kafka tooling
    (the ZooKeeper-based consumer, ``ZkUtils``, offset checkers, Burrow's ZooKeeper mode) reads:
    ``zookeeper://zk:2181?layout=kafka`` with group ``enricher`` keeps partition 3 of ``events`` in
    ``/consumers/enricher/offsets/events/3``. As in Kafka, positions belong to the group and the topic, whatever
    the subscription; :meth:`ZooKeeperStore.committed` lists every topic of the group.

* Each partition's znode holds the **decimal next offset** (the next unread row, ``b"120"``).
* **acl**: ACL of the znodes the store creates, ``scheme:id:perms`` with perms from ``rwcda`` (or ``all``), several
  separated by ``;`` or repeated ``acl=`` parameters: ``acl=world:anyone:r;digest:spyt:<base64 sha1>:cdrwa``.
  ``acl=creator`` gives all rights to the authenticated user only (needs credentials). Default: open
  (``world:anyone:cdrwa``), like ZooKeeper's tools.
* **credentials**: digest authentication for the session, with a user and a password. The user comes from the URI
  (``zookeeper://alice@zk/...``) or the ``offsets.store.user`` option, the password from the
  ``offsets.store.password`` option (a name Spark redacts in plans and logs; ``ytqueue status`` reads it from
  ``SPYT_STORE_PASSWORD`` or ``--store-password-file``). ``user:password@`` in the URI still works here and in the
  CLI (percent-encode special characters), but the Spark source refuses it: Spark prints option values in query
  plans. Messages, :meth:`ZooKeeperStore.describe`, ``repr()`` and kazoo's logs never show the password.
* **timeout**: session and connect timeout in seconds (default 10).

An advance of several partitions is **one** ZooKeeper ``multi`` transaction: a ``set_data`` with the version read
for every changed znode, a ``check`` of the version of every unchanged one, a ``create`` for every partition never
committed (which fails if someone created it meanwhile). A concurrent writer makes the whole transaction fail;
nothing is half-written, and :class:`~spyt_queue.errors.ConsumerConflictError` names the partition and znode.
Connection loss, session expiry and timeouts are transient (the committer retries and recognises an advance whose
reply was lost). A znode that does not hold a decimal offset raises :class:`~spyt_queue.errors.SpytQueueError`
naming it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar
from urllib.parse import quote, unquote

from spyt_queue.errors import ConsumerConflictError, OptionError, SpytQueueError
from spyt_queue.redaction import RedactingLogger, shown, split_uri
from spyt_queue.stores.base import ConnectedStore
from spyt_queue.stores.registry import OPTION

__all__ = ["DEFAULT_ROOT", "ZooKeeperStore", "decode_component", "encode_component", "from_uri"]

SCHEME = "zookeeper"
DEFAULT_ROOT = "/consumers"
DEFAULT_PORT = 2181
DEFAULT_TIMEOUT = 10.0
LAYOUTS = ("source", "kafka")
#: The store authenticates with a user and a password (``offsets.store.user``, ``offsets.store.password``).
TAKES_CREDENTIALS = True

# Characters left readable in encoded znode names; everything else ("/", "%", controls, non-ASCII) is escaped.
_SAFE = "-_.~:=,+@!$&'()*;#[]"
_PERMS = {"r": "read", "w": "write", "c": "create", "d": "delete", "a": "admin"}


def encode_component(text: str) -> str:
    """``text`` as one valid, reversible znode name (see :func:`decode_component`)."""
    if not text:
        raise SpytQueueError("an empty source id, group or partition key cannot name a ZooKeeper znode")
    encoded = quote(text, safe=_SAFE)
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def decode_component(name: str) -> str:
    """The text :func:`encode_component` turned into the znode name ``name``."""
    return unquote(name)


class ZooKeeperStore(ConnectedStore):
    """Committed positions of ``source`` for ``group`` below ``root`` on the ZooKeeper ensemble ``hosts``.

    ``hosts``: a connect string (``"h1:2181,h2:2181"``). ``root``: an absolute path (default ``/consumers``).
    ``group``: one more path level (``None`` or ``""``: none). ``layout``: ``"source"`` or ``"kafka"`` (see the
    module docstring). ``acl``: kazoo ACLs for created znodes (``None``: open). ``auth``: kazoo ``auth_data``
    such as ``[("digest", "user:password")]``. The session starts on first use.
    """

    _LIVE: ClassVar[dict[str, Any]] = {"_zk": None}  # the open connection: reopened after unpickling

    def __init__(
        self,
        hosts: str,
        root: str,
        source: str,
        group: str | None = None,
        *,
        layout: str = "source",
        acl: list | None = None,
        auth: list[tuple[str, str]] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if layout not in LAYOUTS:
            raise OptionError(OPTION, f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
        self.hosts = hosts
        self.root = _check_root(root or DEFAULT_ROOT)
        self.source = source
        self.group = group or ""
        self.layout = layout
        self.acl = acl
        self.auth = list(auth or [])
        self.timeout = timeout
        self.base = self.root.rstrip("/") + (f"/{encode_component(self.group)}" if self.group else "")
        self.offsets_path = f"{self.base}/offsets"
        if layout == "source":
            self.source_path = f"{self.offsets_path}/{encode_component(source)}"
        else:
            self.source_path = self.offsets_path
        self.writer_path = f"{self.base}/writers/{encode_component(source)}"
        super().__init__()

    # ---------------------------------------------------------------------------------------------- uri

    @classmethod
    def from_uri(
        cls, uri: str, source: str, group: str | None, *, user: str | None = None, password: str | None = None
    ) -> ZooKeeperStore:
        """A store from a ``zookeeper://`` URI (see the module docstring); errors name ``offsets.store``.
        ``user`` and ``password``: the credentials, when the URI holds none (``offsets.store.user``/``.password``)."""
        return cls(source=source, group=group, **parse_uri(uri, user=user, password=password))

    # ------------------------------------------------------------------------------------------- layout

    def path_of(self, partition: str) -> str:
        """The znode holding ``partition``'s position."""
        if self.layout == "kafka":
            topic, sep, index = partition.rpartition(":")
            if not sep or not topic or not index.isdigit():
                raise SpytQueueError(
                    f"{self.describe()}: layout=kafka keeps Kafka partitions '<topic>:<n>', got partition key "
                    f"{partition!r}; use layout=source for this source"
                )
            return f"{self.offsets_path}/{encode_component(topic)}/{int(index)}"
        return f"{self.source_path}/{encode_component(partition)}"

    def describe(self) -> str:
        """``zookeeper://hosts/<root>/<group>/offsets[/<source>]`` (never the password)."""
        return f"{SCHEME}://{self.hosts}{self.source_path}"

    def __repr__(self) -> str:
        return f"<ZooKeeperStore {self.describe()}>"

    # ---------------------------------------------------------------------------------------- client

    def groups(self) -> list[str] | None:
        """The groups below this store's root (one znode each); ``None`` when the listing fails."""
        try:
            return sorted(decode_component(name) for name in self.client().get_children(self.root))
        except Exception:  # a listing is only a hint
            return None

    def client(self):
        """The started ``KazooClient`` of this store (connects on first use; raises a transient timeout)."""
        with self._lock:
            if self._zk is None:
                # lazy: kazoo loads only in processes that use a ZooKeeper store
                from kazoo.client import KazooClient

                zk = KazooClient(
                    hosts=self.hosts,
                    timeout=self.timeout,
                    auth_data=self.auth or None,
                    # kazoo logs its Auth request, password included, at DEBUG
                    logger=RedactingLogger(
                        logging.getLogger("kazoo.client"), [cred.partition(":")[2] for _, cred in self.auth]
                    ),
                    # after an outage, reconnect within seconds (kazoo's default backs off to a minute)
                    connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 2},
                )
                zk.start(timeout=self.timeout)  # on failure it stops itself and raises the handler's timeout
                # Started once: kazoo reconnects (and renews an expired session) by itself from now on; while it
                # does, calls fail with ConnectionLoss or time out, both transient. start() again would hang.
                self._zk = zk
            return self._zk

    def close(self) -> None:
        """End the ZooKeeper session."""
        with self._lock:
            zk, self._zk = self._zk, None
        if zk is not None:
            try:
                zk.stop()
            finally:
                zk.close()

    def is_transient(self, error: BaseException) -> bool:
        """Connection loss, session expiry/move, timeouts and throttling are worth retrying."""
        # lazy: kazoo loads only in processes that use a ZooKeeper store
        from kazoo import exceptions as ke
        from kazoo.handlers.threading import KazooTimeoutError

        transient = (
            ke.ConnectionLoss,
            ke.ConnectionDropped,
            ke.SessionExpiredError,
            ke.SessionMovedError,
            ke.OperationTimeoutError,
            ke.RequestTimeoutError,
            ke.ThrottledOpError,
            KazooTimeoutError,
        )
        return isinstance(error, transient)

    # ------------------------------------------------------------------------------------------ reads

    def _parse(self, path: str, data: bytes) -> int:
        text = data.decode("ascii", "replace").strip()
        if not text.isdigit():
            raise SpytQueueError(
                f"ZooKeeper znode {path} on {self.hosts} holds {data[:40]!r}, not a decimal offset; "
                "fix or delete it (was it written by another tool?)"
            )
        return int(text)

    def _read(self, paths: Mapping[str, str]) -> dict[str, tuple[int, int] | None]:
        """``(position, znode version)`` of every key of ``paths`` (``None`` when the znode does not exist)."""
        # lazy: kazoo loads only in processes that use a ZooKeeper store
        from kazoo.exceptions import NoNodeError

        zk = self.client()
        pending = {key: zk.get_async(path) for key, path in paths.items()}
        result: dict[str, tuple[int, int] | None] = {}
        for key, answer in pending.items():
            try:
                data, stat = answer.get(timeout=self.timeout)
            except NoNodeError:
                result[key] = None
                continue
            result[key] = (self._parse(paths[key], data), stat.version)
        return result

    def _children(self, path: str) -> list[str]:
        # lazy: kazoo loads only in processes that use a ZooKeeper store
        from kazoo.exceptions import NoNodeError

        try:
            return self.client().get_children(path)
        except NoNodeError:
            return []

    @contextmanager
    def _admitted(self, what: str) -> Iterator[None]:
        """Turn ZooKeeper's refusals of this client (kazoo raises ``NoAuthError()`` without text) into an error
        naming the options that fix them."""
        # lazy: kazoo loads only in processes that use a ZooKeeper store
        from kazoo.exceptions import AuthFailedError, NoAuthError

        try:
            yield
        except NoAuthError as error:
            raise SpytQueueError(
                f"{self.describe()}: ZooKeeper refused to {what} (NoAuth: the ACL of a znode on the way does not "
                "admit this client). Give the user and password that created it (offsets.store.user, "
                "offsets.store.password), or choose a root of this query's own in offsets.store"
            ) from error
        except AuthFailedError as error:
            raise SpytQueueError(
                f"{self.describe()}: ZooKeeper refused the credentials (AuthFailed): check offsets.store.user and "
                "offsets.store.password"
            ) from error

    def committed(self) -> dict[str, int | None]:
        """Every partition with a znode, and its position."""
        with self._admitted("read the committed positions"):
            return self._committed()

    def _committed(self) -> dict[str, int | None]:
        if self.layout == "kafka":
            keys = [
                f"{decode_component(topic)}:{index}"
                for topic in self._children(self.offsets_path)
                for index in self._children(f"{self.offsets_path}/{topic}")
                if index.isdigit()
            ]
        else:
            keys = [decode_component(name) for name in self._children(self.source_path)]
        found = self._read({key: self.path_of(key) for key in keys})
        return {key: entry[0] for key, entry in sorted(found.items()) if entry is not None}

    # ----------------------------------------------------------------------------------------- advance

    KEEPS_WRITER = True

    def written_by(self, writer: str, positions: Mapping[str, int]) -> bool | None:
        """Whether the writer znode names ``writer`` and every partition of ``positions`` holds its value."""
        # lazy: kazoo loads only in processes that use a ZooKeeper store
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self.client().get(self.writer_path)
        except NoNodeError:
            return None
        stored = data.decode("ascii", "replace").strip()
        if not stored:
            return None
        found = self._read({key: self.path_of(key) for key in positions})
        return stored == writer and all((found[k] or (None,))[0] == v for k, v in positions.items())

    def advance(self, old: Mapping[str, int | None], new: Mapping[str, int], writer: str | None = None) -> None:
        """Move every partition of ``new`` from ``old`` in one ``multi`` transaction (see the module docstring),
        which also stores ``writer`` in the source's writer znode (``<root>/<group>/writers/<source>``)."""
        with self._admitted("write the committed positions"):
            self._advance(old, new, writer)

    def _advance(self, old: Mapping[str, int | None], new: Mapping[str, int], writer: str | None) -> None:
        # lazy: kazoo loads only in processes that use a ZooKeeper store
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

        if not new:
            return
        keys = sorted(new)
        paths = {key: self.path_of(key) for key in keys}
        current = self._read(paths)
        stale = {key: current[key] for key in keys if (current[key] or (None,))[0] != old.get(key)}
        if stale:
            found = {key: (entry[0] if entry else None) for key, entry in stale.items()}
            expected = {k: old.get(k) for k in stale}
            raise ConsumerConflictError(
                f"{self.describe()}: expected positions {expected}, found {found}: "
                "another query (or tool) moved them. Use a separate group per query."
            )
        zk = self.client()
        txn = zk.transaction()
        writes = 0
        for key in keys:
            entry, data = current[key], str(int(new[key])).encode("ascii")
            if entry is None:
                zk.ensure_path(paths[key].rsplit("/", 1)[0], acl=self.acl)
                txn.create(paths[key], data, acl=self.acl)
                writes += 1
            elif entry[0] == new[key]:
                txn.check(paths[key], entry[1])
            else:
                txn.set_data(paths[key], data, version=entry[1])
                writes += 1
        if not writes:
            return
        token = (writer or "").encode("ascii")
        if zk.exists(self.writer_path) is None:
            zk.ensure_path(self.writer_path.rsplit("/", 1)[0], acl=self.acl)
            txn.create(self.writer_path, token, acl=self.acl)
        else:
            txn.set_data(self.writer_path, token)
        keys = [*keys, "<writer>"]
        paths = {**paths, "<writer>": self.writer_path}
        results = txn.commit_async().get(timeout=self.timeout)
        failed = [(key, r) for key, r in zip(keys, results, strict=True) if isinstance(r, Exception)]
        if not failed:
            return
        key, error = next(((k, r) for k, r in failed if not isinstance(r, RolledBackError)), failed[0])
        if isinstance(error, (BadVersionError, NodeExistsError, NoNodeError, RolledBackError)):
            raise ConsumerConflictError(
                f"{self.describe()}: znode {paths[key]} of partition {key} changed while advancing "
                f"({type(error).__name__}); nothing was written. Another query (or tool) is moving the same "
                "positions: use a separate group per query."
            )
        raise error


# ----------------------------------------------------------------------------------------------------- URI


def _check_root(path: str) -> str:
    if not path.startswith("/"):
        raise OptionError(OPTION, f"the ZooKeeper root must be an absolute path, got {path!r}")
    segments = path.strip("/").split("/") if path.strip("/") else []
    if any(seg in ("", ".", "..") for seg in segments):
        raise OptionError(OPTION, f"the ZooKeeper root {path!r} has an empty, '.' or '..' segment")
    return "/" + "/".join(segments)


def _parse_acl(spec: str) -> list:
    # lazy: kazoo loads only in processes that use a ZooKeeper store
    from kazoo.security import CREATOR_ALL_ACL, make_acl

    acls: list = []
    for item in (s.strip() for s in spec.split(";")):
        if not item:
            continue
        if item == "creator":
            acls.extend(CREATOR_ALL_ACL)
            continue
        head, _, perms = item.rpartition(":")
        scheme, _, ident = head.partition(":")
        letters = "rwcda" if perms == "all" else perms
        if not scheme or not letters or set(letters) - set(_PERMS):
            raise OptionError(
                OPTION, f"acl {item!r} is not 'scheme:id:perms' with perms from 'rwcda' (or 'all', or 'creator')"
            )
        acls.append(make_acl(scheme, ident, **{_PERMS[c]: True for c in letters}))
    return acls


def parse_uri(uri: str, user: str | None = None, password: str | None = None) -> dict:
    """The :class:`ZooKeeperStore` keyword arguments (``hosts``, ``root``, ``layout``, ``acl``, ``auth``,
    ``timeout``) of a ``zookeeper://`` URI, with the credentials ``user`` and ``password`` (the
    ``offsets.store.user``/``offsets.store.password`` options) when the URI holds none. Messages mask the password."""
    parts = split_uri(uri)
    if parts is None or parts.scheme.lower() != SCHEME:
        raise OptionError(OPTION, f"expected 'zookeeper://host:port/root/path', got {shown(OPTION, uri)}")
    userinfo, hostlist, slash, path, query = parts.userinfo, parts.hosts, parts.slash, parts.path, parts.query
    if not hostlist:
        raise OptionError(OPTION, f"no ZooKeeper host in {shown(OPTION, uri)}")
    hosts = []
    for host in hostlist.split(","):
        name, colon, port = host.strip().rpartition(":") if ":" in host else (host.strip(), "", "")
        if not name or (colon and not port.isdigit()):
            raise OptionError(
                OPTION,
                f"the ZooKeeper hosts of {shown(OPTION, uri)} are not 'host' or 'host:port' (percent-encode '/', "
                "'@' and ':' in a user or password)",
            )
        hosts.append(f"{name}:{port or DEFAULT_PORT}")
    auth = _digest(userinfo, user, password)
    params: dict[str, list[str]] = {}
    for pair in filter(None, query.split("&")):
        name, _, value = pair.partition("=")
        params.setdefault(unquote(name), []).append(unquote(value))
    unknown = sorted(set(params) - {"acl", "layout", "timeout"})
    if unknown:
        raise OptionError(OPTION, f"unknown ZooKeeper URI parameter(s) {unknown}; known: acl, layout, timeout")
    layout = params.get("layout", ["source"])[-1]
    if layout not in LAYOUTS:
        raise OptionError(OPTION, f"layout must be one of {', '.join(LAYOUTS)}, got {shown(OPTION, layout)}")
    try:
        timeout = float(params.get("timeout", [DEFAULT_TIMEOUT])[-1])
    except ValueError:
        got = shown(OPTION, params["timeout"][-1])
        raise OptionError(OPTION, f"timeout must be a number of seconds, got {got}") from None
    acl = _parse_acl(";".join(params["acl"])) if "acl" in params else None
    if acl and any(entry.id.scheme == "auth" for entry in acl) and not auth:
        raise OptionError(
            OPTION,
            "acl=creator needs credentials: set offsets.store.user and offsets.store.password "
            "(ytqueue status: --store-user and SPYT_STORE_PASSWORD or --store-password-file)",
        )
    root = "/" + unquote(path) if slash and path.strip("/") else DEFAULT_ROOT
    return {
        "hosts": ",".join(hosts),
        "root": _check_root(root),
        "layout": layout,
        "acl": acl or None,
        "auth": auth,
        "timeout": timeout,
    }


def _digest(userinfo: str | None, user: str | None, password: str | None) -> list[tuple[str, str]] | None:
    """kazoo ``auth_data`` from the URI's ``user[:password]`` and the ``offsets.store.user``/``.password``
    options; the password is given once, in either place, and never repeated in a message."""
    uri_user, colon, uri_password = (userinfo or "").partition(":")
    uri_user, uri_password = unquote(uri_user), unquote(uri_password) if colon else None
    if uri_user and user and uri_user != user:
        raise OptionError(
            "offsets.store.user", f"{user!r} differs from the user {uri_user!r} in offsets.store: give the user once"
        )
    if uri_password is not None and password is not None:
        raise OptionError(
            "offsets.store.password", "the offsets.store URI holds a password too: give the password once"
        )
    user = user or uri_user
    password = password if password is not None else uri_password
    if not user:
        if password:
            raise OptionError(
                "offsets.store.password",
                "a ZooKeeper password needs a user: set offsets.store.user (or zookeeper://user@host/...)",
            )
        return None
    return [("digest", f"{user}:{password or ''}")]


def from_uri(
    uri: str, source: str, group: str | None, *, user: str | None = None, password: str | None = None
) -> ZooKeeperStore:
    """A :class:`ZooKeeperStore` for ``source`` and ``group`` from a ``zookeeper://`` URI and credentials."""
    return ZooKeeperStore.from_uri(uri, source, group, user=user, password=password)
