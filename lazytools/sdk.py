"""The one module that reaches into private parts of the MCP SDK (pinned: mcp 2.3.0).

An SDK upgrade that moves one of these touches this file only. Each name says why lazytools needs it.
"""

from __future__ import annotations

from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext

# Upstream HTTP servers: the SDK's own factory for the client it would make itself (its timeouts, redirects and
# headers), so an upstream reached through lazytools sees the same client as one reached directly. The SDK leaves
# a caller-made client open, so lazytools must make it, and this factory is the only way to make it the same.
from mcp.shared._httpx_utils import create_mcp_http_client

# The stdio transport wraps the SDK's read and write streams; their types are only public under this module.
from mcp.shared._stream_protocols import ReadStream, WriteStream

__all__ = ["ReadStream", "WriteStream", "connection_of", "create_mcp_http_client"]


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The connection behind a request: stable per stdio pipe and per HTTP session (ctx.session is not).

    Sessions of the dynamic surface are keyed by it; the SDK offers no public accessor in 2.3.0."""
    return ctx.session._connection  # noqa: SLF001
