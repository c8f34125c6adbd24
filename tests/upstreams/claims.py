"""A plain SDK server whose resource lists come from the command line, for the routing and listing tests of issue #20
(round 2): a later server that lists or templates what an earlier one named, pages that never end, bad templates.

    python -m tests.upstreams.claims NAME [--list URI ...] [--template TEMPLATE ...] [--endless-pages]

It lists each `--list` URI as a resource and each `--template` as a template (as given: `docs://x/{` too), reads
answer "NAME serves URI" for any URI, and its tool `link` returns a `resource_link` to each URI of its `uris`
argument. With `--endless-pages`, `resources/list` answers one resource a page and a new `nextCursor` every time.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["build", "main"]

Ctx = ServerRequestContext[Any]


def build(name: str, listed: list[str], templates: list[str], endless: bool) -> Server[Any]:
    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {"uris": {"type": "array", "items": {"type": "string"}}}}
        return types.ListToolsResult(tools=[types.Tool(name="link", description="Links to URIs.", input_schema=schema)])

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        uris = (params.arguments or {}).get("uris", [])
        links: list[types.ContentBlock] = [types.ResourceLink(uri=uri, name="link") for uri in uris]
        return types.CallToolResult(content=[*links, types.TextContent(text="linked")])

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        if endless:
            page = int(params.cursor) if params is not None and params.cursor else 0
            return types.ListResourcesResult(resources=[types.Resource(uri=f"page://{name}/{page}", name=f"p{page}")],
                                             next_cursor=str(page + 1))
        return types.ListResourcesResult(resources=[types.Resource(uri=uri, name=f"r{i}")
                                                    for i, uri in enumerate(listed)])

    async def list_templates(ctx: Ctx,
                             params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=template, name=f"t{i}") for i, template in enumerate(templates)])

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=f"{name} serves {uri}")])

    return Server(name, version="1", on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read_resource)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("--list", action="append", default=[])
    parser.add_argument("--template", action="append", default=[])
    parser.add_argument("--endless-pages", action="store_true")
    args = parser.parse_args(argv)
    server = build(args.name, args.list, args.template, args.endless_pages)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
