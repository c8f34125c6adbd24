"""The stdio transport to an upstream server: the SDK's `stdio_client`, with a line reader that is linear and bounded.

The SDK's reader joins its buffer with each 64 KiB chunk and splits the whole again (`(buffer + chunk).split("\\n")`),
so one long line costs time quadratic in its length, and the event loop is busy all along (a result of tens of
megabytes reaches the call timeout). Here a byte buffer is searched only where new bytes arrived, and a line longer than
`max_line_bytes` is not kept at all: its bytes are skipped to the next newline, and if it was an answer, the request
it answers gets an error saying how large it was (found from the `"id"` at the start of the line).

Lines the SDK's strict JSON parser refuses but Python's accepts (lone surrogate escapes, `NaN`) are parsed by the
latter and handed on; lazytools' result boundary (server/results.py) makes them sendable.

Process start and stop are the SDK's own (spawn in a new session, close stdin, wait, kill the tree), reached through
`lazytools.sdk` (they are private in mcp 2.3.0).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ...jsonshape import containers
from ...safetext import clip
from ...sdk import (
    aclose_all,
    create_stdio_process,
    drain_stdout,
    executable_command,
    stop_stdio_process,
)

__all__ = ["MAX_CONTAINERS", "LineReader", "OversizedLine", "parse_line", "stdio_client"]

logger = logging.getLogger(__name__)

MAX_CONTAINERS = 100_000
"""Arrays and objects one message from an upstream may hold (`jsonshape`): parsing a line of millions (9 MiB of
nested arrays) held the event loop, every session's, for seven seconds. An answer past it fails its call at once;
100,000 rows of a table pass, more than any model reads."""

_FLUSH_TIMEOUT = 0.5
_ID_VALUE = rb'(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")'
_ID_AT_START = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID_VALUE)
# Most writers put the id first (`{"jsonrpc":"2.0","id":7,"result":...}`); some put it last (`{"result":...,
# "jsonrpc":"2.0","id":7}`). Only those two top-level places are trusted: an "id" inside the result is not one.
_ID_AT_END = re.compile(rb'"id"\s*:\s*' + _ID_VALUE + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')
_EDGE = 512


class OversizedLine:
    """A line longer than the limit: only its size, its start and its end were kept."""

    def __init__(self, size: int, head: bytes) -> None:
        self.size = size
        self.head = head
        self.tail = b""

    def skipped(self, data: bytes) -> None:
        self.size += len(data)
        self.tail = (self.tail + data[-_EDGE:])[-_EDGE:]

    def request_id(self) -> Any:
        found = _ID_AT_START.match(self.head) or _ID_AT_END.search(self.tail)
        return None if found is None else json.loads(found.group(1))


class LineReader:
    """Splits a byte stream into lines in linear time; lines over `max_line_bytes` come out as `OversizedLine`."""

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._searched = 0
        self._skipping: OversizedLine | None = None

    def feed(self, chunk: bytes) -> list[bytes | OversizedLine]:
        out: list[bytes | OversizedLine] = []
        if self._skipping is not None:
            end = chunk.find(b"\n")
            if end < 0:
                self._skipping.skipped(chunk)
                return out
            self._skipping.skipped(chunk[:end])
            out.append(self._skipping)
            self._skipping = None
            chunk = chunk[end + 1:]
        self._buffer += chunk
        while (end := self._buffer.find(b"\n", self._searched)) >= 0:
            if end > self.max_line_bytes:  # a long line that arrived whole in one chunk
                oversized = OversizedLine(0, bytes(self._buffer[:_EDGE]))
                oversized.skipped(bytes(self._buffer[max(end - _EDGE, 0):end]))
                oversized.size = end
                out.append(oversized)
            else:
                out.append(bytes(self._buffer[:end]))
            del self._buffer[: end + 1]
            self._searched = 0
        self._searched = len(self._buffer)
        if len(self._buffer) > self.max_line_bytes:
            self._skipping = OversizedLine(0, bytes(self._buffer[:_EDGE]))
            self._skipping.skipped(bytes(self._buffer[-_EDGE:]))
            self._skipping.size = len(self._buffer)
            self._buffer.clear()
            self._searched = 0
        return out

    def end(self) -> list[bytes | OversizedLine]:
        rest: list[bytes | OversizedLine] = [self._skipping] if self._skipping is not None else []
        if self._buffer:
            rest.append(bytes(self._buffer))
        self._buffer.clear()
        self._skipping = None
        return rest


def parse_line(line: bytes | OversizedLine, max_line_bytes: int) -> SessionMessage | Exception | None:
    """One line as the session wants it: a message, an exception to surface, or None for a blank line."""
    if isinstance(line, OversizedLine):
        return _oversized(line, max_line_bytes)
    if not line.strip():
        return None
    held = containers(line, MAX_CONTAINERS)
    if held > MAX_CONTAINERS:
        what = f"holds {held:,} arrays and objects, more than lazytools reads ({MAX_CONTAINERS:,}); it was not read"
        return _unreadable_answer(line, what) or ValueError(f"a message that {what} was dropped")
    text = line.decode("utf-8", errors="replace")
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValidationError as strict_error:
        try:
            # Python's parser takes what the strict one refuses: lone surrogate escapes, NaN, Infinity.
            return SessionMessage(types.jsonrpc_message_adapter.validate_python(json.loads(text), by_name=False))
        except (ValueError, RecursionError, ValidationError):
            unreadable = _unreadable_answer(line, "could not be parsed (nested too deep, or not JSON)")
            if unreadable is not None:  # an answer too deep (or too odd) to parse: its caller hears so now
                return unreadable
            logger.debug("upstream wrote a line that is not JSON-RPC (%s)", clip(text, 120))
            return strict_error


def _unreadable_answer(line: bytes, what: str) -> SessionMessage | None:
    """An error for the request an answer that is not read names at its start or end (nested 100,000 deep, say),
    saying `what` of it, so the call fails at once instead of at its timeout; None when the line names no request."""
    edges = OversizedLine(len(line), line[:_EDGE])
    edges.skipped(line[-_EDGE:])
    try:
        request_id = edges.request_id()
    except ValueError:
        return None
    head = line[:_EDGE]
    answer = b'"method"' not in head and (b'"result"' in head or b'"error"' in head)  # not a request of its own
    if not isinstance(request_id, (int, str)) or not answer:
        return None
    logger.warning("upstream answered request %s with a message lazytools does not read (%d bytes): it %s",
                   clip(str(request_id), 40), len(line), what)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
        code=types.INTERNAL_ERROR, message=f"the upstream's answer ({len(line):,} bytes) {what}")))


def _oversized(line: OversizedLine, max_line_bytes: int) -> SessionMessage | Exception:
    request_id = line.request_id()
    found = request_id is not None
    logger.warning("upstream wrote a message of %d bytes, more than the %d it may (2 x LAZYTOOLS_MAX_RESULT_BYTES "
                   "+ 1 MiB); %s", line.size, max_line_bytes,
                   "its request gets an error" if found else "dropped (no request id at its start)")
    if not found:
        return ValueError(f"a message of {line.size} bytes was dropped")
    error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
        code=types.INTERNAL_ERROR,
        message=f"the result was {line.size:,} bytes, more than lazytools reads ({max_line_bytes:,}; "
                "set by LAZYTOOLS_MAX_RESULT_BYTES); it was not read"))
    return SessionMessage(error)


@asynccontextmanager
async def stdio_client(server: StdioServerParameters, *, max_line_bytes: int,
                       errlog: TextIO = sys.stderr) -> AsyncGenerator[Any, None]:
    """Spawn `server` and yield (read stream, write stream), as the SDK's `stdio_client` does."""
    command = await executable_command(server.command)
    process = await create_stdio_process(
        command=command, args=server.args, env=get_default_environment() | (server.env or {}), errlog=errlog,
        cwd=server.cwd)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        lines = LineReader(max_line_bytes)
        try:
            async with read_writer:
                try:
                    ended = False
                    while not ended:
                        try:
                            pending = lines.feed(await process.stdout.receive())
                        except anyio.EndOfStream:
                            pending, ended = lines.end(), True
                        for line in pending:
                            item = parse_line(line, max_line_bytes)
                            if item is None:
                                continue
                            try:
                                await read_writer.send(item)
                            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                return
                finally:
                    await drain_stdout(process)
        except anyio.ClosedResourceError:
            pass
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                logger.exception("reading an upstream's stdout failed mid-session")

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode(server.encoding, server.encoding_error_handler))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(_FLUSH_TIMEOUT):
            await writer_done.wait()
        await stop_stdio_process(process)
        await aclose_all(read_stream, write_stream, read_writer, write_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
