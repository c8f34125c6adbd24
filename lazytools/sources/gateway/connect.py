"""How one upstream connection is opened: the transport its config names, its read stream watched (its end is
noticed without a request in flight) and screened on the way in, and one line saying why opening failed."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any, TextIO

import anyio
import httpx2
import mcp_types as types
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED, UNSUPPORTED_PROTOCOL_VERSION

from ...parts import fewer_parts
from ...safetext import clip, redact_secrets
from ...sdk import create_mcp_http_client
from ...settings import CHAIN_VARIABLE
from ...streams import WatchedReadStream
from .bounds import bound_notification
from .config import HttpServer, ServerConfig
from .httpbounds import bounded
from .listing import screen_listing
from .stdio import stdio_client

__all__ = ["Screen", "StartFailed", "describe_failure", "open_transport", "refused_handshake", "watched"]

logger = logging.getLogger(__name__)


def open_transport(config: ServerConfig, *, auth: httpx2.Auth | None, chain: str, stderr: TextIO,
                   connect_timeout: float, max_line_bytes: int) -> AbstractAsyncContextManager[Any]:
    """The transport `config` names: streamable HTTP or SSE with its headers and `auth`, or a child process whose
    stderr goes to `stderr` and whose messages are read up to `max_line_bytes`."""
    if isinstance(config, HttpServer):
        if config.type == "sse":
            return _sse(config.url, dict(config.headers), auth, connect_timeout, max_line_bytes)
        return _streamable_http(config.url, dict(config.headers), auth, max_line_bytes)
    # "replace": with the SDK's strict default, one byte of invalid UTF-8 on an upstream's stdout stops its
    # reader for good and every later call hangs until its timeout; replaced, the line is junk and dropped.
    params = StdioServerParameters(command=config.command, args=list(config.args),
                                   env={**config.env, CHAIN_VARIABLE: chain}, cwd=config.cwd,
                                   encoding_error_handler="replace")
    # Its stderr becomes our log lines, named by the server: what a user needs to see when it fails.
    return stdio_client(params, errlog=stderr, max_line_bytes=max_line_bytes)


def refused_handshake(exc: BaseException) -> bool:
    """Whether `exc` is a server's answer that it does not do the initialize handshake (a 2026-07-28-only server)."""
    exc = _alone(exc)
    return isinstance(exc, MCPError) and exc.code == UNSUPPORTED_PROTOCOL_VERSION


def _alone(exc: BaseException) -> BaseException:
    """The exception inside groups of one (task groups wrap what their one failing task raised), else `exc`."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def describe_failure(exc: BaseException, *, cwd: Any = None, command: Any = None) -> str:
    """One line saying why a connection failed, from the innermost useful exception (`command`: the upstream's
    command, named when it cannot be started)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and cwd is not None and exc.filename is not None and \
            str(exc.filename) == str(cwd):
        return f"working directory not found: {cwd}"
    if isinstance(exc, FileNotFoundError):
        name = exc.filename if exc.filename is not None else command
        if name is None:
            return f"command not found: {exc}"
        where = "" if os.sep in str(name) else " on PATH"
        if where == "" and not os.path.isabs(str(name)):
            # Found from the directory the client started lazytools in (often / or the home folder, rarely the
            # config's), unless the entry sets one: said, since "`./server.py` not found" beside the file is a riddle.
            where = (f" in {cwd} (the server's cwd)" if cwd is not None
                     else f" in {os.getcwd()} (the working directory; set \"cwd\")")
        return f"command not found: `{clip(str(name), 200)}` not found{where}"
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return "it exited or closed the connection before answering"  # the caller adds what its stderr said
    if isinstance(exc, MCPError):
        return f"error {exc.code}: {exc.error.message}"
    if isinstance(exc, TimeoutError | StartFailed) and str(exc):
        return str(exc)
    text = redact_secrets(str(exc).strip())  # it is logged and may reach the client: no URL's key or header value
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@asynccontextmanager
async def _streamable_http(url: str, headers: dict[str, str], auth: httpx2.Auth | None, max_bytes: int
                           ) -> AsyncIterator[Any]:
    # The SDK leaves a caller-made HTTP client open; this one carries the config's headers and is ours to close.
    # Its answers are read within the bounds a stdio upstream's are (httpbounds.py); an SSE event as long too.
    async with bounded(create_mcp_http_client(headers=headers or None, auth=auth), max_bytes) as http:
        async with streamable_http_client(url, http_client=http, max_sse_event_size=max_bytes) as streams:
            yield streams


_SSE_STARTING: ContextVar[Callable[[str], None] | None] = ContextVar("sse_starting", default=None)
"""While an SSE connection waits for its endpoint: what to do with an error the SDK's SSE client logs (its reader
task runs in the connecting task's context, so it sees this)."""


class _StartupErrors(logging.Handler):
    """Hands an error the SDK's SSE client logs to the connection that is starting in that context."""

    def emit(self, record: logging.LogRecord) -> None:
        report = _SSE_STARTING.get()
        if report is not None and record.levelno >= logging.ERROR:
            report(record.getMessage())


_SSE_LOGGER = logging.getLogger("mcp.client.sse")


class StartFailed(ConnectionError):
    """An upstream's transport could not start, for the reason its text says (shown as it is)."""


@asynccontextmanager
async def _sse(url: str, headers: dict[str, str], auth: httpx2.Auth | None, timeout: float, max_bytes: int
               ) -> AsyncIterator[Any]:
    """The SDK's SSE client, failing at once and with its reason where it would not. Its reader logs an endpoint of
    another origin (or any error before the endpoint event) and then blocks, so the connection waited out its
    whole start-up deadline and said only that; a stream that ends before naming its endpoint surfaced as anyio's
    "Child exited without calling task_status.started()"."""
    if not any(isinstance(handler, _StartupErrors) for handler in _SSE_LOGGER.handlers):
        _SSE_LOGGER.addHandler(_StartupErrors())
    said: list[str] = []
    started = False
    # The scope stays open around the session (it must close after the SDK's own task group), but only the start
    # can be cancelled by it.
    with anyio.CancelScope() as scope:

        def report(message: str) -> None:
            if not started and not said:
                said.append(message)
                scope.cancel()

        token = _SSE_STARTING.set(report)  # the reader task, started by the SDK, copies this context
        try:
            async with sse_client(url, headers=headers or None, timeout=timeout, auth=auth,
                                  httpx_client_factory=partial(_bounded_client, max_bytes=max_bytes)) as streams:
                started = True
                _SSE_STARTING.reset(token)  # what follows is the session, not its start
                yield streams
        except Exception as exc:
            if started or not _ended_unstarted(exc):
                raise
            raise StartFailed("its SSE stream ended before it named the endpoint to send messages to") from None
        finally:
            if not started:
                _SSE_STARTING.reset(token)
    if said:
        raise StartFailed(f"its SSE stream could not be used: {redact_secrets(clip(said[0], 300))}")


def _bounded_client(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
                    auth: httpx2.Auth | None = None, *, max_bytes: int) -> httpx2.AsyncClient:
    """The SDK's HTTP client for an SSE connection, its answers read within bounds (httpbounds.py)."""
    return bounded(create_mcp_http_client(headers=headers, timeout=timeout, auth=auth), max_bytes)


def _ended_unstarted(exc: BaseException) -> bool:
    """Whether `exc` is anyio's word for a task that ended before saying it had started (alone in its groups)."""
    exc = _alone(exc)
    return isinstance(exc, RuntimeError) and "without calling task_status.started()" in str(exc)


class Screen:
    """Drops the malformed items of a listing and cuts long lists of prompts and resources (listing.py), cuts
    oversized progress and log messages (bounds.py); knows the version once negotiated."""

    def __init__(self, upstream: str, *, keep: int | None = None) -> None:
        self.upstream = upstream
        self.keep = keep
        self.version: str | None = None

    def __call__(self, item: Any) -> Any:
        return screen_listing(bound_notification(_fewer_parts(item)), upstream=self.upstream, version=self.version,
                              keep=self.keep)


def _fewer_parts(item: Any) -> Any:
    """An answer whose result has more content blocks than lazytools passes on, with them joined here, before the
    SDK's client validates each one (`parts.py`): 100,000 blocks held the event loop for over a second there."""
    message = item.message if isinstance(item, SessionMessage) else None
    if isinstance(message, types.JSONRPCResponse) and isinstance(message.result, dict):
        content = message.result.get("content")
        if isinstance(content, list):
            parts = fewer_parts(content, _plain_text, lambda text: {"type": "text", "text": text})
            if parts is not None:
                logger.warning("upstream answered request %s with %d content parts: joined to %d",
                               clip(str(message.id), 40), len(content), len(parts))
                message.result["content"] = parts
    return item


def _plain_text(block: Any) -> str | None:
    """A block's text when it is a text block and nothing else (no annotations, no `_meta`)."""
    if type(block) is dict and len(block) == 2 and block.get("type") == "text" and type(block.get("text")) is str:
        return str(block["text"])
    return None


@asynccontextmanager
async def watched(transport: AbstractAsyncContextManager[Any], on_end: Callable[[], None],
                   screen: Callable[[Any], Any]) -> AsyncIterator[Any]:
    """The transport's streams, with a read stream that reports its end (how a crashed stdio server is noticed
    without a request in flight) and screens each message on its way in."""

    async def ended() -> None:
        on_end()

    async with transport as (read_stream, write_stream):
        yield WatchedReadStream(read_stream, on_item=screen, on_end=ended,
                                ends=(anyio.EndOfStream, anyio.ClosedResourceError)), write_stream
