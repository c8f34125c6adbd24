"""A real MCP server over HTTP that tells each caller the `Authorization` header its request came with, and keeps
every one it saw (the per-user credential tests)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["Recorder"]


class Recorder:
    def __init__(self) -> None:
        self.seen: list[str | None] = []
        """The Authorization of every HTTP request, in order."""

    def app(self) -> ASGIApp:
        server = Server("recorder", on_list_tools=self._list, on_call_tool=self._call,
                        on_list_prompts=self._prompts, on_get_prompt=self._prompt,
                        on_list_resources=self._resources, on_read_resource=self._read,
                        on_list_resource_templates=self._templates)
        inner = server.streamable_http_app()

        async def recording(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                found = [v.decode() for k, v in scope["headers"] if k == b"authorization"]
                self.seen.append(found[0] if found else None)
            await inner(scope, receive, send)

        return _WithLifespan(recording, inner)

    async def _list(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="whoami", description="Who the server thinks you are.",
                                                       input_schema={"type": "object", "properties": {}})])

    async def _call(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=_authorization(ctx))])

    async def _prompts(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="greeting", description="Says who you are.")])

    async def _prompt(self, ctx: ServerRequestContext[Any],
                      params: types.GetPromptRequestParams) -> types.GetPromptResult:
        message = types.PromptMessage(role="user", content=types.TextContent(text=_authorization(ctx)))
        return types.GetPromptResult(messages=[message])

    async def _resources(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="memo://me", name="me")])

    async def _templates(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[])

    async def _read(self, ctx: ServerRequestContext[Any],
                    params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(params.uri),
                                                                             text=_authorization(ctx))])


def _authorization(ctx: ServerRequestContext[Any]) -> str:
    request = ctx.request
    return request.headers.get("authorization", "") if request is not None else ""


class _WithLifespan:
    """Requests through the recorder; the lifespan (the session manager's task group) through the SDK's app."""

    def __init__(self, recording: ASGIApp, inner: ASGIApp) -> None:
        self.recording = recording
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (self.inner if scope["type"] == "lifespan" else self.recording)(scope, receive, send)
