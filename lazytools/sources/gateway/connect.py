"""How one upstream connection is opened: the transport its config names, its read stream watched (its end is
noticed without a request in flight) and screened on the way in, and one line saying why opening failed."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TextIO

import anyio
import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, UNSUPPORTED_PROTOCOL_VERSION

from ...safetext import clip, redact_secrets
from ...sdk import create_mcp_http_client
from ...settings import CHAIN_VARIABLE
from ...streams import WatchedReadStream
from .bounds import bound_notification
from .config import HttpServer, ServerConfig
from .listing import screen_listing
from .stdio import stdio_client

__all__ = ["Screen", "describe_failure", "open_transport", "refused_handshake", "watched"]


def open_transport(config: ServerConfig, *, auth: httpx2.Auth | None, chain: str, stderr: TextIO,
                   connect_timeout: float, max_line_bytes: int) -> AbstractAsyncContextManager[Any]:
    """The transport `config` names: streamable HTTP or SSE with its headers and `auth`, or a child process whose
    stderr goes to `stderr` and whose messages are read up to `max_line_bytes`."""
    if isinstance(config, HttpServer):
        if config.type == "sse":
            return sse_client(config.url, headers=dict(config.headers) or None, timeout=connect_timeout,
                              auth=auth)
        return _streamable_http(config.url, dict(config.headers), auth)
    # "replace": with the SDK's strict default, one byte of invalid UTF-8 on an upstream's stdout stops its
    # reader for good and every later call hangs until its timeout; replaced, the line is junk and dropped.
    params = StdioServerParameters(command=config.command, args=list(config.args),
                                   env={**config.env, CHAIN_VARIABLE: chain}, cwd=config.cwd,
                                   encoding_error_handler="replace")
    # Its stderr becomes our log lines, named by the server: what a user needs to see when it fails.
    return stdio_client(params, errlog=stderr, max_line_bytes=max_line_bytes)


def refused_handshake(exc: BaseException) -> bool:
    """Whether `exc` is a server's answer that it does not do the initialize handshake (a 2026-07-28-only server)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return isinstance(exc, MCPError) and exc.code == UNSUPPORTED_PROTOCOL_VERSION


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
        return f"command not found: `{clip(str(name), 200)}` not found{where}"
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return "it exited or closed the connection before answering"  # the caller adds what its stderr said
    if isinstance(exc, MCPError):
        return f"error {exc.code}: {exc.error.message}"
    if isinstance(exc, TimeoutError) and str(exc):
        return str(exc)
    text = redact_secrets(str(exc).strip())  # it is logged and may reach the client: no URL's key or header value
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@asynccontextmanager
async def _streamable_http(url: str, headers: dict[str, str], auth: httpx2.Auth | None) -> AsyncIterator[Any]:
    # The SDK leaves a caller-made HTTP client open; this one carries the config's headers and is ours to close.
    async with create_mcp_http_client(headers=headers or None, auth=auth) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


class Screen:
    """Drops the malformed items of a listing and cuts long lists of prompts and resources (listing.py), cuts
    oversized progress and log messages (bounds.py); knows the version once negotiated."""

    def __init__(self, upstream: str, *, keep: int | None = None) -> None:
        self.upstream = upstream
        self.keep = keep
        self.version: str | None = None

    def __call__(self, item: Any) -> Any:
        return screen_listing(bound_notification(item), upstream=self.upstream, version=self.version, keep=self.keep)


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
