"""The floor of `benchmarks.percall`: the thinnest pass-through the MCP Python SDK allows, to tell what the extra
hop costs by itself from what lazytools adds on top of it.

A low-level SDK server over stdio whose `tools/list` and `tools/call` handlers hand the request as it came to one
`ClientSession` on one stdio upstream and return its answer as it came: no search, no validation (of arguments or
of results), no middleware, no bookkeeping. Any proxy built on the SDK does at least this work per call: the SDK
server's dispatch and stdio transport in front, the SDK client session and stdio transport behind, one more
process's pipes.

    python benchmarks/bare_proxy.py -- COMMAND [ARG ...]     (the upstream to start)

It is run by path, like the upstream in `benchmarks/gateway.py`, so that it imports the SDK alone, not lazytools.
It runs on uvloop when that is installed, as lazytools does, so the two compare on the same event loop. Its stdio
transports are the SDK's own, both sides; lazytools has its own (a non-blocking stdin reader, stdout written
without the SDK's worker thread, a bounded line reader on the upstream side), so lazytools minus this floor is
lazytools' own work less what its transports save.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types

__all__ = ["main"]


async def serve(command: str, args: list[str]) -> None:
    from mcp import StdioServerParameters
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    params = StdioServerParameters(command=command, args=args)
    async with stdio_client(params) as (up_read, up_write), ClientSession(up_read, up_write) as upstream:
        await upstream.initialize()

        # `send_request` rather than `call_tool`/`list_tools`: those also check results against output schemas and
        # keep per-tool state, which is more than a pass-through needs.
        async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
            return await upstream.send_request(types.ListToolsRequest(params=params), types.ListToolsResult)

        async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
            return await upstream.send_request(types.CallToolRequest(params=params), types.CallToolResult)

        server: Server[Any] = Server("bare-proxy", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.exit("usage: python benchmarks/bare_proxy.py -- COMMAND [ARG ...]")
    anyio.run(serve, argv[0], argv[1:], backend_options=_loop_options())


def _loop_options() -> dict[str, Any]:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


if __name__ == "__main__":
    main()
