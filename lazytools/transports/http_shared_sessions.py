"""Handshake-era HTTP sessions kept in a shared store, so that any replica serves any request of a session.

Used instead of the SDK's `StreamableHTTPSessionManager` (which answers 404 to a session id it does not hold) when
`LAZYTOOLS_STATE_URL` is set. A request whose session this replica does not hold yet is served on a connection
rebuilt from the session's record (its protocol version and client info, already initialized); the replica keeps
that connection for `replica_idle_timeout`. Every request loads the record first (refreshing its TTL), so a
session deleted or expired anywhere answers 404 everywhere.

Messages outside a request (`list_changed`, resource updates, logs) go over the store's bus to the replica that
holds the session's GET stream; with none holding it they are kept in the session's event store, for the client's
reconnection with `Last-Event-ID`. Requests for the client outside a call (roots, pings) go out only where the GET
stream is held here. Built only from the SDK's public parts.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import LAST_EVENT_ID_HEADER, MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.dispatcher import CallOptions, Outbound
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..identity import ANONYMOUS, SCOPE_KEY, Principal
from ..server.middleware.shared_sessions import (
    OWNER_SCOPE_KEY,
    RECORD_SCOPE_KEY,
    SUBSCRIPTIONS_CHANGED,
    UNRECORDED_SCOPE_KEY,
)
from ..state import GET_STREAM, SessionRecord, SharedState, StateUnavailableError
from ..state.event_ids import parse_call_event_id
from ..state.events import message_of
from ..state.outbox import defer
from ..state.sync import restore_connection
from .http_guard import jsonrpc_error
from .http_sessions import Sparse, StreamBudget, client_address, is_idle

__all__ = ["SharedSessionManager"]

logger = logging.getLogger(__name__)



class _SharedOutbound:
    """A session's standalone channel on this replica: notifications go to whichever replica holds its GET stream."""

    def __init__(self, local: Outbound, key: str, state: SharedState) -> None:
        self.local = local
        self._key = key
        self._state = state

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None,
                               opts: CallOptions | None = None) -> dict[str, Any]:
        # An answer comes back as a POST to any replica; only one whose GET stream is here can match it.
        return await self.local.send_raw_request(method, params, opts)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        payload = dict(params) if params is not None else None
        body = {"method": method, "params": payload}

        async def send() -> None:
            try:
                if await self._state.publish(self._key, body) == 0:
                    # Nobody holds the GET stream now (a reconnection under way): keep it for Last-Event-ID.
                    await self._state.events(self._key).store_event(GET_STREAM, message_of(method, payload))
            except (StateUnavailableError, OSError, TimeoutError) as exc:
                logger.info("session %s: %s not delivered: %s", self._key[:8], method, exc)
            except Exception as exc:  # best effort, like the SDK's own notify: never fail the caller
                logger.info("session %s: %s not delivered: %s", self._key[:8], method, type(exc).__name__)

        if not defer(send):
            await send()


Listening = Callable[[str, Connection, Principal], Awaitable[None]]
"""Told that a session's GET stream is held here (opened, or its subscriptions changed): key, connection, and the
principal of the GET request."""


@dataclass(eq=False)
class _Held:
    """One session's connection on this replica."""

    transport: StreamableHTTPServerTransport
    started: anyio.Event = field(default_factory=anyio.Event)
    """Set once the connection is up (or failed to come up): requests of the session that arrive meanwhile wait."""
    local: Outbound | None = None
    connection: Connection | None = None
    principal: Principal = ANONYMOUS
    """Who opened the GET stream held here (what following its subscriptions acts as)."""
    changed: Callable[[], None] | None = None
    """Set while the GET stream is held here: the session's subscriptions changed on some replica."""

    async def push(self, message: dict[str, Any]) -> None:
        if message.get("method") == SUBSCRIPTIONS_CHANGED:
            if self.changed is not None:
                self.changed()
            return
        if self.local is not None:
            await self.local.notify(message["method"], message.get("params"))


class SharedSessionManager:
    """The `/mcp` handler for handshake-era sessions kept in `state`; 2026-07-28 requests go to `modern`."""

    def __init__(self, server: Server[Any], state: SharedState, modern: StreamableHTTPSessionManager, *,
                 json_response: bool, security_settings: TransportSecuritySettings | None,
                 idle_timeout: float, max_sessions: int, refresh_every: float,
                 listening: Listening | None = None, streams: StreamBudget | None = None) -> None:
        self.server = server
        self.state = state
        self.modern = modern
        self.json_response = json_response
        self.security_settings = security_settings
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.refresh_every = refresh_every
        self.listening = listening
        self.streams = streams
        """The GET streams this process holds, within their budget (`http_sessions.StreamBudget`)."""
        self._held: dict[str, _Held] = {}
        self._task_group: anyio.abc.TaskGroup | None = None
        self._lifespan_state: Any = None
        self._refusals = Sparse()
        state.on_end(self._ended_elsewhere)

    def __len__(self) -> int:
        return len(self._held)

    def transport_of(self, session_id: str) -> StreamableHTTPServerTransport | None:
        """The transport of a session this process holds, if it does."""
        held = self._held.get(session_id)
        return held.transport if held is not None else None

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with self.server.lifespan(self.server) as lifespan_state, anyio.create_task_group() as tg:
            self._lifespan_state = lifespan_state
            self._task_group = tg
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
                self._task_group = None
                self._held.clear()

    async def close_streams(self) -> None:
        """End every connection held here (a draining replica): clients reconnect to another one, and the sessions
        go on from the store."""
        for key, held in list(self._held.items()):
            self._held.pop(key, None)
            with anyio.CancelScope(shield=True):
                await held.transport.terminate()

    async def handle_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.modern.handle_request(scope, receive, send)  # 2026-07-28: no session state at all
            return
        key = headers.get(MCP_SESSION_ID_HEADER)
        if key is None:
            if scope["method"] != "POST":
                await jsonrpc_error(400, "Bad Request: Missing session ID")(scope, receive, send)
                return
            await self._open(scope, receive, send)
            return
        try:
            record = await self.state.load(key)
            # As the SDK does: a session answers only the credential that opened it, as if it did not exist.
            # Checked before anything changes, so a foreign DELETE deletes nothing.
            foreign = record is not None and record.owner != _requestor(scope)
            if record is not None and not foreign and scope["method"] == "DELETE":
                await self.state.delete(key)
                await self.state.end(key)
        except StateUnavailableError as exc:
            logger.warning("session %s: %s", key[:8], exc)
            await jsonrpc_error(503, f"{exc}; try again shortly", code=types.INTERNAL_ERROR)(scope, receive, send)
            return
        if record is None or foreign:
            if record is None:
                await self._forget(key)
            else:
                logger.warning("session %s: refused a request with another credential than the one that opened it",
                               key[:8])
            await jsonrpc_error(404, "Session not found")(scope, receive, send)
            return
        if scope["method"] == "DELETE" and key not in self._held:
            await _ended(scope, receive, send)  # deleted from the store above; nothing of it is here
            return
        try:
            held = await self._held_for(record)
        except StateUnavailableError as exc:
            logger.warning("session %s: %s", key[:8], exc)
            await jsonrpc_error(503, f"{exc}; try again shortly", code=types.INTERNAL_ERROR)(scope, receive, send)
            return
        if held is None:
            await jsonrpc_error(503, "Too many open sessions", code=types.INTERNAL_ERROR)(scope, receive, send)
            return
        self._used(key, held)
        scope[RECORD_SCOPE_KEY] = record
        if scope["method"] == "GET" and not _resumes_a_call(headers):
            await self._serve_stream(key, held, scope, receive, send)
        else:
            await held.transport.handle_request(scope, receive, send)
        if held.transport.is_terminated:
            await self._forget(key)

    async def _serve_stream(self, key: str, held: _Held, scope: Scope, receive: Receive, send: Send) -> None:
        """A GET stream: this replica receives the session's messages while it is open, and keeps the session alive
        in the store (a client that only listens makes no requests)."""
        found = scope.get(SCOPE_KEY)
        held.principal = found if isinstance(found, Principal) else ANONYMOUS
        budget = self.streams.holding_once_open(client_address(scope), held.transport.close_standalone_sse_stream,
                                                send) if self.streams is not None else nullcontext(send)
        with budget as sending:
            async with anyio.create_task_group() as tg, self.state.hold(key, held.push):
                tg.start_soon(self._keep_alive, key)
                if self.listening is not None and held.connection is not None:
                    tg.start_soon(self._follow, key, held)
                try:
                    await held.transport.handle_request(scope, receive, sending)
                finally:
                    held.changed = None
                    tg.cancel_scope.cancel()

    async def _follow(self, key: str, held: _Held) -> None:
        """Follow the session's subscriptions now and whenever they change, in a task of the stream's own: an upstream
        that is slow to subscribe never holds up the bus."""
        assert self.listening is not None and held.connection is not None
        again = anyio.Event()

        def changed() -> None:
            again.set()

        held.changed = changed
        while True:
            again = anyio.Event()
            try:
                await self.listening(key, held.connection, held.principal)
            except Exception:  # following is best effort; the stream goes on
                logger.exception("session %s: following its subscriptions failed", key[:8])
            await again.wait()

    async def _keep_alive(self, key: str) -> None:
        while True:
            await anyio.sleep(self.refresh_every)
            try:
                await self.state.touch(key)
            except StateUnavailableError as exc:
                logger.info("session %s: TTL not refreshed: %s", key[:8], exc)

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a session (initialize): a new session, recorded in the store by the server."""
        if not self._room():
            self._refused()
            await jsonrpc_error(503, "Too many open sessions", code=types.INTERNAL_ERROR)(scope, receive, send)
            return
        if not await self.state.ping():
            # A session that could not be recorded would answer 404 on the next replica: refuse it as every request
            # of a session is refused while Redis is away (haproxy retries a 503 on another replica).
            logger.warning("a new session refused: the session store does not answer")
            await jsonrpc_error(503, "session store (Redis) unavailable; try again shortly",
                                code=types.INTERNAL_ERROR)(scope, receive, send)
            return
        key = uuid4().hex
        logger.info("session %s: opened here", key[:8])
        scope[OWNER_SCOPE_KEY] = _requestor(scope)
        held = self._start(key, None)
        await held.started.wait()
        if held.connection is None:
            await jsonrpc_error(500, "Internal Server Error: the session did not start",
                                code=types.INTERNAL_ERROR)(scope, receive, send)
            return
        status: int | None = None

        async def watch(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            if scope.get(UNRECORDED_SCOPE_KEY) and self._held.get(key) is held:
                del self._held[key]  # before the client hears: no session that no replica knows counts here
            await send(message)

        try:
            await held.transport.handle_request(scope, receive, watch)
        finally:
            if status is None or status >= 400 or scope.get(UNRECORDED_SCOPE_KEY):
                if self._held.get(key) is held:
                    del self._held[key]
                if not held.transport.is_terminated:
                    with anyio.CancelScope(shield=True):
                        await held.transport.terminate()

    async def _held_for(self, record: SessionRecord) -> _Held | None:
        """The session's connection here, once it is up: the one held, or one rebuilt from the record. None when this
        replica holds as many sessions as it may."""
        for _ in range(2):  # a start that failed under a waiting request: that request starts its own
            held = self._held.get(record.key)
            if held is not None and held.transport.is_terminated:
                del self._held[record.key]  # ended (idle) and its task not done yet: a new connection
                held = None
            held = held or self._adopt(record)
            if held is None:
                return None
            await held.started.wait()
            if held.connection is not None and self._held.get(record.key) is held:
                return held
        raise StateUnavailableError("the session's connection did not start on this replica")

    def _adopt(self, record: SessionRecord) -> _Held | None:
        """This replica's connection for a session it did not hold: rebuilt from the record, already initialized."""
        if not self._room():
            self._refused()
            return None
        logger.info("session %s: served here from the store", record.key[:8])
        return self._start(record.key, record)

    def _room(self) -> bool:
        """Whether this replica may hold one more connection: below `max_sessions`, or once the connection idle
        longest is let go. That loses nothing: the session stays in the store, and its next request, here or on
        another replica, serves it from there. Connections with a request in flight (a GET stream) are kept."""
        if len(self._held) < self.max_sessions:
            return True
        # `_held` is in the order of the connections' last requests (`_used`): the first idle one is idle longest.
        key = next((key for key, held in self._held.items() if is_idle(held.transport)), None)
        if key is None:
            return False
        held = self._held.pop(key)
        assert held.transport.idle_scope is not None  # not idle without one
        held.transport.idle_scope.cancel()  # `_serve` ends and terminates it, as after its idle timeout
        logger.info("session %s: let go here to hold a newer one (LAZYTOOLS_MAX_SESSIONS=%d); it stays in the store",
                    key[:8], self.max_sessions)
        return True

    def _used(self, key: str, held: _Held) -> None:
        """A request of the session `key` came: its connection goes last in `_held`'s order."""
        if self._held.get(key) is held:
            del self._held[key]
            self._held[key] = held

    def _refused(self) -> None:
        """A session refused for `max_sessions`: said once a minute at most (a full replica refuses many)."""
        if (count := self._refusals.count()) is not None:
            logger.warning("%d session(s) refused in the last minute: this replica holds LAZYTOOLS_MAX_SESSIONS=%d "
                           "sessions (see docs/scaling.md for sizing it and LAZYTOOLS_REPLICA_IDLE_TIMEOUT)",
                           count, self.max_sessions)

    def _start(self, key: str, record: SessionRecord | None) -> _Held:
        """The session's connection, held from now on and started in the background; `started` is set once it is
        up (requests of the session that arrive before then wait for it, never reach a transport not connected)."""
        transport = StreamableHTTPServerTransport(
            mcp_session_id=key, is_json_response_enabled=self.json_response, event_store=self.state.events(key),
            security_settings=self.security_settings, idle_timeout=self.idle_timeout)
        held = _Held(transport)
        self._held[key] = held
        assert self._task_group is not None, "run() is not running"
        self._task_group.start_soon(self._serve, key, held, record)
        return held

    async def _serve(self, key: str, held: _Held, record: SessionRecord | None) -> None:
        transport = held.transport
        try:
            async with transport.connect() as (read_stream, write_stream):
                dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
                    read_stream, write_stream, inline_methods=frozenset({"initialize"}))
                held.local = dispatcher
                connection = Connection.for_loop(_SharedOutbound(dispatcher, key, self.state), session_id=key)
                held.connection = connection
                if record is not None:
                    restore_connection(connection, record)
                held.started.set()
                idle = transport.idle_scope if transport.idle_scope is not None else anyio.CancelScope()
                with idle:
                    await serve_connection(self.server, dispatcher, connection=connection,
                                           lifespan_state=self._lifespan_state)
        except Exception:
            logger.exception("session %s: connection crashed", key[:8])
        finally:
            if self._held.get(key) is held:
                del self._held[key]
            held.started.set()  # a failed start: whoever waits sees no connection
            if not transport.is_terminated:
                with anyio.CancelScope(shield=True):
                    await transport.terminate()

    async def _forget(self, key: str) -> None:
        held = self._held.pop(key, None)
        if held is not None and not held.transport.is_terminated:
            with anyio.CancelScope(shield=True):
                await held.transport.terminate()

    async def _ended_elsewhere(self, key: str) -> None:
        await self._forget(key)


def _requestor(scope: Scope) -> dict[str, str | None] | None:
    """The verified credential of a request (the SDK's edge auth leaves it on `scope["user"]`), as a record keeps it."""
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return None
    context = authorization_context(user)
    return {"client_id": context["client_id"], "issuer": context["issuer"], "subject": context["subject"]}


def _resumes_a_call(headers: Headers) -> bool:
    """A GET that resumes a request's answer stream (events.py answers it), not the session's GET stream: it takes
    none of the session's messages."""
    last = headers.get(LAST_EVENT_ID_HEADER)
    return last is not None and parse_call_event_id(last) is not None


async def _ended(scope: Scope, receive: Receive, send: Send) -> None:
    await Response(status_code=200)(scope, receive, send)
