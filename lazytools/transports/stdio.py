"""stdio transport: the server over this process's stdin/stdout (stdout carries protocol messages only)."""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:  # the SDK's stream protocol is not public in 2.3.0; only the type checker reads it
    from mcp.shared._stream_protocols import WriteStream

__all__ = ["DRAIN_TIMEOUT", "PipeLines", "Unanswered", "serve_stdio"]

logger = logging.getLogger(__name__)

_CHUNK = 65536
DRAIN_TIMEOUT = 60.0
"""How long the end of input waits for answers still owed (the default tool-call timeout)."""
_OPEN_ENDED = frozenset({"subscriptions/listen"})  # answered only when the client cancels


class Unanswered:
    """Requests read from the client and not yet answered.

    A client may write its requests and close stdin at once (`printf ... | lazytools`). The SDK stops the
    server at end of input and cancels what is still running, so the last answers would be lost; the reader
    holds end of input back until they are written (or DRAIN_TIMEOUT passes).
    """

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._changed = anyio.Event()

    def __len__(self) -> int:
        return len(self._ids)

    def read(self, line: str) -> None:
        try:  # the SDK's own parse: what it drops unanswered ("jsonrpc": "1.0", arrays) is not owed an answer
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            return
        if isinstance(message, types.JSONRPCRequest) and message.method not in _OPEN_ENDED:
            self._ids.add(_key(message.id))
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            self._done((message.params or {}).get("requestId"))  # a cancelled request gets no answer

    def wrote(self, message: SessionMessage) -> None:
        if isinstance(message.message, (types.JSONRPCResponse, types.JSONRPCError)):
            self._done(message.message.id)

    def _done(self, request_id: Any) -> None:
        self._ids.discard(_key(request_id))
        self._changed.set()
        self._changed = anyio.Event()

    async def drain(self, timeout: float = DRAIN_TIMEOUT) -> None:
        with anyio.move_on_after(timeout):
            while self._ids:
                await self._changed.wait()
        if self._ids:
            logger.warning("end of input: %d request(s) still unanswered after %g s", len(self._ids), timeout)


def _key(request_id: Any) -> str:
    return json.dumps(request_id)


class _WatchedWrites:
    """The server's write stream, telling `Unanswered` about every answer it sends."""

    def __init__(self, inner: WriteStream[SessionMessage], unanswered: Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    async def send(self, message: SessionMessage, /) -> None:
        await self._inner.send(message)
        self._unanswered.wrote(message)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedWrites:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc_val, exc_tb)


class _WatchedLines:
    """The client's lines, told to `Unanswered`; their end waits until what was asked is answered."""

    def __init__(self, lines: AsyncIterator[str], unanswered: Unanswered) -> None:
        self._lines = lines
        self._unanswered = unanswered

    def __aiter__(self) -> _WatchedLines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await anext(self._lines)
        except StopAsyncIteration:
            await self._unanswered.drain()
            raise
        self._unanswered.read(line)
        return line


class PipeLines:
    """Lines from a pipe, read without a worker thread.

    The SDK reads stdin in a thread, and a thread blocked in read() cannot be cancelled: on SIGTERM the process
    would wait for the client's next line. Waiting for readability on the event loop cancels at once.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._eof = False

    def __aiter__(self) -> AsyncIterator[str]:
        return self

    async def __anext__(self) -> str:
        searched = 0
        while (end := self._buffer.find(b"\n", searched)) < 0:
            if self._eof:
                if not self._buffer:
                    raise StopAsyncIteration
                end = len(self._buffer) - 1
                break
            searched = len(self._buffer)
            await anyio.wait_readable(self._fd)
            try:
                chunk = os.read(self._fd, _CHUNK)
            except BlockingIOError:
                continue
            self._eof = not chunk
            self._buffer += chunk
        line = bytes(self._buffer[: end + 1])
        del self._buffer[: end + 1]
        return line.decode("utf-8", errors="replace")


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def serve_stdio(server: Server) -> None:
    """Serve one client on stdin/stdout until stdin closes and what it asked is answered (or the caller cancels)."""
    if sys.stdin is None:  # no stdin at all (a detached process): the SDK's own streams, which end at once
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return
    stdin_fd = sys.stdin.fileno()
    unanswered = Unanswered()
    async with AsyncExitStack() as stack:
        if _is_pipe(stdin_fd):
            was_blocking = os.get_blocking(stdin_fd)
            os.set_blocking(stdin_fd, False)
            stack.callback(os.set_blocking, stdin_fd, was_blocking)
            lines: AsyncIterator[str] = PipeLines(stdin_fd)
        else:
            # A file or terminal: read in a worker thread as the SDK does (only a pipe can be waited on); UTF-8
            # whatever the locale, and the wrapper detached afterwards so sys.stdin stays open.
            text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
            stack.callback(text.detach)
            lines = aiter(anyio.wrap_file(text))
        watched = _WatchedLines(lines, unanswered)
        async with stdio_server(stdin=watched) as (read_stream, write_stream):  # type: ignore[arg-type]
            writes = _WatchedWrites(write_stream, unanswered)
            await server.run(read_stream, writes, server.create_initialization_options())
