"""A real MCP server that uses every feature a gateway must pass through, for the gateway's transparency tests.

    python -m tests.upstreams.features --name feat        (stdio; `build(name)` gives it in-process for HTTP)

One row of issue #15 each:
- progress: `slow_count` reports one `notifications/progress` per step when the call carries a progressToken;
  with a short delay per step and many steps it outlives a short per-call timeout while staying alive.
- cancellation: `wait_forever` runs until cancelled; `cancelled` says how many of its calls started and how
  many were cancelled.
- logging: `log` sends `notifications/message` during the call (at or above the level set by `logging/setLevel`);
  `log_later` sends one after its call has returned (outside any call).
- requests to the client: `ask_sampling`, `ask_elicitation`, `ask_roots` (each listed only to clients that declared
  the capability, as server-everything does); `notifications/roots/list_changed` makes it re-ask `roots/list` and
  count the change (`roots_changes`).
- prompts (`greet`, with an argument), resources (a static `readme`, a template `item/{id}`), subscriptions
  (`touch` sends `notifications/resources/updated` for a subscribed URI), `links` returns `resource_link`s.
- tool fields: `rich` carries title, icons, annotations, outputSchema, execution and `_meta`; `tasks_only`
  runs only as a task (`taskSupport: required`).
- state: `count` increments a counter kept per upstream session (per process on stdio, per `Mcp-Session-Id` over
  HTTP) and says the process id, for shared vs per-session scope.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

__all__ = ["LEVELS", "RICH_META", "build", "main"]

LEVELS: list[types.LoggingLevel] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
RICH_META = {"features/kind": "rich", "features/version": 2}
ICON = types.Icon(src="data:image/png;base64,iVBORw0KGgo=", mime_type="image/png", sizes=["16x16"])

Ctx = ServerRequestContext[Any]
Tool = Callable[[Ctx, dict[str, Any]], Awaitable[types.CallToolResult]]


def _text(text: str, **extra: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], **extra)


def _schema(**properties: str) -> dict[str, Any]:
    return {"type": "object", "properties": {k: {"type": v} for k, v in properties.items()}}


class Features:
    """One server's state: its name, the log level set by the client, counters, subscriptions."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.level: types.LoggingLevel = "debug"
        self.level_meta: list[str] = []
        self.counts: dict[str, int] = {}
        self.cancelled_calls = 0
        self.started_waits = 0
        self.roots_changes = 0
        self.last_roots: list[str] = []
        self.subscribed: set[str] = set()
        self.tasks: anyio.abc.TaskGroup | None = None

    @property
    def readme(self) -> str:
        return f"features://{self.name}/readme"

    # -- tools ------------------------------------------------------------------------------------------------

    def tools_for(self, caps: types.ClientCapabilities | None) -> list[types.Tool]:
        tools = [
            types.Tool(name="echo", description=f"Echo a text back ({self.name}).",
                       input_schema=_schema(text="string")),
            types.Tool(name="slow_count", description="Count to steps, one step per delay seconds, with progress.",
                       input_schema=_schema(steps="integer", delay="number", pad="integer")),
            types.Tool(name="wait_forever", description="Run until cancelled.", input_schema=_schema()),
            types.Tool(name="cancelled", description="How many wait_forever calls started, how many were cancelled.",
                       input_schema=_schema()),
            types.Tool(name="log", description="Send a log message at a level during the call.",
                       input_schema=_schema(level="string", message="string")),
            types.Tool(name="level", description="The log level set, and the _meta keys its setLevel carried.",
                       input_schema=_schema()),
            types.Tool(name="log_later", description="Send a log message after the call returned.",
                       input_schema=_schema(message="string", delay="number")),
            types.Tool(name="roots_changes", description="Roots list changes heard, and the last roots.",
                       input_schema=_schema()),
            types.Tool(name="links", description="Return resource links to this server's resources (or to `uri`).",
                       input_schema=_schema(count="integer", uri="string")),
            types.Tool(name="touch", description="Announce an update of a resource URI to its subscribers.",
                       input_schema=_schema(uri="string")),
            types.Tool(name="count", description="Increment this session's counter.", input_schema=_schema()),
            types.Tool(
                name="rich",
                title="A rich tool",
                description="A tool with every optional field set.",
                input_schema=_schema(x="integer"),
                output_schema={"type": "object", "properties": {"doubled": {"type": "integer"}},
                               "required": ["doubled"]},
                icons=[ICON],
                annotations=types.ToolAnnotations(title="Rich", read_only_hint=True, idempotent_hint=True),
                execution=types.ToolExecution(task_support="forbidden"),
                _meta=RICH_META,
            ),
            types.Tool(name="tasks_only", description="A long job that runs only as a task.",
                       input_schema=_schema(), execution=types.ToolExecution(task_support="required")),
        ]
        # Shown only to clients that can answer, like server-everything's conditional tools.
        if caps is not None and caps.sampling is not None:
            tools.append(types.Tool(name="ask_sampling", description="Ask the client's model to complete a prompt.",
                                    input_schema=_schema(prompt="string")))
        if caps is not None and caps.elicitation is not None:
            tools.append(types.Tool(name="ask_elicitation", description="Ask the user for a name.",
                                    input_schema=_schema(message="string")))
        if caps is not None and caps.roots is not None:
            tools.append(types.Tool(name="ask_roots", description="List the client's roots.", input_schema=_schema()))
        return tools

    async def list_tools(self, ctx: Ctx, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools_for(ctx.session.client_capabilities))

    async def call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        offered = {tool.name for tool in self.tools_for(ctx.session.client_capabilities)}
        if params.name not in offered:
            return _text(f"no tool {params.name}", is_error=True)
        tool: Tool = getattr(self, "tool_" + params.name)
        return await tool(ctx, params.arguments or {})

    async def tool_echo(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return _text(str(args.get("text", "")))

    async def tool_slow_count(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        steps, delay, pad = int(args.get("steps", 3)), float(args.get("delay", 0.0)), int(args.get("pad", 0))
        for step in range(1, steps + 1):
            await anyio.sleep(delay)
            message = f"step {step} of {steps}" + "x" * pad
            await ctx.session.report_progress(step, steps, message)  # no-op without a token
        return _text(f"counted to {steps}")

    async def tool_wait_forever(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        self.started_waits += 1
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled_calls += 1
            raise
        raise AssertionError("unreachable")

    async def tool_cancelled(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return _text(f"{self.cancelled_calls} cancelled of {self.started_waits} started")

    async def tool_log(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        level = args.get("level", "info")
        sent = await self._log(ctx, level, args.get("message", ""), related=True)
        return _text("sent" if sent else "below the level")

    async def tool_log_later(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        assert self.tasks is not None
        session, message, delay = ctx.session, args.get("message", ""), float(args.get("delay", 0.2))

        async def later() -> None:
            await anyio.sleep(delay)
            await self._log_on(session, "info", message, related_request_id=None)

        self.tasks.start_soon(later)
        return _text("scheduled")

    async def _log(self, ctx: Ctx, level: types.LoggingLevel, message: str, *, related: bool) -> bool:
        return await self._log_on(ctx.session, level, message, related_request_id=ctx.request_id if related else None)

    async def _log_on(self, session: Any, level: types.LoggingLevel, message: str,
                      related_request_id: types.RequestId | None) -> bool:
        if LEVELS.index(level) < LEVELS.index(self.level):
            return False
        # send_notification, not the deprecated send_log_message: this module also runs inside pytest.
        note = types.LoggingMessageNotification(params=types.LoggingMessageNotificationParams(
            level=level, data={"message": message, "server": self.name}, logger="features"))
        await session.send_notification(note, related_request_id)
        return True

    async def tool_level(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return _text(f"{self.level} meta={','.join(self.level_meta)}")

    async def tool_roots_changes(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return _text(f"{self.roots_changes} {' '.join(self.last_roots)}".strip())

    async def tool_links(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        if "uri" in args:  # any URI at all: how a server can name resources it does not serve
            link = types.ResourceLink(uri=str(args["uri"]), name="named", mime_type="text/plain")
            return types.CallToolResult(content=[types.TextContent(text="1 link"), link])
        count = int(args.get("count", 2))
        links: list[types.ContentBlock] = [
            types.ResourceLink(uri=f"features://{self.name}/item/{i}", name=f"item {i}", mime_type="text/plain")
            for i in range(1, count + 1)
        ]
        # A URI under a scheme of its own that no list names: only this result says who serves it.
        links.append(types.ResourceLink(uri=f"hidden-{self.name}://secret", name="hidden", mime_type="text/plain"))
        return types.CallToolResult(content=[types.TextContent(text=f"{count} links"), *links])

    async def tool_touch(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        uri = str(args.get("uri"))
        if uri not in self.subscribed:
            return _text("not subscribed")
        await ctx.session.send_resource_updated(uri)
        return _text("announced")

    async def tool_count(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        key = ctx.request.headers.get("mcp-session-id", "") if ctx.request is not None else ""
        self.counts[key] = self.counts.get(key, 0) + 1
        return _text(f"{self.counts[key]} pid={os.getpid()}")

    async def tool_rich(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        doubled = int(args.get("x", 0)) * 2
        return _text(f'{{"doubled": {doubled}}}', structured_content={"doubled": doubled})

    async def tool_ask_sampling(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(text=str(args.get("prompt"))))],
            max_tokens=50))
        result = await ctx.session.send_request(request, types.CreateMessageResult, metadata=self._related(ctx))
        text = result.content.text if isinstance(result.content, types.TextContent) else "?"
        return _text(f"sampled: {text} (model {result.model})")

    async def tool_ask_elicitation(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        result = await ctx.session.elicit_form(str(args.get("message", "Your name?")), schema, ctx.request_id)
        return _text(f"elicited: {result.action} {(result.content or {}).get('name')}")

    async def tool_ask_roots(self, ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        result = await ctx.session.send_request(types.ListRootsRequest(), types.ListRootsResult,
                                                metadata=self._related(ctx))
        return _text("roots: " + " ".join(str(root.uri) for root in result.roots))

    @staticmethod
    def _related(ctx: Ctx) -> ServerMessageMetadata:
        return ServerMessageMetadata(related_request_id=ctx.request_id)

    # -- logging and roots ------------------------------------------------------------------------------------

    async def set_level(self, ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        self.level = params.level
        self.level_meta = sorted((params.meta or {}).keys())
        return types.EmptyResult()

    async def roots_changed(self, ctx: Ctx, params: Any) -> None:
        self.roots_changes += 1
        assert self.tasks is not None
        session = ctx.session

        async def relist() -> None:  # as server-filesystem does: ask again, outside any call
            try:
                result = await session.send_request(types.ListRootsRequest(), types.ListRootsResult)
            except MCPError as exc:
                self.last_roots = [f"error: {exc.error.message}"]
                return
            self.last_roots = [str(root.uri) for root in result.roots]

        self.tasks.start_soon(relist)

    # -- prompts ----------------------------------------------------------------------------------------------

    async def list_prompts(self, ctx: Ctx, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[
            types.Prompt(name="greet", title="Greeting", description=f"Greet someone ({self.name}).",
                         arguments=[types.PromptArgument(name="who", required=True)]),
            types.Prompt(name="secret_prompt", description="A prompt a config may exclude."),
        ])

    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name == "greet":
            who = (params.arguments or {}).get("who", "nobody")
            return types.GetPromptResult(description="A greeting", messages=[
                types.PromptMessage(role="user", content=types.TextContent(text=f"Hello {who} from {self.name}"))])
        if params.name == "secret_prompt":
            return types.GetPromptResult(messages=[
                types.PromptMessage(role="user", content=types.TextContent(text="secret"))])
        raise ValueError(f"no prompt {params.name}")

    async def complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        if isinstance(params.ref, types.PromptReference) and params.ref.name == "greet":
            options = ["Ada", "Alan", "Grace"]
        elif isinstance(params.ref, types.ResourceTemplateReference):
            options = ["1", "2", "12"]
        else:
            options = []
        prefix = params.argument.value
        return types.CompleteResult(completion=types.Completion(values=[o for o in options if o.startswith(prefix)]))

    # -- resources --------------------------------------------------------------------------------------------

    async def list_resources(self, ctx: Ctx, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=self.readme, name="readme", title=f"{self.name} readme", mime_type="text/plain"),
            types.Resource(uri=f"features://{self.name}/secret", name="secret_resource", mime_type="text/plain"),
        ])

    async def list_templates(self, ctx: Ctx, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=f"features://{self.name}/item/{{id}}", name="item",
                                   mime_type="text/plain")])

    async def read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        prefix = f"features://{self.name}/"
        if uri == self.readme:
            text = f"{self.name} reads me"
        elif uri.startswith(prefix + "item/"):
            text = f"{self.name} item {uri.rsplit('/', 1)[1]}"
        elif uri == prefix + "secret" or uri == f"hidden-{self.name}://secret":
            text = f"{self.name} secret"
        else:
            raise ValueError(f"no resource {uri}")
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text,
                                                                              mime_type="text/plain")])

    async def subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self.subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self.subscribed.discard(str(params.uri))
        return types.EmptyResult()


def build(name: str = "feat") -> Server[Any]:
    features = Features(name)

    @asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as tg:
            features.tasks = tg
            yield {}
            tg.cancel_scope.cancel()

    server: Server[Any] = Server(
        name, version="1.0", instructions=f"The {name} features server.", lifespan=lifespan,
        on_list_tools=features.list_tools, on_call_tool=features.call_tool,
        on_list_prompts=features.list_prompts, on_get_prompt=features.get_prompt,
        on_list_resources=features.list_resources, on_list_resource_templates=features.list_templates,
        on_read_resource=features.read_resource, on_subscribe_resource=features.subscribe,
        on_unsubscribe_resource=features.unsubscribe, on_completion=features.complete,
    )
    # Registered after construction: the constructor warns (MCPDeprecationWarning) for these 2026-deprecated ones.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, features.set_level)
    server.add_notification_handler("notifications/roots/list_changed", types.NotificationParams,
                                    features.roots_changed)
    return server


async def _serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        options = server.create_initialization_options(
            NotificationOptions(tools_changed=True, prompts_changed=True, resources_changed=True))
        await server.run(read_stream, write_stream, options)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="feat")
    args = parser.parse_args(argv)
    anyio.run(partial(_serve_stdio, build(args.name)))


if __name__ == "__main__":
    main()
