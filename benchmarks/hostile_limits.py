"""Times behind the limits of issue #12 items 6 and 9: argument validation and reading big upstream results.

    python -m benchmarks.hostile_limits [--quick]

1. `uniqueItems` on N objects: lazytools' validation against jsonschema's own (pairwise, quadratic; run on fewer
   items so that it ends).
2. A catastrophic `pattern` (`^(a|aa)+$` on 40 a's and a "!"): how long until lazytools refuses the call.
3. A 1.3M-item array validated in a session while another session pings (in-process server, real Clients):
   ping max while the validation runs.
4. One 40 MB line from an upstream: the SDK's reader (`(buffer + chunk).split("\\n")` per 64 KiB chunk) against
   lazytools' `LineReader`, and the whole call through the gateway to a real stdio upstream.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from lazytools import Catalog, FunctionGroup, Group, Settings, ToolArgumentsError, build_server
from lazytools.sources.gateway.gateway import open_gateway
from lazytools.sources.gateway.stdio import LineReader
from lazytools.validation import Limits, validate_arguments

HOSTILE = Path(__file__).resolve().parent.parent / "tests" / "upstreams" / "hostile.py"


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def unique_items(quick: bool) -> list[str]:
    schema = {"type": "object", "properties": {"items": {"type": "array", "uniqueItems": True}}}
    lines = []
    for n in (8_000, 80_000):
        items = {"items": [{"k": i, "v": [i]} for i in range(n)]}
        took = timed(lambda: validate_arguments("t", schema, items))
        lines.append(f"uniqueItems, {n:,} objects, lazytools: {took:.3f} s")
    n = 1_000 if quick else 2_000
    items = {"items": [{"k": i, "v": [i]} for i in range(n)]}
    old = timed(lambda: list(Draft202012Validator(schema).iter_errors(items)))
    lines.append(f"uniqueItems, {n:,} objects, jsonschema's own: {old:.3f} s (quadratic: x{(8_000 / n) ** 2:.0f} "
                 f"for 8,000, about {old * (8_000 / n) ** 2:.0f} s)")
    return lines


def catastrophic_pattern() -> list[str]:
    schema = {"type": "object", "properties": {"text": {"type": "string", "pattern": "^(a|aa)+$"}}}
    start = time.perf_counter()
    try:
        validate_arguments("t", schema, {"text": "a" * 40 + "!"}, Limits(timeout=5, max_bytes=4096))
        outcome = "accepted"
    except ToolArgumentsError as exc:
        outcome = "refused (" + str(exc).split(": ", 1)[1][:60] + "…)"
    return [f"pattern ^(a|aa)+$ on 40 a's + '!': {outcome} after "
            f"{time.perf_counter() - start:.2f} s"]


async def big_array_with_ping() -> list[str]:
    group = FunctionGroup("bench")

    @group.tool
    def count_items(items: list[int]) -> int:
        """Count items."""
        return len(items)

    catalog = Catalog()
    catalog.set_group(Group("bench", ""), group.entries)
    server = build_server(catalog, Settings(_env_file=None, mode="proxy"))  # type: ignore[call-arg]
    pings: list[float] = []
    outcome: list[str] = []
    done = anyio.Event()
    async with Client(server, mode="legacy") as attacker, Client(server, mode="legacy") as other:

        async def attack() -> None:
            start = time.perf_counter()
            result = await attacker.call_tool("invoke_tool", {"tool_name": "count_items",
                                                              "arguments": {"items": [1] * 1_300_000}})
            pings.append(-(time.perf_counter() - start))  # negative: the attack's own duration
            text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
            outcome.append(f"refused ({text[:90]}…)" if result.is_error else f"answered {text}")
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(attack)
            while not done.is_set():
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await other.send_ping()
                pings.append(time.perf_counter() - start)
                await anyio.sleep(0.02)
    attack_time = -min(pings)
    answered = [p for p in pings if p >= 0]
    return [f"1.3M-item array call (in-process, in-memory clients): {outcome[0]} after {attack_time:.2f} s; "
            f"meanwhile {len(answered)} "
            f"pings from another session, p50 {statistics.median(answered) * 1000:.1f} ms, "
            f"max {max(answered) * 1000:.1f} ms"]


def line_readers(size: int) -> list[str]:
    line = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"' + b"x" * size + b'"}]}}\n'
    chunks = [line[i:i + 65536] for i in range(0, len(line), 65536)]

    def sdk() -> None:
        buffer = ""
        for chunk in chunks:
            lines = (buffer + chunk.decode()).split("\n")
            buffer = lines.pop()

    def ours() -> None:
        reader = LineReader(2 * size)
        for chunk in chunks:
            reader.feed(chunk)

    return [f"one {size / 1e6:.0f} MB line in 64 KiB chunks: the SDK's reader {timed(sdk):.2f} s, "
            f"lazytools' LineReader {timed(ours):.3f} s"]


async def through_gateway(size: int, max_result_bytes: int) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"h": {"command": sys.executable, "args": [str(HOSTILE)],
                                                           "timeout": 120}}}))
        settings = Settings(_env_file=None, config=config, max_result_bytes=max_result_bytes)  # type: ignore[call-arg]
        catalog = Catalog()
        async with open_gateway(settings, catalog):
            server = build_server(catalog, settings)
            start = time.perf_counter()
            result = await server.handle_call(None, "invoke_tool", {"tool_name": "h__big",
                                                                    "arguments": {"size": size}})
            took = time.perf_counter() - start
    text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
    what = "error: " + text[:90] if result.is_error else f"{len(text) / 1e6:.1f} MB of text ({text[-60:]!r})"
    return (f"{size / 1e6:.0f} MB upstream result through the gateway, LAZYTOOLS_MAX_RESULT_BYTES="
            f"{max_result_bytes:,}: {took:.2f} s, {what}")


async def main_async(quick: bool) -> None:
    for line in unique_items(quick):
        print(line, flush=True)
    for line in catastrophic_pattern():
        print(line, flush=True)
    for line in await big_array_with_ping():
        print(line, flush=True)
    for line in line_readers(10_000_000 if quick else 40_000_000):
        print(line, flush=True)
    size = 10_000_000 if quick else 40_000_000
    print(await through_gateway(size, 4 * 1024 * 1024), flush=True)
    print(await through_gateway(size, 64 * 1024 * 1024), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    anyio.run(main_async, parser.parse_args().quick)


if __name__ == "__main__":
    main()
