"""Bounds on what an HTTP upstream's answers make lazytools read, as `stdio.py`'s line reader keeps for a pipe.

The SDK's HTTP client reads a JSON answer whole (`response.aread()`), however large, and parses it on the event
loop; an SSE event is bounded (1 MiB by default) but parsed however many arrays it holds. A hostile or broken
upstream could so hold gigabytes, or every session's event loop for seconds. Here each answer's stream is wrapped
as it arrives (an httpx response hook, so the client keeps its proxies and settings), before the SDK reads it:

- a JSON answer is read up to `max_bytes`, and one that is longer, holds more arrays and objects than
  `MAX_CONTAINERS` (`jsonshape`) or came compressed (lazytools asks for none) is replaced by a JSON-RPC error for
  the request it answers, which the call then reports;
- an SSE stream is passed on event by event (line ends made `\\n`), and an event past either bound is replaced by
  such an error event for the request the stream answers, or, on a stream that answers no one request (the GET
  stream, where the legacy SSE transport sends every answer), for the request the event's own id names, read from
  the start and end of its data (only those are kept of an event being skipped); any other is dropped (with a
  warning);
- any other body (an error page) is cut at `max_bytes`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx2

from ...jsonshape import containers, top_level
from ...safetext import clip
from .stdio import MAX_CONTAINERS, OversizedLine

__all__ = ["bounded"]

logger = logging.getLogger(__name__)

_HEAD = 65_536  # bytes kept of the start of an event past the bounds: where its id is read (`top_level`)
_TAIL = 512  # and of its end, where some writers put it
_DATA = re.compile(rb"^data: ?", re.MULTILINE)


def bounded(client: httpx2.AsyncClient, max_bytes: int) -> httpx2.AsyncClient:
    """`client`, asking for uncompressed answers and reading each within the bounds above. The SSE answer of a
    request lazytools cancels (`notifications/cancelled`: its call timed out, or its client gave up) is closed:
    the SDK kept reading it, and an upstream that never ended such answers held a connection for each until the
    pool's 100 were taken and every later call to it failed."""
    client.headers["Accept-Encoding"] = "identity"
    answering: dict[str, _Events] = {}  # the open SSE answers, by their request's id (as JSON: 1 is not "1")

    async def sent(request: httpx2.Request) -> None:
        message = _message(request)
        params = message.get("params") if message.get("method") == "notifications/cancelled" else None
        if isinstance(params, dict) and "requestId" in params:
            stream = answering.pop(json.dumps(params["requestId"]), None)
            if stream is not None:
                stream.stop()

    async def bound(response: httpx2.Response) -> None:
        # Told apart as the SDK tells them (its test is a prefix of the raw header: `application/json-rpc`, and two
        # headers joined as "application/json, text/html", are JSON to it).
        kind = response.headers.get("content-type", "").lower()
        encoded = response.headers.get("content-encoding", "identity").strip().lower() not in ("", "identity")
        request_id = _request_id(response.request)
        if kind.startswith("application/json") or encoded:
            # Compressed, whatever its type, it is refused unread: a megabyte of gzip is a gigabyte of text.
            response.stream = _JsonAnswer(response.stream, request_id, max_bytes,
                                          encoding=response.headers.get("content-encoding") if encoded else None)
            for name in ("content-encoding", "content-length", "content-type"):
                response.headers.pop(name, None)
            response.headers["content-type"] = "application/json"
        elif kind.startswith("text/event-stream"):
            key = json.dumps(request_id)
            events = _Events(response.stream, request_id, max_bytes,
                             ended=lambda: answering.pop(key, None) if answering.get(key) is events else None)
            if request_id is not None:
                answering[key] = events
            response.stream = events
        else:
            response.stream = _Cut(response.stream, max_bytes)

    client.event_hooks["request"] = [*client.event_hooks.get("request", []), sent]
    client.event_hooks["response"] = [*client.event_hooks.get("response", []), bound]
    return client


def _message(request: httpx2.Request) -> dict[str, Any]:
    """The JSON-RPC message a POST carried (lazytools' own), else {}."""
    if request.method != "POST":
        return {}
    try:
        message = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return {}
    return message if isinstance(message, dict) else {}


def _request_id(request: httpx2.Request) -> Any:
    """The id of the JSON-RPC request a POST carried, else None."""
    return _message(request).get("id")


def _error(request_id: Any, why: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
        "code": -32603, "message": f"the upstream's answer {why}; it was not read"}}).encode()


def _too_many(body: bytes) -> str | None:
    held = containers(body, MAX_CONTAINERS)
    return f"holds {held:,} arrays and objects, more than lazytools reads ({MAX_CONTAINERS:,})" \
        if held > MAX_CONTAINERS else None


class _JsonAnswer(httpx2.AsyncByteStream):
    """A JSON answer read whole within `max_bytes`, or the error that replaces it."""

    def __init__(self, inner: Any, request_id: Any, max_bytes: int, *, encoding: str | None) -> None:
        self._inner, self._id, self._most, self._encoding = inner, request_id, max_bytes, encoding

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks: list[bytes] = []
        size = 0
        why = f"came compressed ({clip(self._encoding, 40)}), which lazytools does not ask for" \
            if self._encoding else None
        if why is None:
            async for chunk in self._inner:
                size += len(chunk)
                if size > self._most:
                    why = f"is more than {self._most:,} bytes, more than lazytools reads (set by " \
                          "LAZYTOOLS_MAX_RESULT_BYTES)"
                    break
                chunks.append(chunk)
        body = b"".join(chunks)
        why = why or _too_many(body)
        if why is None:
            yield body
            return
        logger.warning("an HTTP upstream's answer to request %s %s; its caller gets an error",
                       clip(str(self._id), 40), why)
        yield _error(self._id, why) if self._id is not None else b""

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Events(httpx2.AsyncByteStream):
    """An SSE stream passed on one whole event at a time; an event past the bounds replaced or dropped."""

    def __init__(self, inner: Any, request_id: Any, max_bytes: int, *, ended: Callable[[], Any] | None = None
                 ) -> None:
        self._inner, self._id, self._most, self._ended = inner, request_id, max_bytes, ended
        self._reading: anyio.CancelScope | None = None
        self._stopped = False
        self._buffer = bytearray()
        self._skipped = 0  # bytes of an event past the bound, dropped as they came; 0 when none is being skipped
        self._edges = (b"", b"")  # the start and end of the event being skipped
        self._searched = 0  # how far the buffer holds no blank line

    def stop(self) -> None:
        """End the stream where it is: its request was cancelled (the SDK would read it for as long as it lasts)."""
        self._stopped = True
        if self._reading is not None:
            self._reading.cancel()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self._parts():
                yield part
        finally:
            if self._ended is not None:
                self._ended()

    async def _chunks(self) -> AsyncIterator[bytes]:
        """The inner stream's chunks until it ends or `stop` is called. Each read is in a cancel scope of its own,
        left before the chunk is handed on (a scope must not stay open across a generator's yield)."""
        chunks = self._inner.__aiter__()
        while not self._stopped:
            with anyio.CancelScope() as self._reading:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    return
            self._reading = None
            if self._stopped:
                return
            yield chunk

    async def _parts(self) -> AsyncIterator[bytes]:
        held_cr = b""  # a CR at a chunk's end may be half of a CRLF
        async for chunk in self._chunks():
            chunk = held_cr + chunk
            held_cr, chunk = (b"\r", chunk[:-1]) if chunk.endswith(b"\r") else (b"", chunk)
            for event in self._events(chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")):
                yield event
        if self._stopped:
            return
        for event in self._events(b"\n" if held_cr else b""):
            yield event
        if self._buffer and not self._skipped:  # the stream ended inside an event: passed on as it is
            yield bytes(self._buffer)

    def _events(self, data: bytes) -> list[bytes]:
        """The whole events `data` completes (line ends already `\n`), each passed on or replaced."""
        out: list[bytes] = []
        self._buffer += data
        # Searched only where new bytes arrived (less one: a blank line may straddle two chunks), else an event
        # that trickles in costs time quadratic in its length.
        while (end := self._buffer.find(b"\n\n", self._searched)) >= 0:
            event = bytes(self._buffer[:end + 2])
            del self._buffer[:end + 2]
            self._searched = 0
            if self._skipped or len(event) > self._most:
                head, tail = self._edges if self._skipped else (event[:_HEAD], b"")
                out.append(self._refused(f"is an event of {self._skipped + len(event):,} bytes or more, more than "
                                         f"lazytools reads ({self._most:,})", head, (tail + event)[-_TAIL:]))
                self._skipped, self._edges = 0, (b"", b"")
            else:
                why = _too_many(event)
                out.append(event if why is None else self._refused(why, event[:_HEAD], event[-_TAIL:]))
        if len(self._buffer) > self._most:  # an event too long to hold: dropped up to its end
            head = self._edges[0] if self._skipped else bytes(self._buffer[:_HEAD])
            self._edges = (head, (self._edges[1] + bytes(self._buffer[-_TAIL - 1:-1]))[-_TAIL:])
            self._skipped += len(self._buffer) - 1
            del self._buffer[:-1]  # its last byte may be the first of the blank line that ends it
        self._searched = max(len(self._buffer) - 1, 0)
        return [event for event in out if event]

    def _refused(self, why: str, head: bytes, tail: bytes) -> bytes:
        """The error event that replaces an event past the bounds (`head` and `tail`: its first and last bytes),
        for the request the stream answers or else the one the event answers, or b"" (dropped)."""
        request_id = self._id if self._id is not None else _answered(head, tail)
        if request_id is None:
            logger.warning("an HTTP upstream's stream sent a message that %s; dropped", why)
            return b""
        logger.warning("an HTTP upstream's answer to request %s %s; its caller gets an error",
                       clip(str(request_id), 40), why)
        return b"event: message\ndata: " + _error(request_id, why) + b"\n\n"

    async def aclose(self) -> None:
        await self._inner.aclose()


def _answered(head: bytes, tail: bytes) -> str | int | None:
    """The id of the request an SSE event answers, from the first and last bytes of the event (its `data:` lines'
    prefixes taken out, the fields after them left off), or None: no id at the data's top level within its first
    64 KiB nor at its end, or not an answer (a request or notification of the upstream's own, or no `result` or
    `error` in its start)."""
    start = _DATA.search(head)
    if start is None:
        return None
    data = _DATA.sub(b"", head[start.start():])
    # The data ends at the event's last data line: a later field (`id: 3`) or blank line is not part of it.
    last = tail.rstrip(b"\n").split(b"\n")
    while len(last) > 1 and not _DATA.match(last[-1]):
        last.pop()
    end = _DATA.sub(b"", last[-1])
    # `head` is the whole event only if it holds its blank line; a start is read as one (else its members would be
    # read as a whole object, and be none), and its end is not the data's.
    whole = head.endswith(b"\n\n")
    members = top_level(data, most=max(min(_HEAD, len(data) - (0 if whole else 1)), 0))
    try:
        found = members["id"] if members is not None and "id" in members else _id_at_end(end)
    except ValueError:
        return None
    prefix = data[:_TAIL]
    answer = b'"method"' not in prefix and (b'"result"' in prefix or b'"error"' in prefix)
    return found if answer and isinstance(found, (int, str)) and not isinstance(found, bool) else None


def _id_at_end(data_end: bytes) -> Any:
    """The id written as the last member of a message ending in `data_end`, read as a stdio line's end is."""
    edges = OversizedLine(0, b"")
    edges.skipped(data_end)
    return edges.request_id()


class _Cut(httpx2.AsyncByteStream):
    """Any other body, cut at `max_bytes`."""

    def __init__(self, inner: Any, max_bytes: int) -> None:
        self._inner, self._most = inner, max_bytes

    async def __aiter__(self) -> AsyncIterator[bytes]:
        left = self._most
        async for chunk in self._inner:
            yield chunk[:left]
            left -= len(chunk)
            if left <= 0:
                return

    async def aclose(self) -> None:
        await self._inner.aclose()
