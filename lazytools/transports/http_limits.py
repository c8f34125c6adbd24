"""HTTP connection limits uvicorn does not have: a deadline for a request's headers, a cap on open connections.

uvicorn closes idle kept-alive connections (`timeout_keep_alive`) but waits forever for headers that never end, so a
slowloris client holding a few hundred half-sent requests used up the process's file descriptors and `/healthz`
stopped answering. `guarded_protocol` wraps uvicorn's HTTP protocol class:

- a request's headers must be complete within `header_timeout` seconds of the connection (or, on a kept-alive
  connection, of the request's first byte), or the connection is closed;
- past `max_connections` open connections, one that is not being served is closed to make room: the oldest of those
  that sent part of a request's headers (a real client sends its headers in one piece, a slowloris client a bit at a
  time), else the one idle longest after its last answer (kept alive; its client reconnects when it needs to), else
  the slowest of those whose headers are in and whose body is still arriving (fewest bytes of the request per
  second since its first byte, counted over at least one second), else the oldest of those that sent nothing yet;
  when there is none, the newcomer gets a 503 and is closed. Connections whose request is complete and being served
  are never cut. Idle ones are fair game so that clients repeating a cheap request every few seconds on kept-alive
  connections cannot hold every slot and turn each newcomer away; bodies still arriving are, so that bodies sent a
  byte at a time (each reopened on its 408) cannot either. A slow body goes before a silent connection because a
  newcomer is silent for a moment between its connection and its request, and an attacker reopening evicted
  connections in a loop would otherwise evict exactly the newcomers.

A request's headers (with its request line) are also bounded in size, `max_header_bytes`: uvicorn's httptools
parser keeps every header line it is sent, so a few connections sending huge headers would grow the process by
hundreds of megabytes before any token was checked. Past the bound the connection gets a 431 and is closed, for either
parser; the count of header fields is bounded by `HeaderCount`, an ASGI middleware in front of every other check
(h11 holds a whole header block before anyone sees one of its fields, bounded by the same byte cap). The bound holds
for a request read while the one before it on the connection is still being served (sent right behind a POST's
body, or pipelined) and for the trailers of a chunked body: its 431 follows the earlier request's answer. The 431 is
followed by a short lingering close: the rest of what the client sends is read and dropped for a moment (at most
`_LINGER_BYTES`), so that its 431 reaches it instead of a connection reset.

The body's deadline is the ASGI app's (`McpEndpoint`), which can answer 408.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from typing import Any

import h11
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import ConfigError
from .http_head import Head, head_of

try:
    import resource
except ImportError:  # Windows: no RLIMIT_NOFILE to fit under
    resource = None  # type: ignore[assignment]

__all__ = ["LISTEN_QUEUE", "GuardedServer", "HeaderCount", "fd_bounded", "guarded_protocol", "refuse_head", "too_large"]

logger = logging.getLogger(__name__)

_FD_RESERVE = 64
"""File descriptors kept for everything else: upstream pipes, log files, the listening socket."""
LISTEN_QUEUE = 1024
"""Connections the kernel may hold before they are accepted (they cost no file descriptor of ours until then)."""
_BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_LINGER_SECONDS = 2.0
_LINGER_BYTES = 1024 * 1024
"""After a 431, what of the client's rest is read and dropped before the connection is closed."""


def _too_large_body(why: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": f"Request Header Fields Too Large: {why}"}}).encode()


def too_large(why: str) -> bytes:
    """A whole 431 response (a JSON-RPC error body) that closes the connection."""
    body = _too_large_body(why)
    return (b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


class HeaderCount:
    """ASGI middleware: a request with more than `max_count` header fields, or whose request line and headers come
    to more than `max_bytes`, gets a 431, before any other check. The connection's own count (below) refuses
    headers still arriving; this one a request whose headers came whole in one read, which h11 parses up to its
    incomplete-event size (over `max_bytes`, so that it can hold the next request while one is served)."""

    def __init__(self, app: ASGIApp, *, max_count: int, max_bytes: int | None = None) -> None:
        self.app = app
        self.max_count = max_count
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(head_of(scope))
            if refusal is not None:
                await refuse_head(send, refusal)
                return
        await self.app(scope, receive, send)

    def refusal(self, head: Head) -> str | None:
        """Why a request with these headers gets a 431, or None."""
        if head.count > self.max_count:
            return f"more than {self.max_count} header fields (LAZYTOOLS_MAX_HEADER_COUNT)"
        if self.max_bytes is not None and head.size > self.max_bytes:
            return f"the request line and headers are over {self.max_bytes} bytes (LAZYTOOLS_MAX_HEADER_BYTES)"
        return None


async def refuse_head(send: Send, why: str) -> None:
    """Answer 431 for `why`, closing the connection."""
    await send({"type": "http.response.start", "status": 431, "headers": [
        (b"content-type", b"application/json"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": _too_large_body(why)})


def fd_bounded(max_connections: int, backlog: int = 2048, *, quiet: bool = False) -> tuple[int, int]:
    """`max_connections` and the listen backlog, lowered to fit under the process's open-file limit.

    asyncio accepts up to `backlog` connections in one go before any of them is seen (and closed, if over the cap),
    and two or three such bursts can land before the first is seen, so the file descriptors must cover the open
    connections, three bursts and a reserve for the rest; past the limit accept() fails with EMFILE and asyncio stops
    accepting for a second at a time, again and again under a slowloris. `quiet`: no warning when lowered (another
    caller says it)."""
    if resource is None:
        return max_connections, backlog
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections, backlog
    backlog = max(min(backlog, (soft - _FD_RESERVE) // 8), 8)
    fitting = max(soft - _FD_RESERVE - 3 * backlog, 8)
    if fitting < max_connections:
        if quiet:
            return fitting, backlog
        logger.warning("LAZYTOOLS_MAX_CONNECTIONS=%d does not fit the open-file limit (%d): using %d (listen backlog "
                       "%d)", max_connections, soft, fitting, backlog)
        return fitting, backlog
    return max_connections, backlog


def guarded_protocol(base: type[asyncio.Protocol], *, header_timeout: float, max_connections: int,
                     max_header_bytes: int = 64 * 1024) -> type[asyncio.Protocol]:
    """A subclass of uvicorn's `base` protocol (h11 or httptools: both keep the request in `self.cycle`)."""
    silent: dict[Any, None] = {}
    """Connections waiting for a request that has not sent a byte of it yet, oldest first."""
    partial: dict[Any, None] = {}
    """Connections that sent part of a request's headers and not the rest, oldest first: closed first."""
    idle: dict[Any, None] = {}
    """Kept-alive connections whose last response is complete and that sent nothing since, idle longest first."""
    receiving: dict[Any, None] = {}
    """Connections whose request's headers are in and whose body is not complete yet."""
    closing: set[Any] = set()
    """Connections this guard closed whose end uvicorn has not seen yet: they no longer count."""
    refused = [0, 0.0]
    """Newcomers refused since the last warning, and when that warning was logged (one a minute at most)."""
    parsed = hasattr(base, "on_headers_complete")
    """httptools: the parser calls the protocol back at each part of a message (h11 hands over whole events)."""

    class Guarded(base):  # type: ignore[misc,valid-type]
        _lt_timer: asyncio.TimerHandle | None = None
        _lt_cycle: Any = None
        _lt_began: float | None = None
        """When the current request's first byte arrived (None between requests)."""
        _lt_bytes = 0
        """Bytes of the current request received so far."""
        _lt_dropping = False
        """Answered 431: what the client still sends is read and dropped until the connection closes."""
        _lt_dropped = 0
        _lt_head = 0
        """Bytes of the request being read that are not its body (request line, headers, chunk framing, trailers),
        from its first byte on, whether or not the request before it is answered yet. h11: what it holds of the
        next request while the one before it is being served."""
        _lt_fed_body = 0
        """httptools: body bytes (and their chunk framing) in the data being fed to the parser."""
        _lt_chunk = 0
        _lt_begun_here = False
        """httptools: a message began in the data being fed, so its bytes so far are counted by the callbacks."""
        _lt_in_head = False
        """httptools: the message being parsed has not finished its headers."""
        _lt_refuse_later = False
        """Over the cap while an earlier response is still being written: the 431 follows that response."""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            if len(self.connections) - len(closing) > max_connections:
                oldest = (next(iter(partial), None) or next(iter(idle), None) or _slowest_body(self.loop.time())
                          or next(iter(silent), None))
                if oldest is None:
                    refused[0] += 1
                    if self.loop.time() - refused[1] >= 60:
                        logger.warning("%d HTTP connections open, all serving requests (LAZYTOOLS_MAX_CONNECTIONS): "
                                       "refused %d new one(s)", len(self.connections) - 1, refused[0])
                        refused[0], refused[1] = 0, self.loop.time()
                    transport.write(_BUSY)  # type: ignore[attr-defined]
                    closing.add(self)
                    transport.close()
                    return
                oldest._lt_expire("LAZYTOOLS_MAX_CONNECTIONS reached")
            self._lt_arm()

        def data_received(self, data: bytes) -> None:
            if self._lt_dropping:
                self._lt_dropped += len(data)
                if self._lt_dropped > _LINGER_BYTES:
                    self.transport.close()
                return
            idle.pop(self, None)
            if self._lt_began is None:
                self._lt_began, self._lt_bytes = self.loop.time(), 0
            self._lt_bytes += len(data)
            self._lt_fed_body, self._lt_begun_here = 0, False
            try:
                self._lt_received(data)
                if parsed and not self._lt_begun_here:
                    self._lt_head += len(data) - self._lt_fed_body
                elif not parsed:
                    # h11 holds what follows a request whose body is in until that request is answered: that is
                    # the next request, read while the one before it is being served.
                    self._lt_head = len(self.conn.trailing_data[0]) if self.conn.their_state is h11.DONE else 0
                if (self._lt_timer is not None and self._lt_bytes > max_header_bytes
                        or self._lt_head > max_header_bytes) and not self.transport.is_closing():
                    self._lt_refuse_headers()
            finally:
                cycle = self.cycle
                if cycle is not None and cycle.more_body and not cycle.response_complete \
                        and not self.transport.is_closing():
                    receiving[self] = None
                else:
                    receiving.pop(self, None)

        def _lt_received(self, data: bytes) -> None:
            cycle = self.cycle
            if self._lt_timer is None and (cycle is None or cycle.response_complete):
                # The first bytes of the next request on a kept-alive connection: a deadline for its headers,
                # unless these bytes already hold them all (the usual case: then no timer is made at all).
                super().data_received(data)
                if self.cycle is cycle and not self.transport.is_closing():
                    self._lt_arm()
                    self._lt_cycle = cycle
                    del silent[self]
                    partial[self] = None
                return
            super().data_received(data)
            if self._lt_timer is not None:
                if self.cycle is not self._lt_cycle:
                    self._lt_disarm()  # its headers are in: the request is being served
                elif self in silent:
                    del silent[self]
                    partial[self] = None

        # httptools' parser callbacks: they count what the raw byte count above cannot see, the headers of a
        # request that arrive while the one before it is being served (pipelined, or sent right behind a POST's
        # body) and the trailers of a chunked body. The timer's count starts again only once the request before is
        # answered, and stops at its headers' end. (h11 bounds trailers itself: h11_max_incomplete_event_size.)
        def on_message_begin(self) -> None:
            self._lt_head, self._lt_begun_here, self._lt_in_head = 0, True, True
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._lt_in_head = False
            super().on_headers_complete()

        def on_url(self, url: bytes) -> None:
            if self._lt_begun_here:
                self._lt_head += len(url)
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            if self._lt_begun_here:
                self._lt_head += len(name) + len(value) + 4
            super().on_header(name, value)

        def on_body(self, body: bytes) -> None:
            self._lt_fed_body += len(body)
            self._lt_chunk += len(body)
            super().on_body(body)

        def on_chunk_header(self) -> None:
            self._lt_chunk = 0

        def on_chunk_complete(self) -> None:
            self._lt_fed_body += len(b"%x" % self._lt_chunk) + 4  # its size line and the CRLF after its data

        def on_response_complete(self) -> None:
            receiving.pop(self, None)
            self._lt_began = None
            if self._lt_refuse_later:
                self._lt_refuse_later = False
                self._lt_dropping = False
                self._lt_refuse_headers(now=True)
                return
            super().on_response_complete()
            waiting = self.timeout_keep_alive_task
            if waiting is not None and not waiting.cancelled() and not self.transport.is_closing():
                idle[self] = None  # kept alive for a next request (none was pipelined behind this one)

        def connection_lost(self, exc: Exception | None) -> None:
            idle.pop(self, None)
            receiving.pop(self, None)
            self._lt_disarm()
            closing.discard(self)
            super().connection_lost(exc)

        def _lt_refuse_headers(self, *, now: bool = False) -> None:
            """Its headers are still coming past `max_header_bytes`: a 431, and the connection ends."""
            self._lt_disarm()
            cycle = self.cycle
            queued = getattr(self, "pipeline", None)
            if queued and now:
                queued.clear()  # requests read behind the one just answered: none of them is served
            elif cycle is not None and not cycle.response_complete and (
                    cycle.response_started or queued or self._lt_in_head or not parsed and self._lt_head):
                # A response is on its way (or queued behind one that is): what the client sends is dropped, and
                # the 431 follows that response.
                self._lt_refuse_later = self._lt_dropping = True
                return
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True  # an app still running for this connection writes no more to it
                cycle.message_event.set()
            logger.debug("431 to %s: headers over %d bytes", "%s:%d" % self.client if self.client else "?",
                         max_header_bytes)
            self.transport.write(too_large(f"the request line and headers are over {max_header_bytes} bytes "
                                           "(LAZYTOOLS_MAX_HEADER_BYTES)"))
            closing.add(self)
            self._lt_dropping = True
            try:
                self.transport.write_eof()  # the 431 and a FIN; what the client still sends is read and dropped
            except (NotImplementedError, OSError, RuntimeError):
                self.transport.close()
                return
            self.loop.call_later(_LINGER_SECONDS, self.transport.close)

        def _lt_arm(self) -> None:
            self._lt_cycle = self.cycle
            silent[self] = None
            self._lt_timer = self.loop.call_later(header_timeout, self._lt_expire, "LAZYTOOLS_HEADER_TIMEOUT")

        def _lt_disarm(self) -> None:
            silent.pop(self, None)
            partial.pop(self, None)
            if self._lt_timer is not None:
                self._lt_timer.cancel()
                self._lt_timer = None

        def _lt_expire(self, why: str) -> None:
            was_idle = idle.pop(self, 0) is None
            was_receiving = receiving.pop(self, 0) is None
            self._lt_disarm()
            logger.debug("closing an HTTP connection from %s that %s (%s)", "%s:%d" % self.client if self.client else "?",
                         "was idle" if was_idle else "was slowest to send its body" if was_receiving
                         else "did not finish its headers", why)
            if not self.transport.is_closing():
                closing.add(self)
                self.transport.close()

    def _slowest_body(now: float) -> Any:
        """The connection receiving a body with the fewest bytes of its request per second, oldest first on a tie.

        The time counts as at least one second, so a request that has just begun is measured by its bytes so far
        rather than by a rate over a few microseconds (a client that wrote its headers and not yet its body)."""
        slowest, lowest = None, float("inf")
        for connection in receiving:
            began = connection._lt_began if connection._lt_began is not None else now
            rate = connection._lt_bytes / max(now - began, 1.0)
            if rate < lowest:
                slowest, lowest = connection, rate
        return slowest

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded


class GuardedServer(uvicorn.Server):
    """uvicorn's server with a deep listen queue and a short accept burst.

    asyncio uses one number for both: the kernel's listen queue and how many connections it accepts in one go. The
    burst must be short to fit the open-file limit (see `fd_bounded`), but a short queue overflows under a flood of
    connections, and a real client whose connection attempt is dropped waits a second for its retry. So after
    start-up each listening socket is told again to listen, with `LISTEN_QUEUE`: the burst stays as it was."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets)
        except SystemExit:
            # uvicorn logs why (address in use, no such address) and exits; ours is one line and the usual status 2.
            raise ConfigError(f"cannot listen on {self.config.host}:{self.config.port} (the error above; --host, "
                              "--port)") from None
        for server in self.servers:
            for listening in server.sockets:
                with socket.socket(fileno=listening.fileno()) as raw:
                    try:
                        raw.listen(LISTEN_QUEUE)
                    finally:
                        raw.detach()  # the socket stays asyncio's: only the queue length changed
