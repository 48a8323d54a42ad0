"""YT error objects and the error codes the local server emits (values as in the YTsaurus sources)."""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
from typing import Any

# Generic.
GENERIC = 1
# NYTree::EErrorCode.
RESOLVE_ERROR = 500
ALREADY_EXISTS = 501
# NSecurityClient::EErrorCode.
AUTHORIZATION_ERROR = 901
# NTableClient::EErrorCode.
SCHEMA_VIOLATION = 307
MISSING_REQUIRED_COLUMN = 323  # MissingRequiredColumnInSchema
# NTabletClient::EErrorCode.
TRANSACTION_LOCK_CONFLICT = 1700
NO_SUCH_TABLET = 1701
INVALID_TABLET_STATE = 1706
TABLET_NOT_MOUNTED = 1702
TOO_MANY_ROWS_IN_TRANSACTION = 1717
# NQueueClient::EErrorCode.
CONSUMER_OFFSET_CONFLICT = 3100
INVALID_EPOCH = 3101
ZOMBIE_EPOCH = 3102
INVALID_ROW_SEQUENCE_NUMBERS = 3103
# NTransactionClient::EErrorCode.
NO_SUCH_TRANSACTION = 11000

_HOST = socket.gethostname()


class YtError(Exception):
    """A YT error: ``code``, ``message``, ``attributes`` and nested ``inner_errors``."""

    def __init__(
        self,
        message: str,
        code: int = GENERIC,
        attributes: dict[str, Any] | None = None,
        inner_errors: list[YtError] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.attributes = dict(attributes or {})
        self.inner_errors = list(inner_errors or [])

    def contains_code(self, code: int) -> bool:
        """Whether this error or any inner error carries ``code``."""
        return self.code == code or any(e.contains_code(code) for e in self.inner_errors)

    def to_dict(self) -> dict[str, Any]:
        """The error as the YT error document (``code``, ``message``, ``attributes``, ``inner_errors``)."""
        attributes = {
            "host": _HOST,
            "pid": os.getpid(),
            "datetime": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        attributes.update(self.attributes)
        return {
            "code": self.code,
            "message": self.message,
            "attributes": _jsonable(attributes),
            "inner_errors": [e.to_dict() for e in self.inner_errors],
        }

    def to_json(self) -> str:
        """ASCII-only JSON, safe for an HTTP header."""
        return json.dumps(self.to_dict(), ensure_ascii=True, separators=(",", ":"))


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict):
        return {
            (k.decode("utf-8", "replace") if isinstance(k, bytes) else str(k)): _jsonable(v) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def wrap(message: str, inner: YtError, code: int | None = None, **attributes: Any) -> YtError:
    """An outer error with ``inner`` nested, keeping ``inner``'s code unless ``code`` is given."""
    return YtError(message, code=inner.code if code is None else code, attributes=attributes, inner_errors=[inner])


def resolve_error(path: str, inner_message: str) -> YtError:
    """YT's resolve error: ``Error resolving path`` wrapping the precise reason (both code 500)."""
    return YtError(
        f"Error resolving path {path}",
        code=RESOLVE_ERROR,
        attributes={"path": path},
        inner_errors=[YtError(inner_message, code=RESOLVE_ERROR)],
    )


def no_such_transaction(transaction_id: str) -> YtError:
    """Error 11000 for an unknown, finished or expired transaction."""
    return YtError(
        f"No such transaction {transaction_id}", code=NO_SUCH_TRANSACTION, attributes={"transaction_id": transaction_id}
    )
