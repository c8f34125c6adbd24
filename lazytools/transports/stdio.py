"""stdio transport: the server over this process's stdin/stdout (stdout carries protocol messages only)."""

from __future__ import annotations

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["serve_stdio"]


async def serve_stdio(server: Server) -> None:
    """Serve one client on stdin/stdout until stdin closes."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
