"""Streamable HTTP transport: a Starlette app (`/mcp`, `/healthz`) for a LazyServer, served by uvicorn.

`/mcp` holds two SDK session managers over the same server. Handshake-era clients that `initialize` get a
session (`Mcp-Session-Id`) with its own enabled tools; it ends on DELETE or after `session_idle_timeout`
without a request in flight. A handshake-era request without a session goes to a stateless manager and so
sees the static proxy surface; 2026-07-28 requests (routed by the SDK on `MCP-Protocol-Version`) see it too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import PARSE_ERROR
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, SUPPORTED_PROTOCOL_VERSIONS
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..catalog import Catalog
from ..errors import RateLimitedError
from ..identity import SCOPE_KEY, Principal
from ..jsonshape import containers
from ..policy.limits import Alive, MemorySessionCounter, RedisSessionCounter, SessionCounter
from ..safetext import clip, encodable_json, redact_session_ids
from ..search.live import LiveIndex
from ..server.metatools import answers_at_once
from ..server.metrics import Metrics
from ..server.middleware.rate_limit import RATE_LIMITED, RateLimitMiddleware
from ..server.middleware.shared_sessions import SharedSessions
from ..settings import Settings
from ..state import SharedState
from ..validation import INLINE_BYTES
from .http_auth import edge_auth
from .http_drain import DrainingServer, InFlight, Readiness
from .http_edge import Edge
from .http_guard import LOOPBACK_NAMES, HTTPGuard, jsonrpc_error
from .http_head import Head, head_of
from .http_limits import HeaderCount, fd_bounded, guarded_protocol
from .http_release import RELEASE_AFTER_BYTES, let_go
from .http_sessions import SessionTable, StreamBudget, stream_budget
from .http_shared_sessions import SharedSessionManager
from .message_bounds import (
    DEPTH_REFUSAL,
    crowded_refusal,
    echoable,
    refusal,
    request_id,
    too_deep,
    top_level,
)

__all__ = ["MCP_PATH", "AtOnce", "McpEndpoint", "build_app", "http_server", "serve_http"]

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
_SHUTDOWN_GRACE = 5
"""Seconds uvicorn waits for open streams (GET streams never end by themselves) before closing them on exit."""


class SessionAdmission:
    """Who may open a session (`initialize`): the principal may open as many a minute as it may make calls (counted
    apart from its calls, in Redis with replicas, so across all of them), and an OAuth principal holds at most `per_principal` sessions at once
    (counted across replicas too, with the Redis counter). Principals shared by design (the single token's user,
    anonymous on loopback) are bounded by `max_sessions` alone: one per-user cap would be everyone's."""

    def __init__(self, counter: SessionCounter, per_principal: int, alive: Alive,
                 limits: RateLimitMiddleware | None) -> None:
        self.counter = counter
        self.per_principal = per_principal
        self.alive = alive
        self.limits = limits
        self.refusals = 0

    async def refused(self, principal: Principal, request_id: Any) -> JSONResponse | None:
        """The 429 that refuses a new session of `principal` by its rate limit, or None."""
        if self.limits is None:
            return None
        refused = await self.limits.count(principal, "initialize", counter="sessions:")
        if refused is None:
            return None
        limit, verdict = refused
        error = RateLimitedError(principal.name, limit, verdict.retry_after)
        return jsonrpc_error(429, str(error), code=RATE_LIMITED, request_id=request_id,
                             headers={"Retry-After": str(max(1, round(verdict.retry_after)))})

    async def reserve(self, principal: Principal) -> str | None | bool:
        """A reservation for the session (str), True when none is needed, False when the principal is at its cap."""
        if principal.kind != "oauth":
            return True
        try:
            reservation = await self.counter.reserve(principal.key, self.per_principal, self.alive)
        except Exception as exc:  # the shared store is down: the session store refuses the session itself
            logger.warning("sessions of %s not counted: %s: %s", clip(principal.key), type(exc).__name__,
                           clip(str(exc)))
            return True
        if reservation is None:
            self.refusals += 1
            logger.info("a new session refused for %s: it holds LAZYTOOLS_MAX_SESSIONS_PER_PRINCIPAL=%d sessions",
                        clip(principal.key), self.per_principal)
            return False
        return reservation

    async def confirm(self, principal: Principal, reservation: str, session_id: str | None) -> None:
        with anyio.CancelScope(shield=True):
            try:
                await self.counter.confirm(principal.key, reservation, session_id)
            except Exception as exc:
                logger.warning("sessions of %s not counted: %s: %s", clip(principal.key), type(exc).__name__,
                               clip(str(exc)))


class McpEndpoint:
    """ASGI app at `/mcp`: checks a POST's body, then hands the request to the session or the stateless manager."""

    def __init__(self, sessions: StreamableHTTPSessionManager | SharedSessionManager,
                 stateless: StreamableHTTPSessionManager, *, max_body_bytes: int, max_initialize_bytes: int,
                 max_containers: int,
                 body_timeout: float = 15.0, readiness: Readiness | None = None,
                 admission: SessionAdmission | None = None, at_once: AtOnce | None = None) -> None:
        self.sessions = sessions
        self.stateless = stateless
        self.at_once = at_once
        self.max_body_bytes = max_body_bytes
        self.max_initialize_bytes = max_initialize_bytes
        self.max_containers = max_containers
        self.body_timeout = body_timeout
        self.readiness = readiness
        self.admission = admission

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        head = head_of(scope)
        if head.version is not None and head.version not in SUPPORTED_PROTOCOL_VERSIONS:
            # The SDK would route it as a 2026-07-28 request and answer about missing envelope keys; the spec asks
            # for a 400 on an unsupported version, and the client needs to hear which ones there are.
            await jsonrpc_error(400, f"Bad Request: unsupported MCP-Protocol-Version {clip(head.version)}; this server "
                                     f"supports {', '.join(SUPPORTED_PROTOCOL_VERSIONS)}")(scope, receive, send)
            return
        if head.version is None or head.version in HANDSHAKE_PROTOCOL_VERSIONS:
            # The SDK answers a 2026-07-28 request (routed by its header) without a session of its own making.
            send = _no_session_on_refusals(send)
        if scope["method"] != "POST":
            await self.sessions.handle_request(scope, receive, send)
            return
        if (head.content_type or "").split(";", 1)[0].strip().lower() != "application/json":
            await jsonrpc_error(415, "Unsupported Media Type: Content-Type must be application/json")(
                scope, receive, send)
            return
        if not head.plain_type:
            scope = _plain_content_type(scope)
        with anyio.move_on_after(self.body_timeout) as reading:
            body = await self._read_body(head, receive)
        if reading.cancelled_caught:
            # A body that trickles in (or never comes) would hold the connection forever.
            await jsonrpc_error(408, f"Request body not received within {self.body_timeout:g} s",
                                headers={"Connection": "close"})(scope, receive, send)
            return
        if body is None:
            await jsonrpc_error(413, f"Request body larger than {self.max_body_bytes} bytes")(scope, receive, send)
            return
        message = _decode(body, self.max_initialize_bytes, self.max_containers)
        if isinstance(message, JSONResponse):
            await message(scope, receive, send)
            return
        manager = self.sessions
        if self._refuses_sessions() and _is_initialize(message):
            # Draining with sessions in this process only: a new one would end with it. (Shared sessions live on
            # in the store, so a draining replica still opens them.)
            await jsonrpc_error(503, "This server is shutting down: connect again", headers={"Connection": "close"})(
                scope, receive, send)
            return
        if not head.session and not _is_initialize(message):
            # No session and no handshake: nothing to keep between requests, so the static proxy surface.
            manager = self.stateless
            if self.at_once is not None and self.at_once.answers(head, message, body):
                manager = self.at_once.manager
        principal = scope.get(SCOPE_KEY)
        if self.admission is not None and not head.session and _is_initialize(message) \
                and isinstance(principal, Principal):
            await self._open(principal, message, body, scope, receive, send)
            return
        await manager.handle_request(scope, _replay(body, receive), send)
        if head.session and manager is self.sessions and len(body) >= RELEASE_AFTER_BYTES:
            await let_go(manager, Headers(scope=scope).get(MCP_SESSION_ID_HEADER, ""))

    async def _open(self, principal: Principal, message: Any, body: bytes, scope: Scope, receive: Receive,
                    send: Send) -> None:
        """A new session, if the principal's rate limit and share of sessions allow it."""
        assert self.admission is not None
        refusal = await self.admission.refused(principal, message.get("id"))
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        reservation = await self.admission.reserve(principal)
        if reservation is False:
            await jsonrpc_error(429, f"Too many open sessions for {clip(principal.name)}: at most "
                                     f"{self.admission.per_principal} at once; end one (DELETE) or let one expire",
                                request_id=message.get("id"), headers={"Retry-After": "60"})(scope, receive, send)
            return
        opened: str | None = None

        async def watch(sent: Message) -> None:
            nonlocal opened
            if sent["type"] == "http.response.start" and sent["status"] < 400:
                opened = Headers(raw=sent.get("headers", [])).get(MCP_SESSION_ID_HEADER)
            await send(sent)

        try:
            await self.sessions.handle_request(scope, _replay(body, receive), watch)
        finally:
            if isinstance(reservation, str):
                await self.admission.confirm(principal, reservation, opened)

    def _refuses_sessions(self) -> bool:
        return (self.readiness is not None and self.readiness.draining
                and not isinstance(self.sessions, SharedSessionManager))

    async def _read_body(self, head: Head, receive: Receive) -> bytes | None:
        """The whole body, or None once it passes the limit. The rest of a body over the limit is still read, up to
        DRAIN_FACTOR times the limit, and dropped: a client answered while it is still sending sees its connection
        reset, not the 413 (the SDK's client then ends its session), while one that has sent it all reads the
        answer."""
        declared = head.content_length or ""
        drain = DRAIN_FACTOR * self.max_body_bytes
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            if int(declared) <= drain:
                await _drain(receive, drain)
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            more = message.get("more_body", False)
            if size > self.max_body_bytes:
                if more:
                    await _drain(receive, drain - size)
                return None
            chunks.append(chunk)
            if not more:
                break
        return b"".join(chunks)


class AtOnce:
    """Where a 2026-07-28 call that is answered at once goes: a stateless manager that answers in JSON.

    With SSE answers on (the default), the SDK serves each 2026-07-28 request in a task group of its own: the call
    in one task, a watch for the client's disconnect in another, and a stream that turns the answer into SSE once
    the call sends something (progress, a log line) or runs for 15 s; a call that does neither is answered with
    the same JSON as in JSON mode. A call of a tool that returns at once and sends nothing (`metatools.
    answers_at_once`: an in-process function marked quick) with a small body can do neither, so it skips that
    machinery and gets the same answer."""

    def __init__(self, manager: StreamableHTTPSessionManager, answers_at_once: Callable[[Mapping[str, Any]], bool]):
        self.manager = manager
        self.answers_at_once = answers_at_once

    def answers(self, head: Head, message: Any, body: bytes) -> bool:
        params = message.get("params")
        return (message.get("method") == "tools/call" and len(body) <= INLINE_BYTES and head.version is not None
                and head.version not in HANDSHAKE_PROTOCOL_VERSIONS and isinstance(params, dict)
                and self.answers_at_once(params))


DRAIN_FACTOR = 8
"""A body over the limit is read (and dropped) up to this many times the limit before the 413 is sent."""


async def _drain(receive: Receive, most: int) -> None:
    """Read and drop the rest of a request's body, at most `most` bytes of it (the caller's time limit applies)."""
    while most > 0:
        message = await receive()
        if message["type"] != "http.request":
            return
        most -= len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _decode(body: bytes, max_initialize_bytes: int, max_containers: int) -> JSONResponse | Any:
    """The JSON-RPC message in `body`, or the error response that refuses it: also a request past what one request
    may make the server keep or send back (`message_bounds`), refused before the SDK opens a session for it."""
    held = containers(body, max_containers)
    if held > max_containers:
        # Refused before any parser makes an object of it; the id the client waits on is read from the top level.
        return jsonrpc_error(400, crowded_refusal(held, max_containers), request_id=echoable(request_id(body)))
    try:
        decoded = json.loads(body)
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # valid JSON, but Python refuses to read the number
            return jsonrpc_error(400, f"Parse error: an integer of more than {sys.get_int_max_str_digits():,} digits",
                                 code=PARSE_ERROR)
        return jsonrpc_error(400, "Parse error: the body is not JSON", code=PARSE_ERROR)
    except RecursionError:  # deeper than Python's json goes: refused with its id, as a shallower deep one is
        members = top_level(body)
        if members is None:
            return jsonrpc_error(400, "Parse error: the body is nested too deeply to read", code=PARSE_ERROR)
        return jsonrpc_error(400, DEPTH_REFUSAL, request_id=echoable(members.get("id")))
    if too_deep(body):
        # Valid JSON, deeper than the SDK's parser reads: said as stdio says it, with the id the client waits on.
        return jsonrpc_error(400, DEPTH_REFUSAL,
                             request_id=echoable(decoded.get("id")) if isinstance(decoded, dict) else None)
    if isinstance(decoded, list):
        return jsonrpc_error(400, "Invalid Request: JSON-RPC batches are not supported")
    if not _is_jsonrpc_message(decoded):
        return jsonrpc_error(400, 'Invalid Request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0" and a '
                                  '"method" (or a "result"/"error" with an "id")')
    if "method" in decoded and "id" in decoded and not _is_request_id(decoded["id"]):
        # The SDK would take it for a notification (202) and never answer: the client would wait forever.
        return jsonrpc_error(400, "Invalid Request: an id must be a string or an integer")
    ident = echoable(decoded.get("id"))
    if "method" in decoded and not isinstance(decoded.get("params", {}), dict):
        return jsonrpc_error(400, "Invalid Request: params must be an object (MCP names its parameters)",
                             request_id=ident)
    if "method" in decoded and "id" in decoded:
        # The body as it came, whitespace and fields the SDK ignores included: the session keeps it all.
        refused = refusal(decoded["id"], decoded["method"], decoded.get("params"), size=lambda: len(body),
                          max_initialize_bytes=max_initialize_bytes)
        if refused is not None:
            return jsonrpc_error(400, refused.message, code=refused.code,
                                 request_id=ident if refused.echo_id else None)
    # JSON's "\ud800" reads as a lone surrogate, which the SDK then refuses as a bad hex escape; the bytes are
    # searched first (most bodies hold no escape at all), the message only when they might hold one.
    if (b"\\ud" in body or b"\\uD" in body) and encodable_json(decoded)[1]:
        return jsonrpc_error(400, "Parse error: a string holds an unpaired surrogate escape such as \\ud800",
                             code=PARSE_ERROR, request_id=ident)
    return decoded


def _is_request_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _is_jsonrpc_message(decoded: Any) -> bool:
    if not isinstance(decoded, dict) or decoded.get("jsonrpc") != "2.0":
        return False
    if "method" in decoded:
        return isinstance(decoded["method"], str)
    return "id" in decoded and ("result" in decoded or "error" in decoded)




def _no_session_on_refusals(send: Send) -> Send:
    """`send` less the Mcp-Session-Id header of refusals (status 400 and up): the SDK names a session it made for a
    request it then refused (an initialize without the right Accept, a GET without a session), which no request
    can use: the client must not take it for one."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] >= 400:
            headers = message.get("headers", [])
            kept = [(name, value) for name, value in headers if name.lower() != _SESSION_HEADER]
            if len(kept) != len(headers):
                message = {**message, "headers": kept}
        await send(message)

    return sending


_SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode()


def _plain_content_type(scope: Scope) -> Scope:
    """The scope with its Content-Type spelled `application/json` (parameters kept). Media types are
    case-insensitive (RFC 9110 8.3.1) and the check above reads them so; the SDK compares the exact spelling and
    would refuse `Application/JSON` with a 415."""
    raw = scope["headers"]
    changed = [(name, _lower_media_type(value) if name.lower() == b"content-type" else value) for name, value in raw]
    return scope if changed == list(raw) else {**scope, "headers": changed}


def _lower_media_type(value: bytes) -> bytes:
    media, separator, parameters = value.partition(b";")
    return media.strip().lower() + separator + parameters


def _is_initialize(message: Any) -> bool:
    return isinstance(message, dict) and message.get("method") == "initialize"


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that yields the body already read, then whatever the connection sends next (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


_MANAGER_LOG = logging.getLogger("mcp.server.streamable_http_manager")


class _SaidOnce(logging.Filter):
    """Lets the SDK's "session manager started" and "shutting down" through once per app: each of our two managers
    says them, and a second "started" reads as a second server."""

    _LINES = frozenset({"StreamableHTTP session manager started", "StreamableHTTP session manager shutting down"})

    def __init__(self) -> None:
        super().__init__()
        self._said: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message not in self._LINES:
            return True
        first = message not in self._said
        self._said.add(message)
        return first


METRICS_PATH = "/metrics"
PROTECTED = (MCP_PATH, METRICS_PATH)
"""Paths that need the token (or OAuth) when authentication is on: metrics name the catalog's tools and servers."""


METRICS_SCOPE = "lazytools:metrics"
"""The scope an OAuth token needs for /metrics under a policy, unless `metrics_scope` names another."""


def metrics_scope(settings: Settings) -> str | None:
    """The scope an OAuth token needs for /metrics: metrics list every server and tool, which a policy hides from
    users, so with a policy only operators read them."""
    if settings.metrics_scope is not None:
        return settings.metrics_scope or None
    return METRICS_SCOPE if settings.policy is not None else None


def metrics_endpoint(metrics: Metrics, scope: str | None = None) -> Callable[[Request], Awaitable[Response]]:
    """`GET /metrics`: the registry in Prometheus' text format (a scrape reads counters; it is cheap). With
    `scope`, an OAuth principal must hold it (the named principals, the shared token's and loopback's, are the
    server's operator)."""

    async def endpoint(request: Request) -> Response:
        principal = request.scope.get(SCOPE_KEY)
        if scope is not None and (not isinstance(principal, Principal)
                                  or (principal.kind == "oauth" and scope not in principal.scopes)):
            challenge = f'Bearer error="insufficient_scope", scope="{scope}"'
            return Response(f"Forbidden: reading metrics needs the scope {scope}\n", status_code=403,
                            media_type="text/plain", headers={"WWW-Authenticate": challenge})
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return endpoint


async def _healthz(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


def build_app(server: Server[Any], settings: Settings, *, state: SharedState | None = None) -> Starlette:
    """The ASGI app for `server`: streamable HTTP at `/mcp`, liveness at `/healthz`, readiness at `/readyz`.

    With `state`, handshake-era sessions live in that shared store (http_shared_sessions.py) instead of this process."""
    redact_session_ids()
    # Host and Origin are checked by HTTPGuard for every route, so the SDK's own check (with narrower defaults
    # that would refuse a Host without a port) stays off; it still checks Content-Type and Accept.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    common: dict[str, Any] = {
        "json_response": settings.json_response,
        "security_settings": security,
        "max_request_body_size": settings.max_body_bytes,
    }
    stateless = StreamableHTTPSessionManager(server, stateless=True, **common)
    sessions: StreamableHTTPSessionManager | SharedSessionManager
    # Below the connection cap the server will keep (lowered to fit the open-file limit, as `_uvicorn_config` does).
    streams = StreamBudget(stream_budget(fd_bounded(settings.max_connections, quiet=True)[0]))
    if state is not None:  # replicas: sessions in the shared store (docs/scaling.md)
        sessions = SharedSessionManager(
            server, state, stateless, json_response=settings.json_response, security_settings=security,
            idle_timeout=settings.replica_idle_timeout, max_sessions=settings.max_sessions,
            refresh_every=max(1.0, settings.session_idle_timeout / 3),
            listening=next((m.listening for m in server.middleware if isinstance(m, SharedSessions)), None),
            streams=streams)
    else:
        sessions = SessionTable(
            server, session_idle_timeout=settings.session_idle_timeout, max_sessions=settings.max_sessions,
            streams=streams, **common)
    readiness = Readiness(state.ping if state is not None else None)

    at_once = _at_once(server, settings, common)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        once = _SaidOnce()
        _MANAGER_LOG.addFilter(once)
        try:
            async with sessions.run(), stateless.run(), at_once.manager.run() if at_once else nullcontext():
                readiness.started = True
                yield
        finally:
            readiness.started = False
            _MANAGER_LOG.removeFilter(once)

    token = settings.auth_token.get_secret_value() if settings.auth_token is not None else None
    guarding: dict[str, Any] = {
        "bind_host": settings.host, "allowed_hosts": settings.allowed_hosts,
        "allowed_origins": settings.allowed_origins, "token": token, "protected_prefix": PROTECTED}
    middleware = [Middleware(HTTPGuard, **guarding)]
    # Who each request acts for (http_auth.py): OAuth, the shared token's user, or anonymous.
    identity = edge_auth(settings, PROTECTED)
    middleware += identity.middleware
    cors = None
    if settings.allowed_origins:
        # Browser clients on the listed origins must read Mcp-Session-Id and send it (and a token) back.
        cors = Middleware(
            CORSMiddleware,
            allow_origins=settings.allowed_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["authorization", "content-type", "accept", "last-event-id", "mcp-protocol-version",
                           MCP_SESSION_ID_HEADER],
            expose_headers=[MCP_SESSION_ID_HEADER, "www-authenticate"],
        )
        middleware.insert(0, cors)
    # Before anything reads a header (CORS, Host, the token): too many of them is a 431 (http_limits.py).
    counting = {"max_count": settings.max_header_count, "max_bytes": settings.max_header_bytes}
    middleware.insert(0, Middleware(HeaderCount, **counting))
    endpoint = McpEndpoint(sessions, stateless, max_body_bytes=settings.max_body_bytes,
                           body_timeout=settings.body_timeout, max_initialize_bytes=settings.max_initialize_bytes,
                           max_containers=settings.max_message_containers,
                           readiness=readiness,
                           admission=_admission(server, settings, sessions, state), at_once=at_once)
    inflight = InFlight(endpoint)
    routes = [Route(MCP_PATH, endpoint=endpoint), Route("/healthz", _healthz, methods=["GET"]),
              Route("/readyz", readiness.endpoint, methods=["GET"]), *identity.routes]
    metrics = getattr(server, "metrics", None)
    if isinstance(metrics, Metrics):
        routes.append(Route(METRICS_PATH, metrics_endpoint(metrics, metrics_scope(settings)), methods=["GET"]))
    # `/mcp` passes the same checks in the same order, with the edge's layers folded into one (http_edge.py).
    direct: ASGIApp = endpoint
    for layer in reversed([] if identity.principal is not None else identity.middleware):
        direct = layer.cls(direct, *layer.args, **layer.kwargs)
    count = HeaderCount(endpoint, **counting)
    direct = Edge(direct, guard=HTTPGuard(endpoint, **guarding), inflight=inflight,
                  count=None if cors is not None else count, principal=identity.principal)
    if cors is not None:
        count.app = cors.cls(direct, *cors.args, **cors.kwargs)
        direct = count
    app = _App(direct, routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.readiness = readiness
    app.state.inflight = inflight
    app.state.sessions = sessions
    return app


def _at_once(server: Server[Any], settings: Settings, common: dict[str, Any]) -> AtOnce | None:
    """Where calls answered at once go (`AtOnce`), when answers are SSE and the server can tell those calls."""
    catalog = getattr(server, "catalog", None)
    if settings.json_response or not isinstance(catalog, Catalog):
        return None
    live = getattr(server, "index", None)
    fresh = (lambda: live.fresh) if isinstance(live, LiveIndex) else None
    return AtOnce(StreamableHTTPSessionManager(server, stateless=True, **{**common, "json_response": True}),
                  partial(answers_at_once, catalog, index=fresh))


def _admission(server: Server[Any], settings: Settings,
               sessions: StreamableHTTPSessionManager | SharedSessionManager,
               state: SharedState | None) -> SessionAdmission:
    """Who may open a session here: counted in the replicas' Redis when there is one, else in this process."""
    limits = next((m for m in getattr(server, "middleware", ()) if isinstance(m, RateLimitMiddleware)), None)
    alive: Alive
    if isinstance(sessions, SharedSessionManager):
        store = sessions.state

        async def alive(key: str) -> bool:
            return await store.peek(key) is not None
    else:
        # The SDK's manager keeps its open sessions by id (and drops each as it ends: DELETE, idle, crash).
        held = sessions._server_instances

        async def alive(key: str) -> bool:
            return key in held
    client = getattr(state, "client", None)
    counter: SessionCounter = MemorySessionCounter()
    if client is not None:
        counter = RedisSessionCounter(client, prefix=settings.state_prefix, ttl=4 * settings.session_idle_timeout)
    return SessionAdmission(counter, settings.max_sessions_per_principal, alive, limits)


class _App(Starlette):
    """The Starlette app, except that `/mcp` goes straight to the same guards and endpoint (`direct`), without
    Starlette's error, exception and routing layers: they were a tenth of a trivial call's CPU, and the endpoint
    answers every failure itself (uvicorn answers 500 to anything that escapes, as Starlette's layer would)."""

    def __init__(self, direct: ASGIApp, **options: Any) -> None:
        super().__init__(**options)
        self._direct = direct

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == MCP_PATH:
            scope["app"] = self
            await self._direct(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def _protocol_class(name: str) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class by name: `auto` is httptools when it is installed, else h11."""
    if name == "h11":
        return H11Protocol
    if name == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # needs httptools installed

        return HttpToolsProtocol
    return AutoHTTPProtocol


def _uvicorn_config(app: ASGIApp, host: str, port: int, log_level: str, *, header_timeout: float = 10.0,
                    max_connections: int = 512, max_header_bytes: int = 64 * 1024,
                    implementation: str = "auto", tls: tuple[Path, Path] | None = None) -> uvicorn.Config:
    # Headers within a deadline and a size, a cap on open connections (http_limits.py): slowloris cannot starve
    # us, nor endless headers fill the memory.
    connections, backlog = fd_bounded(max_connections)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=guarded_protocol(_protocol_class(implementation), header_timeout=header_timeout,
                              max_connections=connections, max_header_bytes=max_header_bytes),
        # h11 holds a header block whole until it ends; its own cap stays above ours (which answers 431, where h11
        # answers 400) by more than one read of the socket.
        h11_max_incomplete_event_size=max_header_bytes + 512 * 1024,
        backlog=backlog,
        lifespan="on",
        # uvicorn's own logging config writes access lines to stdout; ours sends everything to stderr.
        log_config=None,
        log_level=log_level.lower(),
        access_log=log_level.upper() == "DEBUG",
        timeout_graceful_shutdown=_SHUTDOWN_GRACE,
        ssl_certfile=str(tls[0].expanduser()) if tls is not None else None,
        ssl_keyfile=str(tls[1].expanduser()) if tls is not None else None,
    )


async def serve_http(server: Server[Any], settings: Settings, *, state: SharedState | None = None) -> None:
    """Serve `server` over streamable HTTP on settings.host:settings.port until interrupted."""
    if settings.host.lower() not in LOOPBACK_NAMES and settings.auth_token is None and settings.auth_issuer is None:
        logger.warning("serving on %s without LAZYTOOLS_AUTH_TOKEN or LAZYTOOLS_AUTH_ISSUER: anyone who can reach "
                       "this address can call every tool", settings.host)
    if settings.auth_issuer is not None:
        logger.info("OAuth: tokens of %s for %s (scopes: %s)", settings.auth_issuer, settings.auth_audience,
                    ", ".join(settings.auth_scopes) or "none required")
    scheme = "https" if settings.tls_cert is not None else "http"
    where = f"{scheme}://{_url_host(settings.host)}:{settings.port}" if settings.port else f"a free port of {settings.host}"
    logger.info("streamable HTTP at %s%s, liveness at /healthz, readiness at /readyz%s", where, MCP_PATH,
                ", sessions in the shared store" if state is not None else "")
    await http_server(build_app(server, settings, state=state), settings).serve()


def http_server(app: ASGIApp, settings: Settings) -> uvicorn.Server:
    """The uvicorn server for `app` on settings.host:settings.port, with lazytools' connection limits (and, for
    an app of `build_app`, readiness and drain on SIGTERM)."""
    tls = (settings.tls_cert, settings.tls_key) if settings.tls_cert is not None and settings.tls_key is not None \
        else None
    config = _uvicorn_config(app, settings.host, settings.port, settings.log_level,
                             header_timeout=settings.header_timeout, max_connections=settings.max_connections,
                             max_header_bytes=settings.max_header_bytes, implementation=settings.http_implementation,
                             tls=tls)
    state = getattr(app, "state", None)
    readiness = getattr(state, "readiness", None) or Readiness()
    sessions = getattr(state, "sessions", None)
    on_drained = sessions.close_streams if isinstance(sessions, SharedSessionManager) else None
    return DrainingServer(config, readiness, getattr(state, "inflight", None), settings.drain_seconds, on_drained,
                          grace=settings.drain_grace_seconds)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
