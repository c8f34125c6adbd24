"""stdio transport: the server over this process's stdin/stdout (stdout carries protocol messages only)."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["PipeLines", "serve_stdio"]

_CHUNK = 65536


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
    """Serve one client on stdin/stdout until stdin closes (or the caller cancels)."""
    stdin_fd = sys.stdin.fileno() if sys.stdin is not None else -1
    if stdin_fd >= 0 and _is_pipe(stdin_fd):
        was_blocking = os.get_blocking(stdin_fd)
        os.set_blocking(stdin_fd, False)
        try:
            async with stdio_server(stdin=PipeLines(stdin_fd)) as (read_stream, write_stream):  # type: ignore[arg-type]
                await server.run(read_stream, write_stream, server.create_initialization_options())
        finally:
            os.set_blocking(stdin_fd, was_blocking)
        return
    # A file or terminal on stdin: the SDK's threaded reader (end of input ends the session anyway).
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
