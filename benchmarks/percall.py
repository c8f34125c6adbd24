"""Per-call cost of the gateway: a no-op `tools/call` to a raw stdio upstream, made directly, through the thinnest
proxy the MCP Python SDK allows, and through lazytools over stdio (the real deployment: the client starts the
proxy, the proxy starts the upstream).

The columns:
- `direct`: the client talks to the upstream itself.
- `bare SDK proxy`: `benchmarks/bare_proxy.py`, a low-level SDK server whose `tools/list` and `tools/call` hand the
  request to one SDK `ClientSession` on the upstream and return its answer, nothing else. It is the floor of any
  proxy built on the SDK: the extra hop's own cost (an SDK server and an SDK client session in the middle, one more
  process's pipes). lazytools minus this column is what lazytools itself adds.
- `lazytools invoke_tool`: the static surface, `invoke_tool` naming `up__echo`.
- `lazytools native`: the dynamic surface, `up__echo` called by its own name after `search_tools` enabled it (a
  second lazytools process, so that each column's CPU figure is its own).

The paths take turns call by call, in several rounds; the figure is the median of the rounds' medians, so load on
the machine that comes and goes weighs on all alike. FastMCP's `create_proxy` joins the comparison when `fastmcp`
is installed (it is not a dependency of lazytools; the report says so when it is missing), and another lazytools
source tree with `--compare-with` (a before/after comparison in one run).

    python -m benchmarks.percall [--rounds 5] [--calls 300] [--compare-with TREE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

from .gateway import _interleaved, _upstream_entry
from .http_throughput import _cpu_seconds

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


FASTMCP = "fastmcp create_proxy"
DIRECT = "direct"
BARE = "bare SDK proxy"
INVOKE = "lazytools invoke_tool"
NATIVE = "lazytools native"
BARE_PROXY = Path(__file__).resolve().with_name("bare_proxy.py")


async def per_call(rounds: int, calls: int,
                   compare_with: Path | None = None) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each path's median latency (seconds) in each round, and the CPU seconds per call of the process it talks to
    (the upstream itself for the direct path, the proxy alone for the others). `compare_with`: another lazytools
    source tree (a checkout of main, say), run as another path in the same rounds."""
    from mcp import Client, StdioServerParameters

    args = {"text": "hello"}
    entry = _upstream_entry("up")
    medians: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    pids: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"up": entry}}))
        command = [sys.executable, "-m", "lazytools", "--config", str(config), "--log-level", "WARNING"]
        lazytools = StdioServerParameters(command=command[0], args=command[1:], cwd=folder)
        servers = {DIRECT: StdioServerParameters(command=entry["command"], args=entry["args"]),
                   BARE: StdioServerParameters(command=sys.executable,
                                               args=[str(BARE_PROXY), "--", entry["command"], *entry["args"]]),
                   INVOKE: lazytools, NATIVE: lazytools}
        if compare_with is not None:
            servers[f"lazytools from {compare_with}"] = StdioServerParameters(
                command=command[0], args=command[1:], cwd=folder, env={"PYTHONPATH": str(compare_with.resolve())})
        async with AsyncExitStack() as stack:
            paths: dict[str, Call] = {}
            for label, server in servers.items():
                started = _children()
                client = await stack.enter_async_context(Client(server, mode="legacy", cache=None))
                new = _children() - started
                if len(new) == 1:
                    pids[label] = new.pop()
                if label in (DIRECT, BARE):
                    paths[label] = partial(client.call_tool, "echo", args)
                elif label == NATIVE:
                    found = await client.call_tool("search_tools", {"tool_names": ["up__echo"]})
                    if found.is_error:
                        raise RuntimeError(f"search_tools did not enable up__echo: {found.content}")
                    paths[label] = partial(client.call_tool, "up__echo", args)
                else:
                    paths[label] = partial(client.call_tool, "invoke_tool", {"tool_name": "up__echo",
                                                                             "arguments": args})
            fast = await _fastmcp_path(stack, entry, args)
            if fast is not None:
                paths[FASTMCP] = fast
            await _settled(pids)
            made = calls + max(calls // 10, 5)  # _interleaved warms up with calls // 10 of each first
            for _ in range(rounds):
                before = {label: _cpu_seconds(pid) for label, pid in pids.items()}
                for label, samples in (await _interleaved(paths, calls)).items():
                    medians.setdefault(label, []).append(statistics.median(samples))
                for label, pid in pids.items():
                    start, end = before[label], _cpu_seconds(pid)
                    if start is not None and end is not None:
                        cpu.setdefault(label, []).append((end - start) / made)
    return medians, cpu


async def _settled(pids: dict[str, int], limit: float = 60.0) -> None:
    """Wait (at most `limit` seconds) until no server is busy on its own: a lazytools just started keeps a core busy
    for some seconds after it answers (its search index, its usage history), which would count as the first
    round's calls."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = {pid: _cpu_seconds(pid) for pid in pids.values()}
        await anyio.sleep(0.5)
        busy = [pid for pid, start in before.items()
                if start is not None and (_cpu_seconds(pid) or start) - start > 0.05]
        if not busy:
            return


def _children() -> set[int]:
    """This process's child processes (Linux; empty elsewhere)."""
    found: set[int] = set()
    for children in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        found.update(int(pid) for pid in children.read_text().split())
    return found


def report(medians: dict[str, list[float]], cpu: dict[str, list[float]] | None = None) -> str:
    base = statistics.median(medians[DIRECT])
    lines = [f"Per-call latency, no-op tool on a stdio upstream (median of {len(medians[DIRECT])} interleaved "
             "rounds' medians):"]
    for label, values in medians.items():
        value = statistics.median(values)
        lines.append(f"  {label:<24} {value * 1000:6.2f} ms  {(value - base) * 1000:+6.2f} ms over direct")
    if FASTMCP not in medians:
        lines.append(f"  {FASTMCP:<24} (not run: fastmcp is not installed; it is not a dependency of lazytools)")
    if BARE in medians:
        floor = statistics.median(medians[BARE])
        lines.append("What each proxy adds over the bare SDK proxy (the floor of an SDK-built hop):")
        lines += [f"  {label:<24} {(statistics.median(values) - floor) * 1000:+6.2f} ms"
                  for label, values in medians.items() if label not in (DIRECT, BARE)]
    if cpu:
        lines.append("CPU per call of the server process each path talks to (direct: the upstream; the others: the "
                     "proxy process alone, not its upstream), median of rounds:")
        lines += [f"  {label:<24} {statistics.median(values) * 1e6:6.0f} µs" for label, values in cpu.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.percall")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--compare-with", type=Path, metavar="TREE", help="a second lazytools source tree (e.g. an "
                        "export of main) called in the same rounds")
    args = parser.parse_args(argv)
    print(report(*anyio.run(per_call, args.rounds, args.calls, args.compare_with)))


if __name__ == "__main__":
    main()
