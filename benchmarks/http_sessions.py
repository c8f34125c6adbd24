"""HTTP figures for `python -m benchmarks`: idle sessions one process holds, memory per session, search latency.

The server runs in a child process (`python -m benchmarks.http_sessions --child ...`, run from the clone's root),
so its memory is its own; the parent opens sessions over real HTTP and asks the child, over stdin/stdout lines, to measure itself.
Memory is counted two ways: Python allocations (tracemalloc, in a traced child) and resident set size (in an
untraced child, because tracing costs memory too). A plain SDK server through the same transport is the baseline
for "the SDK's own" cost.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.server.lowlevel import Server

__all__ = ["http_benchmarks"]

_Measure = Callable[[], Awaitable[dict[str, float]]]
"""Asks the server child for its figures: rss, traced (bytes), sessions, cpu (seconds)."""

_QUERIES = ["convert a temperature", "hash a string with sha256", "parse a CSV file into JSON",
            "what time is it in Tokyo", "validate a regular expression", "list files in a directory",
            "encode text as base64", "compare two semantic versions", "generate a random password",
            "compute compound interest"]
_ACCEPT = {"accept": "application/json, text/event-stream"}
_CONCURRENCY = 32
"""Sessions opened at once by the parent; more only queues requests on a 2-core machine."""


# -- parent: drive the child over HTTP -------------------------------------------------------------------------


async def http_benchmarks(quick: bool) -> str:
    from .stats import percentiles

    traced, held, searches = (100, 1000, 4) if quick else (500, 3000, 20)  # 3,000: the full run within 5 min
    lines = ["## Streamable HTTP (server in a child process, clients in this one, over 127.0.0.1)"]

    sdk = await _idle_memory("sdk", traced)
    ours = await _idle_memory("lazytools", traced)
    lines.append(f"memory per idle session (initialize, tools/list, one tools/call, ping; no GET stream), Python "
                 f"allocations over {traced} sessions: plain SDK server {sdk / 1024:.1f} KiB, lazytools "
                 f"{ours / 1024:.1f} KiB = {(ours - sdk) / 1024:+.1f} KiB on top of the SDK's own")

    async with _child("lazytools", traced=False) as (url, measure):
        idle = await _idle_sessions(url, measure, held)
        lines.append(f"idle sessions held by one process: {idle['held']:.0f} ({idle['answered']:.0f} answered "
                     f"tools/list afterwards), opened in {idle['seconds']:.1f} s; RSS {idle['rss_before'] / 2**20:.0f}"
                     f" → {idle['rss_after'] / 2**20:.0f} MiB = {idle['rss_per_session'] / 1024:.1f} KiB per session")
        for clients, each in ((1, searches * 10), (50, searches)):
            latency = await _search_latency(url, clients, each, measure)
            p50, p99 = percentiles(latency.samples)
            count = len(latency.samples)
            lines.append(f"search_tools, {clients:>2} concurrent client(s) x {each} (dynamic surface, "
                         f"{idle['held']:.0f} idle sessions held): p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
                         f"{count / latency.seconds:.0f} searches/s, server CPU {latency.server_cpu / count * 1000:.1f}"
                         f" ms per search")
    return "\n".join(lines)


async def _idle_memory(kind: str, count: int) -> float:
    """Bytes of Python allocations each idle session keeps, in a traced child."""
    async with _child(kind, traced=True) as (url, measure), _http() as http:
        await _open_sessions(http, url, 10, kind)  # warm caches (schemas, index) before tracing starts
        before = await measure()
        await _open_sessions(http, url, count, kind)
        after = await measure()
    return float(after["traced"] - before["traced"]) / count


async def _idle_sessions(url: str, measure: _Measure, count: int) -> dict[str, float]:
    """Open `count` sessions and leave them idle; then check that every one still answers."""
    async with _http() as http:
        await _open_sessions(http, url, 10, "lazytools")
        before = await measure()
        start = time.perf_counter()
        ids = await _open_sessions(http, url, count, "lazytools")
        seconds = time.perf_counter() - start
        after = await measure()
        answered = sum(await _map(ids, lambda session_id: _lists(http, url, session_id)))
    return {
        "held": after["sessions"] - before["sessions"],
        "answered": answered,
        "seconds": seconds,
        "rss_before": before["rss"],
        "rss_after": after["rss"],
        "rss_per_session": (after["rss"] - before["rss"]) / count,
    }


@dataclass
class _Latency:
    samples: list[float]
    """Milliseconds per search_tools call, timed in the clients."""
    seconds: float
    """Wall time from the first search to the last."""
    server_cpu: float
    """Seconds of the server's CPU over the same span."""


async def _search_latency(url: str, clients: int, searches: int, measure: _Measure) -> _Latency:
    """`clients` real MCP clients (handshake era, dynamic surface) searching at the same time."""
    samples: list[float] = []
    ready = finished = 0
    go, done = anyio.Event(), anyio.Event()
    span: dict[str, Any] = {}

    async def one(index: int) -> None:
        nonlocal ready, finished
        info = types.Implementation(name="Visual Studio Code", version="1")
        async with Client(url, mode="legacy", client_info=info) as client:
            await client.list_tools()
            ready += 1
            if ready == clients:  # the last client to connect starts everyone: handshakes stay out of the span
                span["start"] = (time.perf_counter(), (await measure())["cpu"])
                go.set()
            await go.wait()
            for i in range(searches):
                query = _QUERIES[(index + i) % len(_QUERIES)]
                start = time.perf_counter()
                await client.call_tool("search_tools", {"query": query})
                samples.append((time.perf_counter() - start) * 1000)
            finished += 1
            if finished == clients:
                span["end"] = (time.perf_counter(), (await measure())["cpu"])
                done.set()
            await done.wait()  # nobody closes (DELETE, stream teardown) while others still search

    # A list_changed notification can reach a client on its GET stream just as the client closes; the SDK client
    # logs that as an error although nothing was lost. Quiet it while measuring.
    noisy = logging.getLogger("mcp.client.streamable_http")
    level = noisy.level
    noisy.setLevel(logging.CRITICAL)
    try:
        async with anyio.create_task_group() as tg:
            for index in range(clients):
                tg.start_soon(one, index)
    finally:
        noisy.setLevel(level)
    (t0, cpu0), (t1, cpu1) = span["start"], span["end"]
    return _Latency(samples, t1 - t0, cpu1 - cpu0)


async def _open_sessions(http: httpx2.AsyncClient, url: str, count: int, kind: str) -> list[str]:
    """Open `count` sessions the way a client does, then leave them idle (no GET stream)."""
    call = {"name": "search_tools", "arguments": {"query": "convert a temperature"}} if kind == "lazytools" \
        else {"name": "echo", "arguments": {"text": "hi"}}

    async def one(index: int) -> str:
        init = await _post(http, url, "initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "Visual Studio Code", "version": "1"}}, None)
        session_id = init.headers["mcp-session-id"]
        await _post(http, url, "notifications/initialized", None, session_id, notification=True)
        await _post(http, url, "tools/list", None, session_id)
        await _post(http, url, "tools/call", call, session_id)
        # The SDK keeps each session's last message until the next one: end on the same small one for both kinds.
        await _post(http, url, "ping", None, session_id)
        return session_id

    return await _map(list(range(count)), one)


async def _lists(http: httpx2.AsyncClient, url: str, session_id: str) -> bool:
    response = await _post(http, url, "tools/list", None, session_id)
    return response.status_code == 200 and "search_tools" in response.text


async def _post(http: httpx2.AsyncClient, url: str, method: str, params: dict[str, Any] | None,
                session_id: str | None, *, notification: bool = False) -> httpx2.Response:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if not notification:
        message["id"] = 1
    headers = {**_ACCEPT, **({"mcp-session-id": session_id} if session_id else {})}
    response = await http.post(url, json=message, headers=headers)
    response.raise_for_status()
    return response


async def _map(items: list[Any], fn: Any) -> list[Any]:
    """`fn` over `items`, at most _CONCURRENCY at a time, results in order."""
    results: list[Any] = [None] * len(items)
    limiter = anyio.Semaphore(_CONCURRENCY)

    async def run(index: int, item: Any) -> None:
        async with limiter:
            results[index] = await fn(item)

    async with anyio.create_task_group() as tg:
        for index, item in enumerate(items):
            tg.start_soon(run, index, item)
    return results


@asynccontextmanager
async def _http() -> AsyncIterator[httpx2.AsyncClient]:
    limits = httpx2.Limits(max_connections=_CONCURRENCY, max_keepalive_connections=_CONCURRENCY)
    async with httpx2.AsyncClient(limits=limits, timeout=httpx2.Timeout(60)) as http:
        yield http


@asynccontextmanager
async def _child(kind: str, *, traced: bool) -> AsyncIterator[tuple[str, _Measure]]:
    """Start a server child; yields its URL and `measure()`, which returns the child's own figures."""
    command = [sys.executable, "-m", "benchmarks.http_sessions", "--child", kind] + (["--traced"] if traced else [])
    process: Process = await anyio.open_process(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
                                                cwd=Path(__file__).resolve().parent.parent)
    async with process:
        assert process.stdin is not None and process.stdout is not None
        lines = BufferedByteReceiveStream(process.stdout)

        async def read() -> dict[str, Any]:
            with anyio.fail_after(300):
                return json.loads(await lines.receive_until(b"\n", 1 << 20))  # type: ignore[no-any-return]

        async def measure() -> dict[str, float]:
            assert process.stdin is not None
            await process.stdin.send(b"measure\n")
            return await read()

        try:
            yield str((await read())["url"]), measure
        finally:
            await process.stdin.aclose()  # EOF: the child stops serving and exits
            with anyio.fail_after(30):
                await process.wait()


# -- child: serve and measure itself ---------------------------------------------------------------------------


def _bench_server(kind: str, files_root: Path) -> Server[Any]:
    from lazytools.app import build_server, bundled_catalog

    if kind == "lazytools":
        return build_server(bundled_catalog(files_root), _child_settings(files_root))

    tools = [types.Tool(name="echo", description="Echo a text.",
                        input_schema={"type": "object", "properties": {"text": {"type": "string"}}})]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=str((params.arguments or {}).get("text")))])

    return Server("plain", on_list_tools=list_tools, on_call_tool=call_tool)


def _child_settings(files_root: Path) -> Any:
    from lazytools.settings import Settings

    return Settings(_env_file=None, files_root=files_root, session_idle_timeout=3600,  # type: ignore[call-arg]
                    max_sessions=1_000_000, log_level="WARNING")


_measuring_cpu = 0.0
"""CPU seconds the child spent in `_measure` itself (a full collection costs more the more sessions are held)."""


def _measure(server: Server[Any]) -> dict[str, float]:
    global _measuring_cpu
    start = time.process_time()
    gc.collect()
    _measuring_cpu += time.process_time() - start
    return {
        "cpu": time.process_time() - _measuring_cpu,
        "rss": _rss_bytes(),
        "traced": tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0,
        "sessions": len(getattr(server, "store", ())),
    }


def _rss_bytes() -> float:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: peak RSS is the closest portable figure
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


async def _serve_child(kind: str, traced: bool) -> None:
    from lazytools.transports.http import build_app
    from tests.helpers import running_http

    with tempfile.TemporaryDirectory() as tmp:
        server = _bench_server(kind, Path(tmp))
        async with running_http(build_app(server, _child_settings(Path(tmp)))) as base:
            _reply({"url": base + "/mcp"})
            while await anyio.to_thread.run_sync(sys.stdin.readline):
                if traced and not tracemalloc.is_tracing():
                    # Traced from the first measurement on (after warm-up): what was allocated before is not
                    # per-session, and tracing start-up as well would take minutes.
                    tracemalloc.start()
                _reply(_measure(server))


def _reply(message: dict[str, Any]) -> None:
    # The child's stdout is its channel to the parent, one JSON object per line.
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="lazytools HTTP benchmark server (started by `python -m benchmarks`)")
    parser.add_argument("--child", choices=["lazytools", "sdk"], required=True)
    parser.add_argument("--traced", action="store_true")
    options = parser.parse_args()
    anyio.run(_serve_child, options.child, options.traced)
