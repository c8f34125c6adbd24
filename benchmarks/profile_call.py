"""Where a `tools/call` spends lazytools' CPU: a deterministic profile of the server process, call by call.

    python -m benchmarks.profile_call [--calls 2000] [--top 25] [--scenario NAME ...]

Each scenario starts lazytools as a child process, as users run it, inside a small wrapper that turns cProfile on
and off by signal (SIGUSR1 / SIGUSR2), so start-up and warm-up are left out. The parent warms the server up, then
makes `--calls` identical calls one after another and prints, per call: the Python function calls the server made
(a count that does not depend on the machine's load), its CPU time under the profiler (`time.process_time`, which
load affects far less than wall time; the profiler itself adds to it), and the functions that took most of it.

Scenarios:
- `upstream-stdio`: `invoke_tool` of `up__echo`, a no-op tool of a raw SDK stdio upstream, over stdio (the path
  `benchmarks.percall` times);
- `native-stdio`: `invoke_tool` of the bundled `convert_temperature` (quick: on the event loop), over stdio;
- `http-stateless`: the same call as a 2026-07-28 stateless HTTP request (the call `benchmarks.http_throughput`
  loads);
- `http-search`: stateless `search_tools` over HTTP with the throughput benchmark's fresh requests, in turn (more
  than an index keeps answers for, so each is ranked afresh).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["main", "profile_scenario"]

SCENARIOS = ("upstream-stdio", "native-stdio", "http-stateless", "http-search")
_CONVERT = {"tool_name": "convert_temperature", "arguments": {"value": 100, "from_unit": "C", "to_unit": "F"}}
_ECHO = {"tool_name": "up__echo", "arguments": {"text": "hello"}}


# -- the child: lazytools with a profiler switched by signals -------------------------------------------------------


def _serve_profiled(out: str, argv: list[str]) -> int:
    profiler = cProfile.Profile(time.process_time)

    def start(signum: int, frame: Any) -> None:
        profiler.enable()

    def stop(signum: int, frame: Any) -> None:
        profiler.disable()
        profiler.dump_stats(out + ".part")
        os.replace(out + ".part", out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    from lazytools.cli import main as lazytools_main

    return lazytools_main(argv)


# -- the parent ----------------------------------------------------------------------------------------------------


def _wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no profile written to {path}")
        time.sleep(0.05)


def _child_command(out: Path, argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "benchmarks.profile_call", "--child", str(out), "--", *argv]


async def _stdio_calls(command: list[str], cwd: Path, arguments: dict[str, Any], calls: int,
                       toggle: Callable[[int, int], None]) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(cwd))
    async with Client(params, mode="legacy", cache=None) as client:
        pid = await _pid_of(client)
        for _ in range(200):  # warm-up: imports, validators, caches
            await client.call_tool("invoke_tool", arguments)
        toggle(pid, signal.SIGUSR1)
        for _ in range(calls):
            result = await client.call_tool("invoke_tool", arguments)
            if result.is_error:
                raise RuntimeError(f"call failed: {result.content}")
        toggle(pid, signal.SIGUSR2)


async def _pid_of(client: Any) -> int:
    # The stdio child's pid is not exposed by the client: the wrapper is the only child of ours with its command.
    found = subprocess.run(["pgrep", "-P", str(os.getpid()), "-f", "benchmarks.profile_call --child"],
                           capture_output=True, text=True, check=False).stdout.split()
    if len(found) != 1:
        raise RuntimeError(f"expected one profiled child, found {found}")
    return int(found[0])


def _http_calls(command: list[str], cwd: Path, port: int, calls: int, toggle: Callable[[int, int], None],
                requests: list[dict[str, Any]]) -> None:
    """`calls` of `requests` in turn (after 200 for the warm-up)."""
    import httpx2

    from .http_throughput import _child, _headers

    with _child(command, port, cwd) as (url, pid), httpx2.Client(timeout=30) as client:
        bodies = [(json.dumps(request).encode(), _headers(request)) for request in requests]
        for number in range(200 + calls):
            if number == 200:
                toggle(pid, signal.SIGUSR1)
            body, headers = bodies[number % len(bodies)]
            answer = client.post(url, content=body, headers=headers)
            if answer.status_code != 200 or '"isError":true' in answer.text.replace(" ", ""):
                raise RuntimeError(f"call failed: {answer.status_code} {answer.text[:300]}")
        toggle(pid, signal.SIGUSR2)


def profile_scenario(scenario: str, calls: int) -> pstats.Stats:
    """The server's profile over `calls` calls of `scenario` (after a warm-up)."""
    import anyio

    from .gateway import _upstream_entry
    from .http_throughput import LAZYTOOLS_CALL, SEARCH_CALLS, _free_port

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = root / "profile.out"
        common = ["--log-level", "WARNING", "--files-root", str(root), "--cache-dir", str(root)]

        def toggle(pid: int, signum: int) -> None:
            os.kill(pid, signum)

        if scenario == "upstream-stdio":
            config = root / "mcp.json"
            config.write_text(json.dumps({"mcpServers": {"up": _upstream_entry("up")}}))
            command = _child_command(out, ["--config", str(config), *common])
            anyio.run(_stdio_calls, command, Path.cwd(), _ECHO, calls, toggle)
        elif scenario == "native-stdio":
            anyio.run(_stdio_calls, _child_command(out, common), Path.cwd(), _CONVERT, calls, toggle)
        elif scenario in ("http-stateless", "http-search"):
            port = _free_port()
            command = _child_command(out, ["--transport", "http", "--port", str(port), *common])
            requests = [LAZYTOOLS_CALL] if scenario == "http-stateless" else SEARCH_CALLS
            _http_calls(command, Path.cwd(), port, calls, toggle, requests)
        else:
            raise ValueError(f"unknown scenario {scenario!r}; one of {', '.join(SCENARIOS)}")
        _wait_for(out)
        return pstats.Stats(str(out))


def _area(filename: str) -> str:
    """Which package a function belongs to, for the summary by area."""
    parts = Path(filename).parts
    for marker in ("lazytools", "mcp", "mcp_types", "pydantic", "pydantic_core", "jsonschema", "anyio", "starlette",
                   "uvicorn", "opentelemetry", "httptools", "referencing", "sse_starlette"):
        if marker in parts:
            return marker
    return "python" if filename.startswith("~") or "python3" in filename else "other"


def report(scenario: str, stats: pstats.Stats, calls: int, top: int) -> str:
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total_calls = sum(entry[1] for entry in raw.values())
    total_time = sum(entry[2] for entry in raw.values())
    by_area: dict[str, tuple[int, float]] = {}
    for (filename, _, _), (_, ncalls, tottime, _, _) in raw.items():
        count, seconds = by_area.get(_area(filename), (0, 0.0))
        by_area[_area(filename)] = (count + ncalls, seconds + tottime)
    lines = [f"## {scenario}: {calls} calls",
             f"per call: {total_calls / calls:,.0f} Python function calls, {total_time / calls * 1e6:,.0f} µs CPU "
             "under the profiler",
             "by package (own time, per call): " + ", ".join(
                 f"{area} {count / calls:,.0f} calls {seconds / calls * 1e6:,.0f} µs"
                 for area, (count, seconds) in sorted(by_area.items(), key=lambda item: -item[1][1]))]
    for title, column in (("cumulative", 3), ("own", 2)):
        ranked = sorted(raw.items(), key=lambda item: -item[1][column])
        lines.append(f"top {top} by {title} time (per call: calls, own µs, cumulative µs):")
        for (filename, line, name), (_, ncalls, tottime, cumtime, _) in ranked[:top]:
            where = "/".join(Path(filename).parts[-2:]) if filename != "~" else ""
            lines.append(f"  {ncalls / calls:6.1f} {tottime / calls * 1e6:7.1f} {cumtime / calls * 1e6:8.1f}  "
                         f"{where}:{line}({name})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _serve_profiled(argv[1], argv[3:])
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile_call", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--scenario", action="append", choices=SCENARIOS)
    args = parser.parse_args(argv)
    for scenario in args.scenario or SCENARIOS:
        print(report(scenario, profile_scenario(scenario, args.calls), args.calls, args.top), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
