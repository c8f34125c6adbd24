"""A plain SDK server with prompts and resources whose lists can be partial: a method it lacks, one that fails, a
malformed item, or many items. For the gateway's tests of each list standing alone (issue #20, items 2 and 7).

    python tests/upstreams/partial.py [--name p] [--count N] [--templates] [--fail-prompts] [--malformed]

It lists `count` prompts (`p1` …), resources (`partial://NAME/r1` …) and, with `--templates`, as many templates
(`partial://NAME/t1/{x}` …); without `--templates` it has no handler for `resources/templates/list` at all, so the
SDK answers it -32601, as most plain servers do. `--fail-prompts` makes `prompts/list` fail; `--malformed` adds a
prompt without a name and a resource without a URI to the lists (put in on the way out: the SDK checks what its
handlers return and would not send them).
One tool, `echo`.
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

__all__ = ["MALFORMED", "build", "main"]

Ctx = ServerRequestContext[Any]


def build(name: str, *, count: int = 2, templates: bool = False, fail_prompts: bool = False) -> Server[Any]:
    base = f"partial://{name}"

    async def list_tools(ctx: Ctx, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="echo", description="Echo a text back.",
                                                       input_schema={"type": "object"})])

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=str((params.arguments or {}).get("text")))])

    async def list_prompts(ctx: Ctx, params: Any) -> Any:
        if fail_prompts:
            raise RuntimeError("the prompt store is down")
        return types.ListPromptsResult(prompts=[types.Prompt(name=f"p{i}", description=f"Prompt {i}.")
                                                for i in range(1, count + 1)])

    async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return types.GetPromptResult(messages=[
            types.PromptMessage(role="user", content=types.TextContent(text=f"{name} prompt {params.name}"))])

    async def list_resources(ctx: Ctx, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri=f"{base}/r{i}", name=f"r{i}")
                                                    for i in range(1, count + 1)])

    async def list_templates(ctx: Ctx, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=f"{base}/t{i}/{{x}}", name=f"t{i}") for i in range(1, count + 1)])

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=f"{name} reads {uri}")])

    return Server(name, version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_prompts=list_prompts, on_get_prompt=get_prompt, on_list_resources=list_resources,
                  on_read_resource=read_resource, on_list_resource_templates=list_templates if templates else None)


MALFORMED = {"prompts": {"description": "a prompt without a name"}, "resources": {"name": "a resource without a URI"}}


class _Spoiler:
    """The server's write stream, with a malformed item put second into each prompts or resources list it sends."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def send(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, types.JSONRPCResponse) and isinstance(message.result, dict):
            for key, bad in MALFORMED.items():
                if isinstance(message.result.get(key), list):
                    items = list(message.result[key])
                    items.insert(1, bad)
                    message = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result={**message.result,
                                                                                          key: items})
            item = SessionMessage(message, metadata=item.metadata)
        await self._inner.send(item)

    async def __aenter__(self) -> _Spoiler:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._inner.aclose()


async def _serve(server: Server[Any], malformed: bool) -> None:
    async with stdio_server() as (read_stream, write_stream):
        writer: Any = _Spoiler(write_stream) if malformed else write_stream
        await server.run(read_stream, writer, server.create_initialization_options(NotificationOptions()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="p")
    parser.add_argument("--count", type=int, default=2)
    parser.add_argument("--templates", action="store_true")
    parser.add_argument("--fail-prompts", action="store_true")
    parser.add_argument("--malformed", action="store_true")
    args = parser.parse_args()
    server = build(args.name, count=args.count, templates=args.templates, fail_prompts=args.fail_prompts)
    anyio.run(partial(_serve, server, args.malformed))


if __name__ == "__main__":
    main()
