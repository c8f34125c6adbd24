"""Checks every HTTP request passes before it reaches MCP: Host and Origin (against DNS rebinding), bearer token.

Refusals are JSON-RPC error bodies with the HTTP status that fits, so a client library shows a reason. A refused
connection is closed once answered (`Connection: close`): a client without the token must not keep a slot of the
connection cap (LAZYTOOLS_MAX_CONNECTIONS) kept alive for seconds after its 401.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from mcp_types import INVALID_REQUEST
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from .http_head import Head, head_of

__all__ = ["LOOPBACK_NAMES", "HTTPGuard", "jsonrpc_error"]

logger = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
"""Host names that only this machine can use: always accepted as Host, and as the host of an Origin."""

_WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
_CLOSE = {"Connection": "close"}
_KEPT_HOSTS = 256
_KEPT_HOST_CHARS = 300
"""Host values whose verdict is kept, and the longest kept (a DNS name is at most 253 characters, then a port)."""


def jsonrpc_error(status: int, message: str, *, code: int = INVALID_REQUEST,
                  headers: Mapping[str, str] | None = None, request_id: str | int | None = None) -> JSONResponse:
    """A JSON-RPC error; without a request id when the request was refused before it was read as one."""
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


def _hostname(host: str) -> str:
    """`example.com:8000` → `example.com`; `[::1]:8000` → `::1`; "" for a Host that is not a host and a port
    (`127.0.0.1:80@evil.example`, a port that is not digits), which matches no allowed name."""
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        port = rest.removeprefix(":")
        return name if (rest == "" or (rest.startswith(":") and port.isdigit())) else ""
    if host.count(":") == 1:
        name, port = host.split(":", 1)
        return name if port.isdigit() else ""
    return host


class HTTPGuard:
    """ASGI middleware: refuse foreign Host and Origin headers everywhere, a missing token on protected paths."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        bind_host: str,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        token: str | None = None,
        protected_prefix: str | tuple[str, ...] = "/mcp",
    ) -> None:
        self.app = app
        hosts = {h.strip().lower() for h in allowed_hosts if h.strip()}
        self._any_host = "*" in hosts
        self._hosts = {_hostname(h) for h in hosts - {"*"}} | LOOPBACK_NAMES
        if bind_host.lower() not in _WILDCARD_BINDS:
            self._hosts.add(_hostname(bind_host))
        origins = {o.strip().rstrip("/").lower() for o in allowed_origins if o.strip()}
        self._any_origin = "*" in origins
        self._origins = origins - {"*"}
        self._token = token.encode() if token else None
        self._protected = protected_prefix
        self._host_verdicts: dict[str, bool] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(head_of(scope), scope["path"], scope["method"])
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def refusal(self, head: Head, path: str, method: str) -> JSONResponse | None:
        """The answer that refuses a request with these headers for `method` `path`, or None to serve it."""
        hosts = head.hosts
        if len(hosts) > 1:  # RFC 9112 3.2: a server must refuse a request with more than one
            return jsonrpc_error(400, "Bad Request: more than one Host header", headers=_CLOSE)
        host = hosts[0] if hosts else None
        if not self._host_allowed(host):
            logger.warning("refused a request for Host %r (set LAZYTOOLS_ALLOWED_HOSTS to accept it)", host)
            return jsonrpc_error(421, f"Host {host!r} is not accepted by this server (DNS rebinding protection)",
                                 headers=_CLOSE)
        # Every Origin header is checked: one allowed value must not carry a second one past the check.
        origin = next((value for value in head.origins if not self._origin_allowed(value)), None)
        if origin is not None:
            logger.warning("refused a request from Origin %r (set LAZYTOOLS_ALLOWED_ORIGINS to accept it)", origin)
            return jsonrpc_error(403, f"Origin {origin!r} is not allowed", headers=_CLOSE)
        # CORS preflights carry no credentials by design; they are answered (or not) by the CORS layer.
        if self._token is not None and path.startswith(self._protected) and method != "OPTIONS":
            return self._token_refusal(head.authorization)
        return None

    def _host_allowed(self, host: str | None) -> bool:
        if not host:
            return False
        if self._any_host:
            return True
        known = self._host_verdicts.get(host)
        if known is None:
            # Clients send the same few Host values again and again: each is judged once, in a bounded table.
            known = _hostname(host) in self._hosts
            if len(host) <= _KEPT_HOST_CHARS:
                if len(self._host_verdicts) >= _KEPT_HOSTS:
                    self._host_verdicts.clear()
                self._host_verdicts[host] = known
        return known

    def _origin_allowed(self, origin: str) -> bool:
        normalised = origin.strip().rstrip("/").lower()
        if self._any_origin or normalised in self._origins:
            return True
        parts = urlsplit(normalised)
        # Pages served from this machine (an inspector on another localhost port) may call a local server.
        return parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK_NAMES

    def _token_refusal(self, authorization: str | None) -> JSONResponse | None:
        assert self._token is not None
        scheme, _, credentials = (authorization or "").partition(" ")
        presented = credentials.strip().encode()
        if scheme.lower() == "bearer" and presented and hmac.compare_digest(presented, self._token):
            return None
        challenge = 'Bearer realm="lazytools"'
        if authorization:
            challenge += ', error="invalid_token"'
        message = "Unauthorized: a valid bearer token is required" if authorization else "Unauthorized: missing token"
        return jsonrpc_error(401, message, headers={"WWW-Authenticate": challenge, **_CLOSE})
