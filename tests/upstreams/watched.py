"""A real SDK server whose resources change, shared by several lazytools replicas over streamable HTTP.

`Watched(name)` lists `watch://<name>/a` and `watch://<name>/b` and templates `watch://<name>/t/{item}`, accepts `resources/subscribe` per upstream session
(each replica's connection is one), and `change(uri)` sends `notifications/resources/updated` to every upstream
session subscribed to `uri`, as a server watching files does. `subscribers(uri)` says how many upstream sessions
are subscribed now: what lazytools holds at its upstream.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

__all__ = ["Watched"]

Ctx = ServerRequestContext[Any]


class Watched:
    def __init__(self, name: str = "watch") -> None:
        self.name = name
        self.uris = [f"watch://{name}/a", f"watch://{name}/b"]
        self.versions = dict.fromkeys(self.uris, 0)
        self._subscribed: dict[str, dict[str, Any]] = {}
        """By URI: the upstream sessions (one per lazytools replica connection) subscribed to it, by their
        `Mcp-Session-Id`, each with the session object to notify."""
        self.server: Server[Any] = Server(
            name, version="1.0", on_list_tools=self._tools, on_call_tool=self._call, on_list_resources=self._list, on_read_resource=self._read,
            on_list_resource_templates=self._templates,
            on_subscribe_resource=self._subscribe, on_unsubscribe_resource=self._unsubscribe)

    def subscribers(self, uri: str) -> int:
        return len(self._subscribed.get(uri, []))

    async def change(self, uri: str) -> int:
        """A new version of `uri`, announced to every subscribed upstream session; how many were told."""
        self.versions[uri] += 1
        told = 0
        for key, session in list(self._subscribed.get(uri, {}).items()):
            try:
                await session.send_resource_updated(uri)
                told += 1
            except Exception:  # a replica killed with its connection: the others are still told
                self._subscribed[uri].pop(key, None)
        return told

    async def _tools(self, ctx: Ctx, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="versions", description="The resources' versions.",
                                                       input_schema={"type": "object"})])

    async def _call(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(self.versions))])

    async def _list(self, ctx: Ctx, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri=uri, name=uri.rsplit("/", 1)[1])
                                                    for uri in self.uris])

    async def _templates(self, ctx: Ctx, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=f"watch://{self.name}/t/{{item}}", name="item")])

    async def _read(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, text=f"{uri} version {self.versions.get(uri, 0)}", mime_type="text/plain")])

    async def _subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self._subscribed.setdefault(str(params.uri), {})[_session_id(ctx)] = ctx.session
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self._subscribed.get(str(params.uri), {}).pop(_session_id(ctx), None)
        return types.EmptyResult()


def _session_id(ctx: Ctx) -> str:
    request = ctx.request
    return str(request.headers.get("mcp-session-id", "")) if request is not None else ""
