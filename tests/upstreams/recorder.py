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
        server = Server("recorder", on_list_tools=self._list, on_call_tool=self._call)
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
        request = ctx.request
        got = request.headers.get("authorization", "") if request is not None else ""
        return types.CallToolResult(content=[types.TextContent(text=got)])


class _WithLifespan:
    """Requests through the recorder; the lifespan (the session manager's task group) through the SDK's app."""

    def __init__(self, recording: ASGIApp, inner: ASGIApp) -> None:
        self.recording = recording
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (self.inner if scope["type"] == "lifespan" else self.recording)(scope, receive, send)
