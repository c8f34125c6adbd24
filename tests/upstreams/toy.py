"""A small real MCP server for the gateway tests. Flags choose its name, its tools and how it misbehaves.

    python -m tests.upstreams.toy --name alpha [--tools echo,add] [--instructions TEXT] [--description TEXT]
                                  [--require-file PATH] [--hang-on-start] [--exit-after-list] [--modern-only]

`build(...)` gives the same server in-process (the HTTP tests serve it with uvicorn).
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.message import SessionMessage

__all__ = ["ALL_TOOLS", "LONG_NAME", "WEIRD_NAME", "build", "main"]

LONG_NAME = "a_really_long_tool_name_that_goes_on_and_on_well_past_the_sixty_four_character_limit"
WEIRD_NAME = "weird name/with:chars"
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n toy").decode()

Handler = Callable[[ServerRequestContext[Any], dict[str, Any]], Awaitable[types.CallToolResult]]


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)])


def _schema(**properties: str) -> dict[str, Any]:
    return {"type": "object", "properties": {k: {"type": v} for k, v in properties.items()},
            "required": list(properties)}


class Toy:
    """One toy server's state: its name and the tools it offers right now."""

    def __init__(self, name: str, tools: list[str] | None, *, exit_after_list: bool = False) -> None:
        self.name = name
        self.offered = [t for t in (tools or ALL_TOOLS) if t != "extra"]
        self.exit_after_list = exit_after_list
        self.bus = InMemorySubscriptionBus()
        """Where 2026-07-28 clients hear of changes (their `subscriptions/listen` streams)."""

    def tool(self, name: str) -> types.Tool:
        description, schema, _ = _TOOLS[name]
        output = {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}
        return types.Tool(name=name, description=description.format(server=self.name), input_schema=schema,
                          output_schema=output if name == "add" else None,
                          annotations=types.ToolAnnotations(destructive_hint=True) if name == "delete_everything"
                          else None)

    async def list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        if self.exit_after_list:  # die just after this answer has gone out: a server that crashes soon after start
            threading.Timer(0.3, os._exit, (4,)).start()
        return types.ListToolsResult(tools=[self.tool(name) for name in self.offered])

    async def call_tool(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        if params.name not in self.offered:
            return types.CallToolResult(content=[types.TextContent(text=f"no tool {params.name}")], is_error=True)
        return await _TOOLS[params.name][2](self, ctx, params.arguments or {})

    # -- the tools --------------------------------------------------------------------------------------------

    async def echo(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        return _text(str(args.get("text", "")))

    async def add(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        total = args["a"] + args["b"]
        return types.CallToolResult(content=[types.TextContent(text=f'{{"sum": {total}}}')],
                                    structured_content={"sum": total})

    async def fail(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=f"failed: {args.get('message')}")],
                                    structured_content={"reason": args.get("message")}, is_error=True)

    async def mixed(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(text=f"from {self.name}"),
                     types.ImageContent(data=PIXEL, mime_type="image/png"),
                     types.EmbeddedResource(resource=types.TextResourceContents(uri=f"toy://{self.name}/note",
                                                                                text="a note"))],
            _meta={"toy/server": self.name},
        )

    async def read_file(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        return _text(f"{self.name} read {args.get('path')}")

    async def whoami(self, ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
        header = ctx.request.headers.get("x-toy-token") if ctx.request is not None else None
        return _text(f"{self.name} token={header} secret={os.environ.get('TOY_SECRET')} cwd={Path.cwd().name}")

    async def pid(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        return _text(str(os.getpid()))

    async def crash(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        sys.stderr.write(f"toy {self.name}: crashing on purpose\n")
        os._exit(3)

    async def hang(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def grow(self, ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
        if "extra" not in self.offered:
            self.offered.append("extra")
        await self.announce(ctx)
        return _text("grown")

    async def shrink(self, ctx: ServerRequestContext[Any], args: dict[str, Any]) -> types.CallToolResult:
        if args["tool"] in self.offered:
            self.offered.remove(args["tool"])
        await self.announce(ctx)
        return _text("shrunk")

    async def announce(self, ctx: ServerRequestContext[Any]) -> None:
        await ctx.session.send_tool_list_changed()  # handshake era (dropped in the 2026 era)
        await self.bus.publish(ToolsListChanged())  # 2026-07-28 listen streams

    async def extra(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        return _text(str(args["x"] + 1))

    async def delete_everything(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        return _text("deleted everything")

    async def plain(self, ctx: Any, args: dict[str, Any]) -> types.CallToolResult:
        return _text(f"{self.name} plain")


_TOOLS: dict[str, tuple[str, dict[str, Any], Callable[..., Awaitable[types.CallToolResult]]]] = {
    "echo": ("Echo a text back unchanged ({server}).", _schema(text="string"), Toy.echo),
    "add": ("Add two numbers and return their sum.", _schema(a="number", b="number"), Toy.add),
    "fail": ("Always fails with the given message.", _schema(message="string"), Toy.fail),
    "mixed": ("Return text, an image and an embedded resource.", _schema(), Toy.mixed),
    "read_file": ("Read a file from the {server} store.", _schema(path="string"), Toy.read_file),
    "whoami": ("Say which server answers, with its token and secret.", _schema(), Toy.whoami),
    "pid": ("Say the server's process id.", _schema(), Toy.pid),
    "crash": ("Exit the server process at once.", _schema(), Toy.crash),
    "hang": ("Never answer.", _schema(), Toy.hang),
    "grow": ("Add the extra tool and announce the change.", _schema(), Toy.grow),
    "shrink": ("Remove a tool and announce the change.", _schema(tool="string"), Toy.shrink),
    "extra": ("Increment an integer (appears after grow).", _schema(x="integer"), Toy.extra),
    "delete_everything": ("Delete every record in the store.", _schema(), Toy.delete_everything),
    WEIRD_NAME: ("A tool whose name has spaces and punctuation.", _schema(), Toy.plain),
    LONG_NAME: ("A tool whose name is longer than most clients accept.", _schema(), Toy.plain),
}
ALL_TOOLS = list(_TOOLS)


def build(name: str, *, tools: list[str] | None = None, instructions: str | None = None,
          description: str | None = None, exit_after_list: bool = False) -> Server[Any]:
    toy = Toy(name, tools, exit_after_list=exit_after_list)
    server: Server[Any] = Server(name, version="1.0", description=description, instructions=instructions,
                                 on_list_tools=toy.list_tools, on_call_tool=toy.call_tool,
                                 on_subscriptions_listen=ListenHandler(toy.bus))
    return server


async def _serve_stdio(server: Server[Any], *, modern_only: bool = False) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as tg:
        if modern_only:
            read_stream = _refusing_initialize(tg, read_stream, write_stream)  # type: ignore[assignment]
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        await server.run(read_stream, write_stream, options)
        tg.cancel_scope.cancel()


def _refusing_initialize(tg: Any, read_stream: Any, write_stream: Any) -> Any:
    """The client's messages minus `initialize`, which is answered the way a 2026-07-28-only server would."""
    send, receive = anyio.create_memory_object_stream[Any](0)

    async def pump() -> None:
        async with send:
            async for item in read_stream:
                message = getattr(item, "message", None)
                if isinstance(message, types.JSONRPCRequest) and message.method == "initialize":
                    error = types.ErrorData(code=types.UNSUPPORTED_PROTOCOL_VERSION, message="2026-07-28 only",
                                            data={"supported": ["2026-07-28"], "requested": "handshake"})
                    await write_stream.send(SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=message.id,
                                                                              error=error)))
                    continue
                await send.send(item)

    tg.start_soon(pump)
    return receive


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="toy")
    parser.add_argument("--tools", help="comma-separated; default: all")
    parser.add_argument("--instructions")
    parser.add_argument("--description")
    parser.add_argument("--require-file", type=Path, help="exit at once unless this file exists")
    parser.add_argument("--hang-on-start", action="store_true", help="never answer initialize")
    parser.add_argument("--exit-after-list", action="store_true", help="exit soon after answering tools/list")
    parser.add_argument("--modern-only", action="store_true", help="refuse initialize: speak 2026-07-28 only")
    args = parser.parse_args(argv)
    if args.require_file is not None and not args.require_file.exists():
        sys.stderr.write(f"toy {args.name}: {args.require_file} is missing, exiting\n")
        sys.exit(1)
    if args.hang_on_start:
        time.sleep(3600)
    tools = args.tools.split(",") if args.tools else None
    server = build(args.name, tools=tools, instructions=args.instructions, description=args.description,
                   exit_after_list=args.exit_after_list)
    anyio.run(partial(_serve_stdio, server, modern_only=args.modern_only))


if __name__ == "__main__":
    main()
