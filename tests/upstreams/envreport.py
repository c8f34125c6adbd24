"""An upstream with one tool, `env(name)`, that answers the value of an environment variable as the server sees
it (or `(unset)`): what lazytools passed on to the servers it starts.

    python tests/upstreams/envreport.py
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

_TOOL = types.Tool(name="env", description="The value of one environment variable of this server.",
                   input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})


async def _list(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[_TOOL])


async def _call(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    value = os.environ.get(str((params.arguments or {}).get("name")))
    return types.CallToolResult(content=[types.TextContent(text="(unset)" if value is None else value)])


async def _serve() -> None:
    server = Server("envreport", version="1.0", on_list_tools=_list, on_call_tool=_call)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(_serve)
