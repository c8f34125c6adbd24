"""Per-call cost of the gateway: a no-op `tools/call` to a raw stdio upstream, made directly and through lazytools'
`invoke_tool` over stdio (the real deployment: the client starts lazytools, lazytools starts the upstream).

The two paths take turns call by call, in several rounds; the figure is the median of the rounds' medians, so
load on the machine that comes and goes weighs on both alike. FastMCP's `create_proxy` joins the comparison when
`fastmcp` is installed (it is not a dependency of lazytools).

    python -m benchmarks.percall [--rounds 5] [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

from .gateway import _interleaved, _upstream_entry

__all__ = ["main", "per_call"]

Call = Callable[[], Awaitable[types.CallToolResult]]


async def _fastmcp_path(stack: AsyncExitStack, entry: dict[str, Any], args: dict[str, Any]) -> Call | None:
    try:
        from fastmcp import Client as FastClient  # type: ignore[import-not-found]
        from fastmcp.server import create_proxy  # type: ignore[import-not-found]
    except ImportError:
        return None
    proxy = create_proxy({"mcpServers": {"up": entry}})
    client = await stack.enter_async_context(FastClient(proxy))

    async def call() -> types.CallToolResult:
        result = await client.call_tool_mcp("echo", args)
        return types.CallToolResult.model_validate(result.model_dump())

    return call


async def per_call(rounds: int, calls: int) -> dict[str, list[float]]:
    """Each path's median latency (seconds) in each round."""
    from mcp import Client, StdioServerParameters

    args = {"text": "hello"}
    entry = _upstream_entry("up")
    medians: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"up": entry}}))
        lazytools = StdioServerParameters(command=sys.executable, args=["-m", "lazytools", "--config", str(config),
                                                                        "--log-level", "WARNING"], cwd=folder)
        async with AsyncExitStack() as stack:
            direct = await stack.enter_async_context(Client(
                StdioServerParameters(command=entry["command"], args=entry["args"]), mode="legacy", cache=None))
            gateway = await stack.enter_async_context(Client(lazytools, mode="legacy", cache=None))
            paths: dict[str, Call] = {
                "direct": lambda: direct.call_tool("echo", args),
                "lazytools invoke_tool": lambda: gateway.call_tool(
                    "invoke_tool", {"tool_name": "up__echo", "arguments": args}),
            }
            fast = await _fastmcp_path(stack, entry, args)
            if fast is not None:
                paths["fastmcp create_proxy"] = fast
            for _ in range(rounds):
                for label, samples in (await _interleaved(paths, calls)).items():
                    medians.setdefault(label, []).append(statistics.median(samples))
    return medians


def report(medians: dict[str, list[float]]) -> str:
    base = statistics.median(medians["direct"])
    lines = [f"Per-call latency, no-op tool on a stdio upstream (median of {len(medians['direct'])} interleaved "
             "rounds' medians):"]
    for label, values in medians.items():
        value = statistics.median(values)
        lines.append(f"  {label:<24} {value * 1000:6.2f} ms  {(value - base) * 1000:+6.2f} ms over direct")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.percall")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args(argv)
    print(report(anyio.run(per_call, args.rounds, args.calls)))


if __name__ == "__main__":
    main()
