"""HTTP transport of the YTsaurus proxy API v4: parameters, compression, streaming output, YT errors."""

from __future__ import annotations

import hmac
import json
import logging
import sys
import traceback
import urllib.parse
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from spyt_queue.local import commands
from spyt_queue.local.errors import YtError
from spyt_queue.local.formats import (
    encode_header_value,
    encode_structured,
    header_format_of,
    parse_parameters,
)
from spyt_queue.local.state import State

try:  # optional, as in yt.wrapper
    import brotli  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - brotli is optional
    brotli = None

log = logging.getLogger("spyt_queue.local")

# Responses up to this size are buffered, so an error raised while producing rows still gets a clean error
# response; larger ones stream with chunked encoding and report late errors in trailers.
BUFFER_LIMIT = 8 * 1024 * 1024
STREAM_CHUNK = 1 << 20
#: Largest request body the server takes, after decompression (a 1 MiB gzip body may inflate to gigabytes).
DEFAULT_MAX_REQUEST_BYTES = 256 * 1024 * 1024
#: Seconds a connection may stay silent (between requests, or mid-request) before the server closes it.
DEFAULT_IDLE_TIMEOUT_S = 120.0
#: YT's authentication error code (NRpc::EErrorCode::AuthenticationError), sent with HTTP 401.
AUTHENTICATION_ERROR = 111
#: Paths answered without a token: the API's discovery, which yt.wrapper asks before any command.
PUBLIC_PATHS = ("/api", "/api/v4", "/hosts", "/ping", "/version")


class RequestTooLargeError(YtError):
    """A request body over the server's limit (its remaining bytes are not read: the connection is closed)."""


class LocalYtHttpServer(ThreadingHTTPServer):
    """A threading HTTP/1.1 server bound to one :class:`State`."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(
        self,
        address: tuple[str, int],
        state: State,
        token: str | None = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT_S,
    ) -> None:
        """``token``: when given, every command needs ``Authorization: OAuth <token>`` (what yt.wrapper sends for
        ``YT_TOKEN``), else HTTP 401. ``max_request_bytes``: the largest request body, after decompression.
        ``idle_timeout``: seconds a connection may stay silent before it is closed (None: never)."""
        self.state = state
        self.token = token
        self.max_request_bytes = max_request_bytes
        self.idle_timeout = idle_timeout
        super().__init__(address, Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients closing keep-alive connections are routine; log other failures."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionResetError, BrokenPipeError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """One keep-alive connection."""

    protocol_version = "HTTP/1.1"
    server_version = "ytqueue-local"
    # Headers and body go out in separate writes: with Nagle's algorithm the body would wait for the client's
    # delayed ACK of the headers (~40 ms per response on Linux loopback).
    disable_nagle_algorithm = True
    server: LocalYtHttpServer

    def setup(self) -> None:
        """Apply the server's idle timeout to the connection (``http.server`` closes it on a timed-out read)."""
        self.timeout = self.server.idle_timeout
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    # ----------------------------------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def _too_large(self, what: str) -> RequestTooLargeError:
        self.close_connection = True  # the rest of the body is not read
        limit = self.server.max_request_bytes
        return RequestTooLargeError(
            f"Request body is too large: {what} exceeds the local server's limit of {limit} bytes "
            "(python -m spyt_queue.local --max-request-bytes); send smaller batches",
            attributes={"max_request_bytes": limit},
        )

    def _read_body(self) -> bytes:
        limit = self.server.max_request_bytes
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            total = 0
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > limit:
                    raise self._too_large("the chunked body")
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        if length > limit:
            raise self._too_large(f"Content-Length {length}")
        return self.rfile.read(length) if length else b""

    def _decode_body(self, body: bytes) -> bytes:
        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        if not body or encoding in ("identity", ""):
            return body
        limit = self.server.max_request_bytes
        if encoding in ("gzip", "deflate", "x-gzip"):
            # yt.wrapper labels a zlib (RFC 1950) stream "gzip"; wbits=47 accepts zlib and gzip framing.
            try:
                return self._inflate(zlib.decompressobj(wbits=47), body, limit, encoding)
            except zlib.error:
                return self._inflate(zlib.decompressobj(wbits=-15), body, limit, encoding)
        if encoding == "br":
            if brotli is None:
                raise YtError('Content encoding "br" needs the brotli module on the server')
            return self._inflate_brotli(body, limit)
        raise YtError(f"Unsupported content encoding {encoding!r}")

    def _inflate(self, inflater: Any, body: bytes, limit: int, encoding: str) -> bytes:
        """``body`` through a zlib ``inflater``, 1 MiB of output at a time, refused once it passes ``limit``."""
        parts: list[bytes] = []
        total = 0
        pending = body
        while pending and not inflater.eof:
            part = inflater.decompress(pending, STREAM_CHUNK)
            pending = inflater.unconsumed_tail
            total += len(part)
            if total > limit:
                raise self._too_large(f"the {encoding} body inflated to more than {limit} bytes, which")
            parts.append(part)
            if not part and not pending:
                break
        rest = inflater.flush()
        if total + len(rest) > limit:
            raise self._too_large(f"the {encoding} body inflated to more than {limit} bytes, which")
        return b"".join([*parts, rest])

    def _inflate_brotli(self, body: bytes, limit: int) -> bytes:
        """``body`` decompressed, in bounded steps where the brotli module allows (``output_buffer_limit``)."""
        decompressor = brotli.Decompressor()
        try:
            data = decompressor.process(body, output_buffer_limit=limit + 1)
        except TypeError:  # an older brotli: no bounded output
            data = brotli.decompress(body)
        if len(data) > limit:
            raise self._too_large(f"the br body inflated to more than {limit} bytes, which")
        return data

    def _check_token(self, path: str) -> None:
        """Refuse a command without the server's token (when it has one), as YT's proxies do: HTTP 401."""
        token = self.server.token
        if token is None or path in PUBLIC_PATHS:
            return
        scheme, _, given = (self.headers.get("Authorization") or "").strip().partition(" ")
        if scheme.lower() in ("oauth", "bearer") and hmac.compare_digest(given.strip().encode(), token.encode()):
            return
        self.close_connection = True  # the body is not read
        raise YtError(
            "Authentication failed: this local server requires a token (set YT_TOKEN to the token it was started with)",
            code=AUTHENTICATION_ERROR,
        )

    def _dispatch(self) -> None:
        header_format = "json"
        try:
            url = urllib.parse.urlsplit(self.path)
            path = url.path.rstrip("/") or "/"
            self._check_token(path)
            body = self._read_body()
            if path in ("/api", "/api/"):
                self._send_json(["v3", "v4"])
                return
            if path == "/api/v4":
                self._send_json([c.to_json() for c in commands.COMMANDS])
                return
            if path == "/hosts" or path.startswith("/hosts/"):
                # No separate heavy proxies: an empty list makes yt.wrapper use this (light) proxy for everything.
                self._send_json([])
                return
            if path == "/ping":
                self._send_raw(200, b"", "text/plain")
                return
            if path == "/auth/whoami":
                self._send_json({"login": "root"})
                return
            if path == "/version":
                self._send_json("ytqueue-local")
                return
            if not path.startswith("/api/v4/"):
                if path.startswith("/api/v3/"):
                    raise YtError("API v3 is not supported by ytqueue local; use api/v4")
                self._send_raw(404, b"Not found", "text/plain")
                return
            name = path[len("/api/v4/") :]
            header_format = header_format_of(self.headers.get("X-YT-Header-Format"))
            params: dict[str, Any] = {}
            for key, values in urllib.parse.parse_qs(url.query).items():
                params[key] = values[-1]
            header_params = self.headers.get("X-YT-Parameters")
            if header_params:
                params.update(parse_parameters(header_params.encode("latin-1"), header_format))
                data = self._decode_body(body)
            elif self.command == "POST" and body:
                params.update(parse_parameters(self._decode_body(body), header_format))
                data = b""
            else:
                data = self._decode_body(body)
            descriptor = commands.BY_NAME.get(name)
            if descriptor is None:
                raise YtError(
                    f"Command {name!r} is not supported by the local YTsaurus server", attributes={"command": name}
                )
            result = commands.execute(self.server.state, commands.Request(name, params, data, header_format))
            self._send_result(result, header_format)
        except YtError as exc:
            self._send_error(exc, header_format)
        except Exception as exc:  # a bug: report it as a YT error rather than dropping the connection
            traceback.print_exc(file=sys.stderr)
            self._send_error(YtError(f"Internal error of the local server: {exc!r}"), header_format)

    # ----------------------------------------------------------------------------------------------------------

    def _send_json(self, value: Any) -> None:
        self._send_raw(200, json.dumps(value).encode("utf-8"), "application/json")

    def _send_raw(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-YT-Proxy", "ytqueue-local")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _send_error(self, error: YtError, header_format: str) -> None:
        payload = error.to_json()
        headers = {
            "X-YT-Error": payload,
            "X-YT-Response-Code": str(error.code),
            "X-YT-Response-Message": _header_safe(error.message),
        }
        status = 401 if error.code == AUTHENTICATION_ERROR else 400
        if isinstance(error, RequestTooLargeError):
            headers["Connection"] = "close"
        try:
            self._send_raw(status, payload.encode("utf-8"), "application/json", headers)
        except OSError:
            pass

    def _send_result(self, result: commands.Result, header_format: str) -> None:
        fmt = result.output_format
        assert fmt is not None
        extra: dict[str, str] = {}
        if result.response_parameters:
            extra["X-YT-Response-Parameters"] = encode_header_value(result.response_parameters, header_format)
        if result.chunks is None:
            self._send_raw(200, encode_structured(result.value, fmt), fmt.content_type, extra)
            return
        buffered: list[bytes] = []
        size = 0
        chunks = iter(result.chunks)
        for chunk in chunks:  # errors here still produce a clean error response
            buffered.append(chunk)
            size += len(chunk)
            if size > BUFFER_LIMIT:
                break
        else:
            self._send_raw(200, b"".join(buffered), fmt.content_type, extra)
            return
        self.send_response(200)
        self.send_header("Content-Type", fmt.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Trailer", "X-YT-Error, X-YT-Response-Code, X-YT-Response-Message")
        self.send_header("X-YT-Proxy", "ytqueue-local")
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        try:
            self._write_chunk(b"".join(buffered))
            pending: list[bytes] = []
            pending_size = 0
            for chunk in chunks:
                pending.append(chunk)
                pending_size += len(chunk)
                if pending_size >= STREAM_CHUNK:
                    self._write_chunk(b"".join(pending))
                    pending, pending_size = [], 0
            if pending:
                self._write_chunk(b"".join(pending))
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True
        except Exception as exc:  # the response has started: report the error in trailers
            error = exc if isinstance(exc, YtError) else YtError(f"Internal error of the local server: {exc!r}")
            trailer = (
                f"X-YT-Error: {error.to_json()}\r\nX-YT-Response-Code: {error.code}\r\n"
                f"X-YT-Response-Message: {_header_safe(error.message)}\r\n\r\n"
            )
            try:
                self.wfile.write(b"0\r\n" + trailer.encode("latin-1"))
            except OSError:
                self.close_connection = True

    def _write_chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


def _header_safe(text: str) -> str:
    return text.encode("ascii", "backslashreplace").decode("ascii").replace("\r", " ").replace("\n", " ")
