"""The table of handshake-era HTTP sessions held in this process: when it is full, an idle session makes room; and
the budget of GET streams the sessions hold, past which the oldest stream of the busiest address is closed.

The SDK's manager refuses every new session with 503 while `max_sessions` are open, and a session idles out only
after `LAZYTOOLS_SESSION_IDLE_TIMEOUT` (30 min): one client that opened that many sessions and sent nothing more
locked every newcomer out for half an hour (docs/reliability.md). Here a full table closes one idle session for the
newcomer instead, as its idle timeout would have: the session idle longest among those of the client address that
holds the most sessions, so a client that floods the table makes room out of its own sessions first, and the others'
stay. A session with a request in flight (an open GET stream is one) is never closed; when every session has one, the
newcomer gets the 503 as before. A closed session's id answers 404, on which the spec has its client start a new one.

A session's GET stream is a request in flight for as long as it is open, and holds one of the process's
`LAZYTOOLS_MAX_CONNECTIONS` connections: a client that opened a few hundred sessions, each with its stream, left no
connection for anyone else (a newcomer's connection was reset). `StreamBudget` keeps streams below the connection
cap with room to spare; past it, a new stream closes the oldest stream of the address holding the most, whose client
reopens it when it wants it again (the spec lets a server close a GET stream at any time). The session itself stays.

What it reads of the SDK's manager and transport (mcp 2.3.0, pinned) is private there: the manager's table of
sessions and its admission of one, the transport's count of requests in flight and its idle scope, whose deadline is
the end of the last request plus the idle timeout (tests/test_http.py holds the behaviour).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import anyio
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Message, Receive, Scope, Send

from .http_head import head_of

__all__ = ["SessionTable", "Sparse", "StreamBudget", "client_address", "is_idle", "stream_budget"]

logger = logging.getLogger(__name__)

_ADDRESS: ContextVar[str] = ContextVar("lazytools_session_address", default="")
"""The client address of the request being admitted (the manager's admission does not see the request)."""


def is_idle(transport: StreamableHTTPServerTransport) -> bool:
    """Whether the session has no request in flight and counts down to its idle timeout (False for one without an
    idle timeout: it never idles out, and is never closed to make room)."""
    scope = transport.idle_scope
    timeout: float | None = getattr(transport, "_idle_timeout", None)
    in_flight: int = getattr(transport, "_requests_in_flight", 1)
    # While a request is in flight the deadline is infinite; after the last one it is that end plus the timeout.
    return (scope is not None and timeout is not None and not in_flight and not scope.cancel_called
            and math.isfinite(scope.deadline))


class Sparse:
    """An event that floods can bring by the thousand (a session refused, one closed to make room), logged at most
    once every `every` seconds: `count` says how many came since it was last said, when it is time to say it."""

    def __init__(self, every: float = 60.0) -> None:
        self.every = every
        self._count = 0
        self._said_at = -math.inf

    def count(self) -> int | None:
        """Count one; the number to log now (this one and those since the last line), or None to stay quiet."""
        self._count += 1
        now = anyio.current_time()
        if now - self._said_at < self.every:
            return None
        count, self._count, self._said_at = self._count, 0, now
        return count


def stream_budget(max_connections: int) -> int:
    """The most GET streams held at once for a connection cap: an eighth of the connections (at least 4) stay for
    everything else."""
    return max(1, max_connections - max(4, max_connections // 8))


class StreamBudget:
    """The GET streams held in this process, by client address; at most `most` at once."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._by_address: dict[str, dict[object, Callable[[], None]]] = {}
        """Client address -> its streams held (each a token and how to close it), oldest first."""
        self._held = 0
        self.closed = 0
        """Streams closed so far to make room for a new one."""
        self._closings = Sparse()

    @contextmanager
    def holding_once_open(self, address: str, close: Callable[[], None], send: Send) -> Iterator[Send]:
        """Count a GET of `address` as a stream held from when its answer starts as one (200, the one answer that
        opens a stream) until it ends; yields the `send` to answer it through. A GET the SDK refuses (409 for a
        second stream, 406, 400, 404) was counted before it was read, and closed another address's stream for
        nothing: one client closed everyone's streams with requests that held none."""
        token: object | None = None

        async def sending(message: Message) -> None:
            nonlocal token
            if token is None and message["type"] == "http.response.start" and message["status"] == 200:
                token = self._take(address, close)
            await send(message)

        try:
            yield sending
        finally:
            if token is not None:
                self._drop(address, token)

    def _take(self, address: str, close: Callable[[], None]) -> object:
        if self._held >= self.most:
            self._close_one()
        token = object()
        self._by_address.setdefault(address, {})[token] = close
        self._held += 1
        return token

    def _drop(self, address: str, token: object) -> bool:
        streams = self._by_address.get(address)
        if streams is None or streams.pop(token, None) is None:
            return False  # closed to make room already
        self._held -= 1
        if not streams:
            del self._by_address[address]
        return True

    def _close_one(self) -> None:
        address = max(self._by_address, key=lambda key: len(self._by_address[key]))
        token, close = next(iter(self._by_address[address].items()))
        holds = len(self._by_address[address])
        self._drop(address, token)
        close()
        self.closed += 1
        if (count := self._closings.count()) is not None:
            logger.warning("%d GET streams held (of LAZYTOOLS_MAX_CONNECTIONS, some kept for other requests): %d "
                           "closed for new ones since last said, the last the oldest of %s (which held %d)",
                           self.most, count, address or "an unknown address", holds)


class SessionTable(StreamableHTTPSessionManager):
    """The SDK's session manager, which closes an idle session to admit a new one when `max_sessions` are open, and
    holds its sessions' GET streams within `streams`."""

    def __init__(self, *args: Any, streams: StreamBudget | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.streams = streams
        self._by_address: dict[str, dict[str, None]] = {}
        """Client address -> its sessions still in the table (ids), the one whose last request ended first first."""
        self._address_of: dict[str, str] = {}
        self._room_made = Sparse()
        """Sessions closed to admit a new one, said once a minute at most."""

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        address = client_address(scope)
        token = _ADDRESS.set(address)
        session_id = head_of(scope).session_id
        transport = self._server_instances.get(session_id) if session_id is not None else None
        try:
            if transport is not None and self.streams is not None and scope.get("method") == "GET":
                with self.streams.holding_once_open(address, transport.close_standalone_sse_stream, send) as sending:
                    await super()._handle_stateful_request(scope, receive, sending)
            else:
                await super()._handle_stateful_request(scope, receive, send)
        finally:
            _ADDRESS.reset(token)
            self._used(session_id)

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
                               and is_idle(held)), None)
            if session_id is None:
                continue
            transport = self._server_instances.pop(session_id)
            self._session_owners.pop(session_id, None)
            assert transport.idle_scope is not None  # not idle without one
            transport.idle_scope.cancel()  # its server task ends and terminates it, as after an idle timeout
            self._say(address)
            self._forget(session_id)
            return

    def _say(self, address: str) -> None:
        """Log that sessions were closed to make room: once a minute at most (a flood makes room many times)."""
        if (count := self._room_made.count()) is not None:
            logger.warning("the session table is full (LAZYTOOLS_MAX_SESSIONS=%s): %d idle session(s) closed for new "
                           "ones since last said, the last of %s (which holds %d)", self.max_sessions, count,
                           address or "an unknown address", len(self._by_address[address]))


def client_address(scope: Scope) -> str:
    """The request's client address ("" when the server does not know it)."""
    client = scope.get("client")
    return str(client[0]) if client else ""
