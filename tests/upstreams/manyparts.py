"""A real MCP server whose one tool answers with many small content blocks (each under every size limit).

    python tests/upstreams/manyparts.py

`lines(count)` returns `count` text blocks "line 0" ... with an image block after the first; `blocks(count)` as
many image blocks, which cannot be joined.
"""

from __future__ import annotations

import base64
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server

PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
SCHEMA = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}


async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[
        types.Tool(name="lines", description="Answer with many text blocks, one line each.", input_schema=SCHEMA),
        types.Tool(name="pixels", description="Answer with many image blocks.", input_schema=SCHEMA)])


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    count = int((params.arguments or {})["count"])
    image = types.ImageContent(data=PIXEL, mime_type="image/png")
    if params.name == "pixels":
        return types.CallToolResult(content=[image] * count)
    lines: list[types.ContentBlock] = [types.TextContent(text=f"line {number}") for number in range(count)]
    return types.CallToolResult(content=[lines[0], image, *lines[1:]])


async def main() -> None:
    from mcp.server.stdio import stdio_server

    server: Server[Any] = Server("manyparts", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options(NotificationOptions()))


if __name__ == "__main__":
    anyio.run(main)
