"""stdio transport: the server over this process's stdin/stdout (stdout carries protocol messages only)."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ..jsonshape import containers
from ..settings import Settings
from ..streams import WatchedReadStream
from .message_bounds import (
    DEPTH_REFUSAL,
    MAX_JSON_DEPTH,
    crowded_refusal,
    echoable,
    json_size,
    refusal,
    request_id,
    top_level,
)

if TYPE_CHECKING:  # the SDK's stream protocol is not public in 2.3.0 (see lazytools/sdk.py)
    from ..sdk import WriteStream

__all__ = ["DRAIN_TIMEOUT", "FINISH_TIMEOUT", "PipeLines", "PipeWriter", "ScreenedLines", "Unanswered", "serve_stdio"]

logger = logging.getLogger(__name__)

_CHUNK = 65536
DRAIN_TIMEOUT = 60.0
"""How long the end of input waits for answers still owed (the default tool-call timeout)."""
_OPEN_ENDED = frozenset({"subscriptions/listen"})  # answered only when the client cancels


class Unanswered:
    """Requests the client sent and the server has not answered yet.

    A client may write its requests and close stdin at once (`printf ... | lazytools`). The SDK stops the
    server at end of input and cancels what is still running, so the last answers would be lost; the read
    stream holds end of input back until they are written (or DRAIN_TIMEOUT passes).
    """

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._changed = anyio.Event()

    def __len__(self) -> int:
        return len(self._ids)

    def received(self, item: SessionMessage | Exception) -> SessionMessage | Exception:
        """Count a message as the SDK parsed it, and pass it on; what it could not parse ("jsonrpc": "1.0",
        arrays) comes as an exception and is owed no answer."""
        if not isinstance(item, SessionMessage):
            return item
        message = item.message
        if isinstance(message, types.JSONRPCRequest) and message.method not in _OPEN_ENDED:
            self._ids.add(_key(message.id))
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            self._done((message.params or {}).get("requestId"))  # a cancelled request gets no answer
        return item

    def sent(self, item: SessionMessage) -> None:
        if isinstance(item.message, (types.JSONRPCResponse, types.JSONRPCError)):
            self._done(item.message.id)

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
    """The server's write stream: each answer it sends is crossed off in `Unanswered`."""

    def __init__(self, inner: WriteStream[SessionMessage], unanswered: Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    async def send(self, item: SessionMessage, /) -> None:
        await self._inner.send(item)
        self._unanswered.sent(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedWrites:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc_val, exc_tb)


class PipeLines:
    """Lines from a pipe, read without a worker thread.

    The SDK reads stdin in a thread, and a thread blocked in read() cannot be cancelled: on SIGTERM the process
    would wait for the client's next line. Waiting for readability on the event loop cancels at once.
    """

    def __init__(self, fd: int, max_line: int | None = None) -> None:
        self._fd = fd
        self._max = max_line
        self._buffer = bytearray()
        self._eof = False

    def __aiter__(self) -> AsyncIterator[str]:
        return self

    async def __anext__(self) -> str:
        searched = 0
        long: LongLine | None = None  # a line past `max_line`, being skipped to its end
        while (end := self._buffer.find(b"\n", searched)) < 0:
            if self._eof:
                if not self._buffer and long is None:
                    raise StopAsyncIteration
                end = len(self._buffer) - 1
                break
            if self._max is not None and len(self._buffer) > self._max:
                # Not kept: its start (where a request's id is) and its size are enough to answer it.
                if long is None:  # one byte past what top_level reads: it knows the line goes on
                    long = LongLine(bytes(self._buffer[:_HEAD + 1]).decode("utf-8", errors="replace"))
                    long.bound = self._max
                long.size += len(self._buffer)
                long.tail = (long.tail + bytes(self._buffer[-_TAIL:]))[-_TAIL:]
                self._buffer.clear()
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
        if long is not None:
            long.size += len(line)
            long.tail = (long.tail + line[-_TAIL:])[-_TAIL:]
            return long
        return line.decode("utf-8", errors="replace")


_HEAD = 65_536
"""Bytes kept of a line too long to read: as many as `message_bounds.top_level` reads for an id."""
_TAIL = 512
"""Bytes kept of its end, where some clients write the id (`message_bounds.request_id`)."""


class LongLine(str):
    """A line longer than PipeLines' `max_line` (`bound`): only its first _HEAD bytes, and its size in bytes."""

    size: int = 0
    bound: int = 0
    tail: bytes = b""


FINISH_TIMEOUT = 5.0
"""How long a stop (SIGTERM, Ctrl-C) waits for the rest of a message already partly written to stdout: a client
reading it must not be left with a torn JSON line."""


class PipeWriter:
    """Text written to a pipe without a worker thread (the SDK's writer takes two thread round trips per message,
    a write and a flush: a large share of a small call's cost). Waits for the pipe to take more on the event loop.

    Messages end with a newline. A flush cancelled before its message started leaves it first in line; one
    cancelled after part of it went out (a stop while a slow client reads) finishes that message first, for at
    most FINISH_TIMEOUT seconds, so the client never reads a torn line. When the client closes its end, the rest
    is dropped and `on_closed` is called once: nobody is left to answer."""

    def __init__(self, fd: int, on_closed: Callable[[], None] | None = None) -> None:
        self._fd = fd
        self._pending = bytearray()
        self._mid_message = False  # part of the first pending message is already written
        self._closed = False
        self._on_closed = on_closed

    async def write(self, text: str) -> None:
        if not self._closed:
            self._pending += text.encode("utf-8")

    async def flush(self) -> None:
        try:
            await self._write_until(lambda: not self._pending)
        except anyio.get_cancelled_exc_class():
            if self._mid_message:
                with anyio.CancelScope(shield=True), anyio.move_on_after(FINISH_TIMEOUT):
                    await self._write_until(lambda: not self._mid_message)
            raise

    async def _write_until(self, done: Callable[[], bool]) -> None:
        while not done() and not self._closed:
            # At most the rest of the first message when finishing one: the next must not start.
            end = self._pending.find(b"\n") + 1 if self._mid_message else len(self._pending)
            try:
                written = os.write(self._fd, self._pending[: end or len(self._pending)])
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except (BrokenPipeError, ConnectionResetError):
                self._client_left()
                return
            if written:
                self._mid_message = self._pending[written - 1] != ord("\n")
            del self._pending[:written]

    def _client_left(self) -> None:
        self._closed = True
        self._pending.clear()
        self._mid_message = False
        logger.info("the client closed stdout; ending the session")
        if self._on_closed is not None:
            self._on_closed()


_DIGITS = sys.get_int_max_str_digits()  # 4,300 unless changed; 0: no limit
_LONG_RUN = re.compile(r"[0-9]{%d}" % (_DIGITS + 1)) if _DIGITS else None  # JSON's digits are ASCII only


class _Digits(str):
    """An integer of a message, kept as its digits: Python refuses to convert one of more than _DIGITS."""


class ScreenedLines:
    """The client's lines, less blank ones (no message), those holding more arrays and objects than
    LAZYTOOLS_MAX_MESSAGE_CONTAINERS (parsing them would hold the event loop for seconds) and those holding an integer longer than
    Python converts (over 4,300 digits): the SDK could not parse those and would answer nothing, so the client would
    wait for ever.
    Each gets its JSON-RPC error here, with its request's id when that can be read (else id null, as for a parse
    error); a notification is dropped. Only a line that long with such a run of digits is parsed for its numbers
    (the run may be inside a string, which is no number), so ordinary messages cost a length comparison.

    The lines handed on are remembered until the server receives what the SDK made of them: for one it could not
    read, `refusal` gives the error owed (see `_RefusalsAnswered`)."""

    def __init__(self, lines: AsyncIterator[str], max_containers: int) -> None:
        self._lines = lines
        self.max_containers = max_containers
        self.reply: Callable[[SessionMessage], Awaitable[None]] | None = None
        # The lines handed to the SDK whose message (or parse failure) the server has not received yet: the SDK's
        # reader turns each line into exactly one item, in order, over an unbuffered stream, so this holds two at most.
        self._handed: deque[str] = deque()

    def __aiter__(self) -> ScreenedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._lines.__anext__()
            if isinstance(line, LongLine):
                if self.reply is not None and (error := _too_long(line)) is not None:
                    await self.reply(SessionMessage(error))
                continue
            if not line.strip():
                continue
            if len(line) > self.max_containers and self.reply is not None \
                    and (held := containers(line, self.max_containers)) > self.max_containers:
                crowded = _crowded(line, held, self.max_containers)
                if crowded is not None:
                    await self.reply(SessionMessage(crowded))
                continue
            if _LONG_RUN is None or len(line) <= _DIGITS or self.reply is None \
                    or not _LONG_RUN.search(line) or not _holds_long_integer(line):
                self._handed.append(line)
                return line
            refusal = _refused(line)
            if refusal is not None:
                await self.reply(SessionMessage(refusal))

    def refusal(self, item: SessionMessage | Exception) -> types.JSONRPCError | None:
        """The error owed for the line `item` came from (the next handed on), when the SDK could not read it or
        read a request as a notification."""
        line = self._handed.popleft() if self._handed else None
        if line is None:
            return None
        if isinstance(item, Exception):
            return _unreadable(line, item)
        if isinstance(item.message, types.JSONRPCNotification) and '"id"' in line:
            return _bad_id(line)
        return None


def _too_long(line: LongLine) -> types.JSONRPCError | None:
    """The error for a line longer than LAZYTOOLS_MAX_BODY_BYTES, of which only the start was kept: with its id when
    its top level there shows one, id null when it does not; None for a notification (dropped and logged)."""
    members = top_level(line)
    if members is not None and "id" not in members and "method" in members:
        logger.warning("Dropped a message of %s bytes from the client (at most LAZYTOOLS_MAX_BODY_BYTES)",
                       f"{line.size:,}")
        return None
    ident = echoable(request_id(line, tail=line.tail))
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(
        code=types.INVALID_REQUEST, message=f"Invalid request: a message of {line.size:,} bytes, more than this "
                                            f"server reads ({line.bound:,}; LAZYTOOLS_MAX_BODY_BYTES)"))


def _crowded(line: str, held: int, most: int) -> types.JSONRPCError | None:
    """The error for a line holding more arrays and objects than `most`, refused before any parser
    makes an object of it: with its id when its top level shows one (`top_level`: its first 64 KiB), id null when it
    cannot be read; None for a notification or an answer (nothing is owed to either; it is dropped and logged)."""
    members = top_level(line)
    if members is not None and "id" not in members and "method" in members:
        logger.warning("Dropped a message from the client holding %s arrays and objects (at most %s are read)",
                       f"{held:,}", f"{most:,}")
        return None
    if members is not None and "method" not in members and ("result" in members or "error" in members):
        logger.warning("Dropped an answer from the client holding %s arrays and objects (at most %s are read)",
                       f"{held:,}", f"{most:,}")
        return None
    ident = echoable(request_id(line))
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(
        code=types.INVALID_REQUEST, message=crowded_refusal(held, most)))


def _holds_long_integer(line: str) -> bool:
    """Whether the line, read as JSON, holds an integer of more than _DIGITS digits (False when it is not JSON:
    the SDK answers that with a parse error)."""
    try:
        message = json.loads(line, parse_int=_Digits)
    except (ValueError, RecursionError):
        return False
    pending = [message]
    while pending:  # by hand: a deep message must not recurse
        value = pending.pop()
        if isinstance(value, _Digits):
            if len(value.lstrip("-")) > _DIGITS:
                return True
        elif isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return False


def _refused(line: str) -> types.JSONRPCError | None:
    """The error for a line holding an integer too long to convert; None for a notification (no answer owed)."""
    try:
        message = json.loads(line, parse_int=_Digits)
    except (ValueError, RecursionError):
        message = None
    ident = message.get("id") if isinstance(message, dict) else None
    if isinstance(message, dict) and "id" not in message and "method" in message:
        return None
    if isinstance(ident, _Digits):
        ident = int(ident) if len(ident.lstrip("-")) <= _DIGITS else None
    ident = echoable(ident)
    if ident is None:
        return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
            code=types.PARSE_ERROR, message=f"Parse error: an integer of more than {_DIGITS:,} digits"))
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(
        code=types.INVALID_REQUEST, message=f"Invalid request: it holds an integer of more than {_DIGITS:,} digits, "
                                            "more than this server reads; send a smaller number (or a string)"))


_READ_ID_LIMIT = 4 * 1024 * 1024
"""A line the SDK refused is searched for its id with Python's json only up to this length (else id null)."""


def _read_line(line: str) -> Any:
    """The line as Python's json reads it (past its depth, its top level: `top_level`), if it can and the line is at
    most _READ_ID_LIMIT long; else None."""
    if len(line) > _READ_ID_LIMIT:
        return None
    try:
        return json.loads(line)
    except ValueError:
        return None
    except RecursionError:  # deeper than Python's json goes: its id and method are read without the rest
        return top_level(line)


def _unreadable(line: str, error: Exception) -> types.JSONRPCError | None:
    """The error for a line the SDK refused: invalid JSON or a lone surrogate escape (-32700), a batch or a shape
    JSON-RPC does not allow (-32600), with the request's id when Python's json can read it; None for a notification
    or a response (nothing is owed to either). The input is never echoed."""
    message = _read_line(line)
    ident: Any = None
    if isinstance(message, dict):
        if "id" not in message and "method" in message:
            return None  # a notification
        if "method" not in message and ("result" in message or "error" in message):
            return None  # an answer to a request of the server's: JSON-RPC never answers an answer
        ident = echoable(message.get("id"))
    invalid = [e for e in error.errors(include_url=False, include_input=False) if e["type"] == "json_invalid"] \
        if isinstance(error, ValidationError) else []
    if invalid and str(invalid[0].get("ctx", {}).get("error", "")).startswith("recursion limit exceeded"):
        # Valid JSON, only deeper than the parser goes: as for a long integer, a request whose id Python's json
        # reads is an invalid request of that id (its client is waiting on it), else a parse error.
        if ident is None:
            return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
                code=types.PARSE_ERROR, message=f"Parse error: arrays and objects nested more than "
                                                f"{MAX_JSON_DEPTH} levels deep, more than this server reads"))
        return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(
            code=types.INVALID_REQUEST, message=DEPTH_REFUSAL))
    if invalid:
        return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(
            code=types.PARSE_ERROR, message="Parse error: not valid JSON (or a string holds an unpaired surrogate "
                                            "escape such as \\ud800)"))
    reason = "a batch (JSON array): send one message a line" if isinstance(message, list) \
        else "not a JSON-RPC 2.0 request (it needs \"jsonrpc\": \"2.0\", a method and a string or integer id)"
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(
        code=types.INVALID_REQUEST, message=f"Invalid request: {reason}"))


def _bad_id(line: str) -> types.JSONRPCError | None:
    """The error for a request whose id is neither a string nor an integer (1.5, null, true, an object): the SDK
    takes it for a notification and would answer nothing, so the client would wait for ever. None for a true
    notification (its "id" was inside a parameter). The id cannot be echoed: it is not one (id null)."""
    message = _read_line(line)
    if not isinstance(message, dict) or "id" not in message:
        return None
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
        code=types.INVALID_REQUEST, message="Invalid request: an id must be a string or an integer"))


class _RefusalsAnswered:
    """The server's read stream: a line the SDK could not read (it comes as an exception, which the SDK drops with
    a DEBUG line) gets its JSON-RPC error on stdout here, so the client does not wait for ever."""

    def __init__(self, inner: Any, lines: ScreenedLines, reply: Callable[[SessionMessage], Awaitable[None]]) -> None:
        self._inner = inner
        self._lines = lines
        self._reply = reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def receive(self) -> SessionMessage | Exception:
        item: SessionMessage | Exception = await self._inner.receive()
        refusal = self._lines.refusal(item)
        if refusal is not None:
            await self._reply(SessionMessage(refusal))
        return item


class _BoundsKept:
    """The server's read stream less the requests past `message_bounds` (an id too long to send back, an initialize
    too large to keep): each gets its JSON-RPC error here and never reaches the server."""

    def __init__(self, inner: Any, reply: Callable[[SessionMessage], Awaitable[None]], max_initialize_bytes: int
                 ) -> None:
        self._inner = inner
        self._reply = reply
        self._max_initialize_bytes = max_initialize_bytes

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item: SessionMessage | Exception = await self._inner.receive()
            request = item.message if isinstance(item, SessionMessage) else None
            if not isinstance(request, types.JSONRPCRequest):
                return item
            refused = refusal(request.id, request.method, request.params, size=partial(_size, request),
                              max_initialize_bytes=self._max_initialize_bytes)
            if refused is None:
                return item
            await self._reply(SessionMessage(types.JSONRPCError(
                jsonrpc="2.0", id=echoable(request.id) if refused.echo_id else None,
                error=types.ErrorData(code=refused.code, message=refused.message))))


def _size(request: types.JSONRPCRequest) -> int:
    """Bytes of the request as the SDK read it (the line less its whitespace and the fields it ignores)."""
    return json_size({"jsonrpc": "2.0", "id": request.id, "method": request.method, "params": request.params})


@contextmanager
def _claimed_stdout(fd: int, on_closed: Callable[[], None]) -> Iterator[PipeWriter]:
    """The protocol's own copy of `fd` (stdout), non-blocking; meanwhile `fd` points at stderr, so a stray print
    of a tool or a child never reaches the client (what the SDK does when it writes stdout itself)."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    was_blocking = os.get_blocking(private)
    try:
        os.dup2(2, fd)
        os.set_blocking(private, False)
        yield PipeWriter(private, on_closed)
    finally:
        os.set_blocking(private, was_blocking)
        os.dup2(private, fd)
        os.close(private)


def _stdout_is_a_pipe() -> bool:
    try:
        return sys.stdout is not None and sys.stdout.buffer.fileno() == 1 and _is_pipe(1)
    except (AttributeError, OSError, ValueError):  # replaced by a capture, or closed
        return False


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def serve_stdio(server: Server) -> None:
    """Serve one client on stdin/stdout until stdin closes and what it asked is answered (or the caller cancels)."""
    stdin_fd = sys.stdin.fileno() if sys.stdin is not None else -1
    # A client that closes its end of stdout is gone, whether or not it closes stdin: the session ends, quietly.
    with anyio.CancelScope() as session:
        await _serve_stdio(server, stdin_fd, session.cancel, _bound(server, "max_initialize_bytes"),
                           _bound(server, "max_body_bytes"), _bound(server, "max_message_containers"))


def _bound(server: Server, name: str) -> int:
    """The setting `name` (a bound in bytes) as the server was built with it (a LazyServer keeps its settings), else
    the setting's default."""
    settings = getattr(server, "settings", None)
    if isinstance(settings, Settings):
        return int(getattr(settings, name))
    return int(Settings.model_fields[name].default)


async def _serve_stdio(server: Server, stdin_fd: int, client_left: Callable[[], None], max_initialize_bytes: int,
                      max_line: int, max_containers: int) -> None:
    async with AsyncExitStack() as stack:
        lines: AsyncIterator[str] | None = None  # a regular file: the SDK's threaded reader (a file cannot be waited on)
        if stdin_fd >= 0 and _is_pipe(stdin_fd):
            was_blocking = os.get_blocking(stdin_fd)
            os.set_blocking(stdin_fd, False)
            stack.callback(os.set_blocking, stdin_fd, was_blocking)
            lines = ScreenedLines(PipeLines(stdin_fd, max_line), max_containers)
        elif stdin_fd >= 0 and os.isatty(stdin_fd):
            # A terminal can be waited on too, and stays blocking (the shell shares it): a read after readiness
            # returns the typed line at once. Without this, Ctrl-C waited for the SDK's reader thread, i.e. Ctrl-D.
            lines = ScreenedLines(PipeLines(stdin_fd, max_line), max_containers)
        # A pipe is written on the event loop; else the SDK's writer.
        stdout = stack.enter_context(_claimed_stdout(1, client_left)) if _stdout_is_a_pipe() else None
        read_stream, write_stream = await stack.enter_async_context(
            stdio_server(stdin=lines, stdout=stdout))  # type: ignore[arg-type]
        inner: Any = read_stream
        if isinstance(lines, ScreenedLines):
            lines.reply = write_stream.send
            inner = _RefusalsAnswered(read_stream, lines, write_stream.send)
        # Outside the refusals above (which take one item per line handed on), and inside the count of requests
        # owed an answer: a request refused here is answered here.
        inner = _BoundsKept(inner, write_stream.send, max_initialize_bytes)
        unanswered = Unanswered()
        reads: WatchedReadStream[SessionMessage | Exception] = WatchedReadStream(
            inner, on_item=unanswered.received, on_end=unanswered.drain)
        await server.run(reads, _WatchedWrites(write_stream, unanswered),
                         server.create_initialization_options())
