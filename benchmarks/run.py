"""`python -m benchmarks`: the figures in docs/benchmarks.md, measured on this machine (not asserted in tests)."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from lazytools.app import build_server, bundled_catalog
from lazytools.catalog import Catalog, Group
from lazytools.modes import Surface
from lazytools.report import surface_cost
from lazytools.server.core import LazyServer
from lazytools.server.metatools import invoke_tool_definition, search_tools_definition
from lazytools.settings import Settings
from lazytools.state.sessions import SessionState
from lazytools.tokens import count_tokens, tokenizer_name

from . import LAZYTOOLS
from .auth import auth_benchmarks
from .gateway import gateway_benchmarks
from .http_sessions import http_benchmarks
from .http_throughput import throughput_benchmarks
from .policy import policy_benchmarks
from .search import search_benchmarks, synthetic_catalog
from .stats import percentiles

__all__ = ["main", "run_benchmarks"]

_QUERIES = ["convert a temperature", "hash a string with sha256", "parse a CSV file into JSON",
            "what time is it in Tokyo", "validate a regular expression", "list files in a directory"]


def _server(files_root: Path) -> LazyServer:
    settings = Settings(_env_file=None, files_root=files_root)  # type: ignore[call-arg]
    return build_server(bundled_catalog(files_root), settings)


def token_figures(server: LazyServer) -> str:
    lines = [f"## Tokens ({tokenizer_name()}, tools/list JSON)"]
    for surface in ("dynamic", "proxy"):
        cost = surface_cost(server, surface)
        lines.append(f"first tools/list, {surface:>7}: {cost.tokens:>6} tokens vs {cost.full_tokens} for all "
                     f"{cost.catalog_size} tools = {cost.share:.1%}")
    for label, catalog in (("bundled catalog", server.catalog), ("synthetic 1,000-tool gateway", _synthetic(1000))):
        definition = search_tools_definition(catalog, 20, 5, "dynamic")
        lines.append(f"search_tools definition with its manifest, {label} ({len(catalog)} tools, "
                     f"{len(catalog.groups)} groups): {count_tokens(_json(definition))} tokens")
    bridge = count_tokens(_json(invoke_tool_definition()))
    lines.append(f"invoke_tool bridge definition: {bridge} tokens (listed in dynamic sessions too)")
    surfaces: tuple[Surface, ...] = ("dynamic", "proxy")
    for surface in surfaces:
        state = SessionState(key="bench", surface=surface)
        sizes = [_result_tokens(server, state, query) for query in _QUERIES]
        lines.append(f"search_tools result (5 matches), {surface:>7}: mean {statistics.mean(sizes):.0f} tokens")
    return "\n".join(lines)


def _json(tool: types.Tool) -> str:
    return tool.model_dump_json(by_alias=True, exclude_none=True)


def _synthetic(size: int) -> Catalog:
    catalog = Catalog()
    entries = synthetic_catalog(size)
    for group in dict.fromkeys(entry.group for entry in entries):
        catalog.set_group(Group(group), [entry for entry in entries if entry.group == group])
    return catalog


def _result_tokens(server: LazyServer, state: SessionState, query: str) -> int:
    async def go() -> int:
        result = await server.call(state, "search_tools", {"query": query})
        return count_tokens("".join(c.text for c in result.content if isinstance(c, types.TextContent)))

    return anyio.run(go)


async def _round_trips(client: Client, names: list[str], changed: Callable[[], Awaitable[None]]) -> list[float]:
    samples = []
    for name in names:
        start = time.perf_counter()
        await client.call_tool("search_tools", {"tool_names": [name]})
        await changed()
        await client.list_tools(cache_mode="bypass")
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def round_trip_figures(files_root: Path, quick: bool) -> str:
    """search → list_changed → re-list, timed from the client, over stdio and in memory."""
    server = _server(files_root)
    names = [entry.name for entry in server.catalog][: 20 if quick else 60]
    lines = ["## search → notification → re-list round trip (client-side, ms)"]
    for label in ("stdio", "in-memory"):
        arrived = anyio.Event()
        box: dict[str, anyio.Event] = {"e": arrived}

        async def handler(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                box["e"].set()

        async def changed() -> None:
            await box["e"].wait()
            box["e"] = anyio.Event()

        target: Any = server if label == "in-memory" else StdioServerParameters(
            command=LAZYTOOLS[0], args=[*LAZYTOOLS[1:], "--log-level", "WARNING"], cwd=str(files_root),
            env={"LAZYTOOLS_FILES_ROOT": str(files_root)})
        async with Client(target, mode="legacy", message_handler=handler,
                          client_info=types.Implementation(name="Visual Studio Code", version="1")) as client:
            await client.list_tools()
            samples = await _round_trips(client, names, changed)
        p50, p99 = percentiles(samples)
        lines.append(f"{label:>9}: p50 {p50:.2f} ms, p99 {p99:.2f} ms over {len(samples)} searches")
    return "\n".join(lines)


SECTIONS: list[tuple[str, float, float]] = [
    # (name, seconds it took in a full run, in a quick run) on the shared 2-core machine, busy (load 5-9): the
    # estimate shown before and during a run
    ("tokens", 3, 3),
    ("search → notification → re-list", 4, 3),
    ("search latency", 5, 3),
    ("gateway", 70, 30),
    ("HTTP sessions", 140, 60),
    ("HTTP throughput", 35, 15),
    ("identity", 10, 5),
    ("policy", 15, 8),
]


async def run_benchmarks(quick: bool = False, progress: Callable[[str], None] | None = None) -> str:
    """Every section in turn; `progress` hears which one runs, and the estimate of what is left."""
    column = 2 if quick else 1
    left = sum(section[column] for section in SECTIONS)
    started = time.perf_counter()
    if progress:
        progress(f"{len(SECTIONS)} sections, about {_minutes(left)} on a 2-core machine")
    sections = [f"python -m benchmarks ({'quick' if quick else 'full'}), Python {sys.version.split()[0]}"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runs: list[Callable[[], Awaitable[str]]] = [
            lambda: anyio.to_thread.run_sync(token_figures, _server(root)),
            lambda: round_trip_figures(root, quick),
            lambda: anyio.to_thread.run_sync(search_benchmarks, quick),
            lambda: gateway_benchmarks(quick),
            lambda: http_benchmarks(quick),
            lambda: anyio.to_thread.run_sync(_throughput, quick),
            lambda: auth_benchmarks(quick),
            lambda: anyio.to_thread.run_sync(policy_benchmarks, quick),
        ]
        for number, (section, run) in enumerate(zip(SECTIONS, runs, strict=True), start=1):
            if progress:
                progress(f"[{number}/{len(SECTIONS)}] {section[0]} (about {_minutes(section[column])}; "
                         f"{_minutes(time.perf_counter() - started)} so far, about {_minutes(left)} left)")
            sections.append(await run())
            left -= section[column]
    if progress:
        progress(f"done in {_minutes(time.perf_counter() - started)}")
    return "\n\n".join(sections)


def _throughput(quick: bool) -> str:
    return throughput_benchmarks(seconds=2 if quick else 4, rounds=3 if quick else 5)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args(argv)
    print(anyio.run(run_benchmarks, args.quick, lambda line: print(line, file=sys.stderr, flush=True)))
    return 0
