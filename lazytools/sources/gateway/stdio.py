"""The stdio transport to an upstream server: the SDK's `stdio_client`, with a line reader that is linear and bounded.

The SDK's reader joins its buffer with each 64 KiB chunk and splits the whole again (`(buffer + chunk).split("\\n")`),
so one long line costs time quadratic in its length, and the event loop is busy all along (a result of tens of
megabytes reaches the call timeout). Here a byte buffer is searched only where new bytes arrived, and a line longer than
`max_line_bytes` is not kept at all: its bytes are skipped to the next newline, and if it was an answer, the request
it answers gets an error saying how large it was (found from the `"id"` at the start of the line).

An answer that is not read (too many arrays and objects, or not parseable) names its request at its start or end,
where writers put the id; when it names none there, the one `"id"` key anywhere in it whose value is the id of a
request still in flight (`InFlight`) does, so that its call fails at once instead of at its timeout.

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

__all__ = ["MAX_CONTAINERS", "InFlight", "LineReader", "OversizedLine", "parse_line", "stdio_client"]

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
_LONGEST_ID = 200  # bytes of an id as JSON that `InFlight` keeps (lazytools' own are numbers)
_SPACE = 16  # spaces an id key found in flight may hold around its colon


class _Named:
    """Which of the ids in flight the `"id"` keys of one line name, read piece by piece (a line being skipped is
    never held whole): a regex search for any of them, then, once one is found, for any other. Linear in the bytes,
    whatever the line repeats; two found means the line's request cannot be told."""

    def __init__(self, in_flight: InFlight) -> None:
        self._in_flight = in_flight
        self._keys = list(in_flight.keys())
        self._pattern = _id_keys(self._keys) if self._keys else None
        self._overlap = b""  # the last bytes read: a key split between two pieces is found across them
        self._reach = 3 * _SPACE + 8 + max((len(key) for key in self._keys), default=0)
        self.found: bytes | None = None

    def read(self, data: bytes | bytearray, end: int) -> None:
        """Read `data[:end]`, the next bytes of the line."""
        if self._pattern is None or end <= 0:
            return
        if self._overlap:
            self._search(self._overlap + bytes(data[:min(end, self._reach)]), 0, None)
        if self._pattern is not None:
            self._search(data, 0, end)
        self._overlap = bytes(data[max(end - self._reach, 0):end])

    def _search(self, data: bytes | bytearray, start: int, end: int | None) -> None:
        assert self._pattern is not None
        match = self._pattern.search(data, start, len(data) if end is None else end)
        if match is None:
            return
        if self.found is None:
            self.found = match.group(1)
            others = [key for key in self._keys if key != self.found]
            self._pattern = _id_keys(others) if others else None
            if self._pattern is not None:
                self._search(data, match.end(), end)
        else:
            self.found, self._pattern = None, None  # two requests named: neither is told

    def request_id(self) -> str | int | None:
        """The one id found, if its request is still in flight."""
        return None if self.found is None else self._in_flight.get(self.found)


class OversizedLine:
    """A line longer than the limit: only its size, its start and its end were kept (and which ids in flight it
    names, when told them)."""

    def __init__(self, size: int, head: bytes, in_flight: InFlight | None = None) -> None:
        self.size = size
        self.head = head
        self.tail = b""
        self.named = _Named(in_flight) if in_flight else None

    def skipped(self, data: bytes | bytearray, end: int | None = None) -> None:
        """`data[:end]` (all of it by default), the next bytes of the line, passed over."""
        end = len(data) if end is None else end
        self.size += end
        if self.named is not None:
            self.named.read(data, end)
        self.tail = (self.tail + bytes(data[max(end - _EDGE, 0):end]))[-_EDGE:]

    def request_id(self) -> Any:
        found = _ID_AT_START.match(self.head) or _ID_AT_END.search(self.tail)
        return None if found is None else json.loads(found.group(1))


class InFlight:
    """The ids of the requests written to an upstream and not yet answered or cancelled: as many as are outstanding
    (at most `most`, the oldest forgotten past that, for an upstream that answers none and is never cancelled)."""

    def __init__(self, most: int = 1_000) -> None:
        self._most = most
        self._ids: dict[bytes, str | int] = {}  # by the id as JSON (1 is not "1"), oldest first

    def __len__(self) -> int:
        return len(self._ids)

    def keys(self) -> list[bytes]:
        return list(self._ids)

    def get(self, key: bytes) -> str | int | None:
        return self._ids.get(key)

    def sent(self, message: Any) -> None:
        """Note a message written to the upstream: a request is in flight, a cancelled one no longer."""
        if isinstance(message, types.JSONRPCRequest) and len(key := _as_json(message.id)) <= _LONGEST_ID:
            self._ids[key] = message.id
            if len(self._ids) > self._most:
                del self._ids[next(iter(self._ids))]
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            params = message.params if isinstance(message.params, dict) else {}
            if isinstance(params.get("requestId"), (int, str)):
                self._ids.pop(_as_json(params["requestId"]), None)

    def answered(self, item: Any) -> None:
        """Note what was read from the upstream: an answer (or the error that replaced it) ends its request."""
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) and message.id is not None:
            self._ids.pop(_as_json(message.id), None)

    def named_in(self, line: bytes) -> str | int | None:
        """The one id in flight that an `"id"` key anywhere in `line` has as its value, else None (none, or two:
        which one the line answers cannot be told)."""
        if not self._ids:
            return None
        named = _Named(self)
        named.read(line, len(line))
        return named.request_id()


def _as_json(request_id: str | int) -> bytes:
    return json.dumps(request_id, ensure_ascii=False).encode()


def _id_keys(keys: list[bytes]) -> re.Pattern[bytes]:
    """A member `"id": V` for V one of `keys` (ids as JSON), followed by the end of its value (so 7 is not 70).
    Its spaces are bounded, so that a key split between two pieces of a line is found within `_Named._reach`."""
    space = rb"\s{0,%d}" % _SPACE
    return re.compile(rb'"id"' + space + b":" + space + b"(" + _alternatives(keys) + b")(?=" + space + rb"[,}])")


def _alternatives(keys: list[bytes]) -> bytes:
    """`keys` as one regex alternation factored by their common prefixes (a trie): `re` tries an alternation's
    branches one by one, so 1,000 ids in flight tried at each of a million `"id":` keys cost 4 s unfactored and
    0.09 s factored, where a position costs the length of a key."""
    trie: dict[int | None, Any] = {}
    for key in keys:
        node = trie
        for byte in key:
            node = node.setdefault(byte, {})
        node[None] = {}

    def pattern(node: dict[int | None, Any]) -> bytes:
        branches = [re.escape(bytes([byte])) + pattern(child) for byte, child in node.items() if byte is not None]
        branches += [b""] if None in node else []
        return branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"

    return pattern(trie)


class LineReader:
    """Splits a byte stream into lines in linear time; lines over `max_line_bytes` come out as `OversizedLine`
    (told the ids `in_flight`, to find which request one answers)."""

    def __init__(self, max_line_bytes: int, in_flight: InFlight | None = None) -> None:
        self.max_line_bytes = max_line_bytes
        self._in_flight = in_flight
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
            self._skipping.skipped(chunk, end)
            out.append(self._skipping)
            self._skipping = None
            chunk = chunk[end + 1:]
        self._buffer += chunk
        while (end := self._buffer.find(b"\n", self._searched)) >= 0:
            if end > self.max_line_bytes:  # a long line that arrived whole in one chunk
                oversized = OversizedLine(0, bytes(self._buffer[:_EDGE]), self._in_flight)
                oversized.skipped(self._buffer, end)
                out.append(oversized)
            else:
                out.append(bytes(self._buffer[:end]))
            del self._buffer[: end + 1]
            self._searched = 0
        self._searched = len(self._buffer)
        if len(self._buffer) > self.max_line_bytes:
            self._skipping = OversizedLine(0, bytes(self._buffer[:_EDGE]), self._in_flight)
            self._skipping.skipped(self._buffer)
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


def parse_line(line: bytes | OversizedLine, max_line_bytes: int, in_flight: InFlight | None = None
               ) -> SessionMessage | Exception | None:
    """One line as the session wants it: a message, an exception to surface, or None for a blank line. An answer
    that is not read and names no request at its edges is told by the ids `in_flight` (`InFlight.named_in`)."""
    if isinstance(line, OversizedLine):
        return _oversized(line, max_line_bytes)
    if not line.strip():
        return None
    held = containers(line, MAX_CONTAINERS)
    if held > MAX_CONTAINERS:
        what = f"holds {held:,} arrays and objects, more than lazytools reads ({MAX_CONTAINERS:,}); it was not read"
        return _unreadable_answer(line, what, in_flight) or ValueError(f"a message that {what} was dropped")
    text = line.decode("utf-8", errors="replace")
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValidationError as strict_error:
        try:
            # Python's parser takes what the strict one refuses: lone surrogate escapes, NaN, Infinity.
            return SessionMessage(types.jsonrpc_message_adapter.validate_python(json.loads(text), by_name=False))
        except (ValueError, RecursionError, ValidationError):
            unreadable = _unreadable_answer(line, "could not be parsed (nested too deep, or not JSON)", in_flight)
            if unreadable is not None:  # an answer too deep (or too odd) to parse: its caller hears so now
                return unreadable
            logger.debug("upstream wrote a line that is not JSON-RPC (%s)", clip(text, 120))
            return strict_error


def _unreadable_answer(line: bytes, what: str, in_flight: InFlight | None = None) -> SessionMessage | None:
    """An error for the request an answer that is not read names at its start or end (nested 100,000 deep, say),
    or else anywhere as the one id of `in_flight` it holds, saying `what` of it, so the call fails at once instead
    of at its timeout; None when the line names no request."""
    edges = OversizedLine(len(line), line[:_EDGE])
    edges.skipped(line[-_EDGE:])
    try:
        request_id = edges.request_id()
    except ValueError:
        request_id = None
    head = line[:_EDGE]
    if request_id is None and in_flight is not None:
        # Neither first nor last (`{"result": ..., "id": 7, "more": ...}`): an id only our own requests have.
        request_id = in_flight.named_in(line)
    answer = b'"method"' not in head and (b'"result"' in line or b'"error"' in line)  # not a request of its own
    if not isinstance(request_id, (int, str)) or not answer:
        return None
    logger.warning("upstream answered request %s with a message lazytools does not read (%d bytes): it %s",
                   clip(str(request_id), 40), len(line), what)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
        code=types.INTERNAL_ERROR, message=f"the upstream's answer ({len(line):,} bytes) {what}")))


def _oversized(line: OversizedLine, max_line_bytes: int) -> SessionMessage | Exception:
    request_id = line.request_id()
    if request_id is None and line.named is not None and b'"method"' not in line.head and (
            b'"result"' in line.head or b'"error"' in line.head):  # an answer naming its request in its middle
        request_id = line.named.request_id()
    found = request_id is not None
    logger.warning("upstream wrote a message of %d bytes, more than the %d it may (2 x LAZYTOOLS_MAX_RESULT_BYTES "
                   "+ 1 MiB); %s", line.size, max_line_bytes,
                   "its request gets an error" if found else "dropped (no request id in it)")
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
    in_flight = InFlight()  # what an answer that is not read, naming no id at its edges, may be answering

    async def stdout_reader() -> None:
        assert process.stdout is not None
        lines = LineReader(max_line_bytes, in_flight)
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
                            item = parse_line(line, max_line_bytes, in_flight)
                            if item is None:
                                continue
                            in_flight.answered(item)
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
                    in_flight.sent(message.message)  # before it is written: its answer may come at once
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
