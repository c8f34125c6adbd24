"""Gateway benchmarks: start-up with many stdio upstreams (concurrent vs one by one), and per-call overhead.

`python benchmarks/gateway.py serve` is the upstream they start: a low-level SDK server with one `echo`
tool, optionally working `--work-ms` before answering, so the figures measure lazytools, not a real server.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

__all__ = ["gateway_benchmarks", "main"]

_ECHO = types.Tool(name="echo", description="Echo a text back.",
                   input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})


def _upstream_entry(name: str, work_ms: float = 0.0) -> dict[str, Any]:
    # Run by path, not `-m benchmarks.gateway`: that would import all of lazytools (numpy, search) in every
    # upstream and measure our import time instead of an ordinary SDK server's start. (Run by path, benchmarks/
    # is the first import folder, so no module there may share a standard library name: http.py broke this.)
    args = [str(Path(__file__).resolve()), "serve", "--name", name, "--work-ms", str(work_ms)]
    return {"command": sys.executable, "args": args}


async def _startup(servers: int, *, one_by_one: bool) -> float:
    from lazytools.catalog import Catalog
    from lazytools.settings import Settings
    from lazytools.sources.gateway.config import parse_config
    from lazytools.sources.gateway.gateway import open_gateway

    config = parse_config({"mcpServers": {f"s{i}": _upstream_entry(f"s{i}") for i in range(servers)}}, environ={})
    catalog = Catalog()
    started = time.perf_counter()
    async with open_gateway(Settings(_env_file=None), catalog, config=config,  # type: ignore[call-arg]
                            one_by_one=one_by_one) as gateway:
        elapsed = time.perf_counter() - started
        if len(gateway.serving) != servers:
            raise RuntimeError(f"only {len(gateway.serving)} of {servers} upstreams started")
    return elapsed


async def _interleaved(paths: dict[str, Callable[[], Awaitable[types.CallToolResult]]],
                       calls: int) -> dict[str, list[float]]:
    """Latency samples per path, the paths taking turns call by call so that load on the machine (other
    processes come and go) weighs on all of them alike."""
    for call in paths.values():
        for _ in range(max(calls // 10, 5)):  # warm up: first calls fill caches and compile validators
            await call()
    samples: dict[str, list[float]] = {label: [] for label in paths}
    for _ in range(calls):
        for label, call in paths.items():
            started = time.perf_counter()
            result = await call()
            samples[label].append(time.perf_counter() - started)
            if result.is_error:
                raise RuntimeError(f"benchmark call via {label} failed: {result.content}")
    return samples


async def _call_overhead(calls: int, work_ms: float) -> dict[str, list[float]]:
    """The same echo call made four ways, interleaved."""
    from contextlib import AsyncExitStack

    from mcp import Client, StdioServerParameters

    from lazytools.app import open_server
    from lazytools.settings import Settings

    from . import LAZYTOOLS  # here: this file also runs by path, as the upstream, with no package around it

    args = {"text": "hello"}
    entry = _upstream_entry("up", work_ms)
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"up": entry}}))
        settings = Settings(_env_file=None, config=config)  # type: ignore[call-arg]
        # The real deployment: the client starts lazytools over stdio, lazytools starts the upstream over stdio.
        lazytools = StdioServerParameters(command=LAZYTOOLS[0], args=[*LAZYTOOLS[1:], "--config", str(config),
                                                                        "--log-level", "WARNING"], cwd=folder)
        async with AsyncExitStack() as stack:
            direct = await stack.enter_async_context(Client(
                StdioServerParameters(command=entry["command"], args=entry["args"]), mode="legacy", cache=None))
            server = await stack.enter_async_context(open_server(settings))
            in_memory = await stack.enter_async_context(Client(server, mode="legacy", cache=None))
            over_stdio = await stack.enter_async_context(Client(lazytools, mode="legacy", cache=None))
            for client in (in_memory, over_stdio):
                await client.call_tool("search_tools", {"tool_names": ["up__echo"]})
            upstream_call = server.catalog.get("up__echo").call
            return await _interleaved({
                "direct": lambda: direct.call_tool("echo", args),
                "gateway library": lambda: upstream_call(args),
                "lazytools in memory": lambda: in_memory.call_tool("up__echo", args),
                "lazytools over stdio": lambda: over_stdio.call_tool("up__echo", args),
            }, calls)


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:7.2f} ms"


async def gateway_benchmarks(quick: bool = False) -> str:
    """Run the gateway benchmarks and return their figures as text."""
    servers, rounds, calls = 10, (1 if quick else 3), (100 if quick else 500)
    lines = [f"Gateway start-up, {servers} stdio upstreams (Python SDK servers; median of {rounds}):"]
    for label, one_by_one in (("concurrent", False), ("one by one", True)):
        times = [await _startup(servers, one_by_one=one_by_one) for _ in range(rounds)]
        lines.append(f"  {label:<12} {statistics.median(times):6.2f} s")
    for work_ms in (0.0, 5.0):
        samples = await _call_overhead(calls, work_ms)
        base = statistics.median(samples["direct"])
        lines.append(f"Per-call latency, upstream tool working {work_ms:g} ms (median of {calls} calls):")
        for label, times in samples.items():
            ratio = statistics.median(times) / base
            lines.append(f"  {label:<22} {_ms(times)}  {ratio:4.2f}x direct")
    return "\n".join(lines)


# -- the upstream -----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="benchmarks/gateway.py")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the benchmark upstream over stdio")
    serve.add_argument("--name", default="bench")
    serve.add_argument("--work-ms", type=float, default=0.0)
    commands.add_parser("run", help="run the benchmarks").add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "serve":
        anyio.run(_serve, args.name, args.work_ms)
    else:
        print(anyio.run(gateway_benchmarks, args.quick))


async def _serve(name: str, work_ms: float) -> None:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_ECHO])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if work_ms:
            await anyio.sleep(work_ms / 1000)
        return types.CallToolResult(content=[types.TextContent(text=str((params.arguments or {}).get("text")))])

    server: Server[Any] = Server(name, on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    main()
