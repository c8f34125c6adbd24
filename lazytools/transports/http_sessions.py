"""The table of handshake-era HTTP sessions held in this process: when it is full, an idle session makes room.

The SDK's manager refuses every new session with 503 while `max_sessions` are open, and a session idles out only
after `LAZYTOOLS_SESSION_IDLE_TIMEOUT` (30 min): one client that opened that many sessions and sent nothing more
locked every newcomer out for half an hour (docs/reliability.md). Here a full table closes one idle session for the
newcomer instead, as its idle timeout would have: the session idle longest among those of the client address that
holds the most sessions, so a client that floods the table makes room out of its own sessions first, and the others'
stay. A session with a request in flight (an open GET stream is one) is never closed; when every session has one, the
newcomer gets the 503 as before. A closed session's id answers 404, on which the spec has its client start a new one.

What it reads of the SDK's manager and transport (mcp 2.3.0, pinned) is private there: the manager's table of
sessions and its admission of one, the transport's count of requests in flight and its idle scope, whose deadline is
the end of the last request plus the idle timeout (tests/test_http.py holds the behaviour).
"""

from __future__ import annotations

import logging
import math
from contextvars import ContextVar
from typing import Any

import anyio
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

__all__ = ["SessionTable", "idle_since"]

logger = logging.getLogger(__name__)

_SAY_EVERY = 60.0
"""Seconds between two log lines saying that sessions were closed to make room."""
_ADDRESS: ContextVar[str] = ContextVar("lazytools_session_address", default="")
"""The client address of the request being admitted (the manager's admission does not see the request)."""


def idle_since(transport: StreamableHTTPServerTransport) -> float | None:
    """When the session's last request ended (the event loop's clock), or None while one is in flight or the session
    has no idle timeout (so it never idles out, and is never closed to make room)."""
    scope = transport.idle_scope
    timeout: float | None = getattr(transport, "_idle_timeout", None)
    in_flight: int = getattr(transport, "_requests_in_flight", 1)
    if scope is None or timeout is None or in_flight or scope.cancel_called:
        return None
    deadline = scope.deadline
    return deadline - timeout if math.isfinite(deadline) else None


class SessionTable(StreamableHTTPSessionManager):
    """The SDK's session manager, which closes an idle session to admit a new one when `max_sessions` are open."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._by_address: dict[str, dict[str, None]] = {}
        """Client address -> its sessions still in the table (ids), the one whose last request ended first first."""
        self._address_of: dict[str, str] = {}
        self.made_room = 0
        """Sessions closed so far to admit a new one."""
        self._said_at = -math.inf
        self._unsaid = 0

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        token = _ADDRESS.set(str(client[0]) if client else "")
        try:
            await super()._handle_stateful_request(scope, receive, send)
        finally:
            _ADDRESS.reset(token)
            self._used(_session_id(scope))

    def _used(self, session_id: str | None) -> None:
        """A request of `session_id` ended: its session goes last in its address's order."""
        address = self._address_of.get(session_id) if session_id is not None else None
        if address is not None and session_id is not None:
            held = self._by_address[address]
            del held[session_id]
            held[session_id] = None

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        if self.max_sessions is not None and len(self._server_instances) >= self.max_sessions:
            self._make_room()
        transport: StreamableHTTPServerTransport | None = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            address = _ADDRESS.get()
            self._by_address.setdefault(address, {})[transport.mcp_session_id] = None
            self._address_of[transport.mcp_session_id] = address
        return transport

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        # Every way a session ends comes here (DELETE, idle, a crash, an opening request that failed).
        self._forget(session_id)
        await super()._discard_session(session_id, transport)

    def _forget(self, session_id: str) -> None:
        address = self._address_of.pop(session_id, None)
        if address is None:
            return
        held = self._by_address[address]
        held.pop(session_id, None)
        if not held:
            del self._by_address[address]

    def _make_room(self) -> None:
        """Close the session idle longest of the address holding the most sessions (the next address if none of its
        sessions is idle): it ends as its idle timeout would end it, and its id answers 404 from now on."""
        for address in sorted(self._by_address, key=lambda key: len(self._by_address[key]), reverse=True):
            # In the order their last requests ended, so the first idle one is the one idle longest; those with a
            # request in flight (a held GET stream) are passed over.
            session_id = next((key for key in self._by_address[address]
                               if (held := self._server_instances.get(key)) is not None
                               and idle_since(held) is not None), None)
            if session_id is None:
                continue
            transport = self._server_instances.pop(session_id)
            self._session_owners.pop(session_id, None)
            assert transport.idle_scope is not None  # idle_since is None without one
            transport.idle_scope.cancel()  # its server task ends and terminates it, as after an idle timeout
            self.made_room += 1
            self._say(address)
            self._forget(session_id)
            return

    def _say(self, address: str) -> None:
        """Log that sessions were closed to make room: once a minute at most (a flood makes room many times)."""
        self._unsaid += 1
        now = anyio.current_time()
        if now - self._said_at >= _SAY_EVERY:
            logger.warning("the session table is full (LAZYTOOLS_MAX_SESSIONS=%s): %d idle session(s) closed for new "
                           "ones since last said, the last of %s (which holds %d)", self.max_sessions, self._unsaid,
                           address or "an unknown address", len(self._by_address[address]))
            self._said_at, self._unsaid = now, 0


def _session_id(scope: Scope) -> str | None:
    """The request's Mcp-Session-Id (the first), if it has one."""
    for name, value in scope.get("headers", ()):
        if name == b"mcp-session-id":
            return str(value.decode("latin-1"))
    return None
