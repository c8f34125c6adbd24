"""The one module that reaches into private parts of the MCP SDK (pinned: mcp 2.3.0).

An SDK upgrade that moves one of these touches this file only. Each name says why lazytools needs it.
"""

from __future__ import annotations

from typing import Any

# Upstream stdio servers: lazytools reads their stdout with its own line reader (the SDK's is quadratic in a line's
# length) but starts and stops the process exactly as the SDK does: spawned in its own session, stdin closed, a
# grace period, then the whole tree killed; the stdout drained meanwhile, the streams closed.
from mcp.client.stdio import _aclose_all as aclose_all
from mcp.client.stdio import _create_platform_compatible_process as create_stdio_process
from mcp.client.stdio import _drain_stdout as drain_stdout
from mcp.client.stdio import _get_executable_command as executable_command
from mcp.client.stdio import _stop_server_process as stop_stdio_process

# Traces: the SDK's own middleware, a SERVER span per request continuing the caller's trace from `_meta`. The
# low-level Server installs it by default; lazytools builds its middleware list itself and puts it first.
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.connection import Connection

# Per-request middleware (each request's origin, principal, session record is set around its handler): the SDK
# marks `ServerMiddleware` provisional in 2.3.0, so its names are reached through here.
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext

# Upstream HTTP servers: the SDK's own factory for the client it would make itself (its timeouts, redirects and
# headers), so an upstream reached through lazytools sees the same client as one reached directly. The SDK leaves
# a caller-made client open, so lazytools must make it, and this factory is the only way to make it the same.
from mcp.shared._httpx_utils import create_mcp_http_client

# The stdio transport wraps the SDK's read and write streams; their types are only public under this module.
from mcp.shared._stream_protocols import ReadStream, WriteStream

__all__ = [
    "CallNext",
    "HandlerResult",
    "OpenTelemetryMiddleware",
    "ReadStream",
    "ServerMiddleware",
    "WriteStream",
    "aclose_all",
    "connection_of",
    "create_mcp_http_client",
    "create_stdio_process",
    "drain_stdout",
    "executable_command",
    "stop_stdio_process",
]


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The connection behind a request: stable per stdio pipe and per HTTP session (ctx.session is not).

    Sessions of the dynamic surface are keyed by it; the SDK offers no public accessor in 2.3.0."""
    return ctx.session._connection  # noqa: SLF001
