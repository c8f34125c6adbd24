"""A real MCP server (the SDK's) on the older HTTP+SSE transport, whose answers, which all come on its one GET
stream, can be past the bounds lazytools reads: `big` (`size` bytes of text), `crowded` (structured content of
`size` empty arrays) and `echo`. Served in the test's process (`serve`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import mcp_types as types
from mcp.server.mcpserver import MCPServer

from ..helpers import running_http


def build() -> MCPServer:
    server = MCPServer("hostile-sse")

    @server.tool()
    def big(size: int) -> str:
        """`size` bytes of text."""
        return "x" * size

    @server.tool()
    def crowded(size: int) -> types.CallToolResult:
        """Structured content of `size` empty arrays."""
        return types.CallToolResult(content=[types.TextContent(type="text", text="rows")],
                                    structured_content={"rows": [[] for _ in range(size)]})

    @server.tool()
    def echo(size: int) -> str:
        """Says its size back."""
        return f"echo {size}"

    return server


@asynccontextmanager
async def serve() -> AsyncIterator[str]:
    """The server on a free port of 127.0.0.1; yields its /sse URL."""
    async with running_http(build().sse_app()) as base:
        yield base + "/sse"
