"""Stateless `tools/call` throughput over HTTP: a bare MCP SDK server and lazytools, side by side in one run.

    python -m benchmarks.http_throughput [--seconds 5] [--connections 16] [--threads 2] [--rounds 5]
        [--compare-with TREE [--compare-call invoke|search]]

Both servers run as child processes on 127.0.0.1 and get 2026-07-28 `tools/call` requests (no session, no
handshake) from the same load generator: `wrk` when it is installed (`apt-get install wrk`; it costs the machine far
less CPU than Python does), else a Python client with one connection per worker. The call is the one users make:

- **bare SDK**: the SDK's low-level `Server` serving one tool, `convert_temperature`: the bundled function itself
  (the same work), with the input schema lazytools lists for it (the same enums, which the SDK's 2026-07-28 path
  reads for every call) and the same dict result as text and structured content; served by
  `Server.streamable_http_app()` under `uvicorn.run` (httptools and uvloop when installed);
- **lazytools**: `lazytools --transport http` as shipped, `invoke_tool` of the bundled `convert_temperature` (marked
  quick: it runs on the event loop, as the bare server's handler does); and, on a third line, `invoke_tool` of
  `format_byte_size`, as trivial but left to a worker thread (the default for a synchronous tool).

Each round loads every server once, in an order that alternates from round to round, so a machine that gets busier
weighs on all; the ratio is taken per round and the result is the median over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from . import LAZYTOOLS

__all__ = ["main", "throughput_benchmarks"]

VERSION = "2026-07-28"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
           "mcp-protocol-version": VERSION, "mcp-method": "tools/call"}
"""What the SDK's client sends with a 2026-07-28 request (plus `mcp-name`, the tool: see `_headers`)."""
_META = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {},
         "io.modelcontextprotocol/clientInfo": {"name": "throughput", "version": "1"}}
_ARGUMENTS = {"value": 100, "from_unit": "C", "to_unit": "F"}
BARE_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
             "params": {"name": "convert_temperature", "arguments": _ARGUMENTS, "_meta": _META}}
LAZYTOOLS_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "invoke_tool", "_meta": _META,
                             "arguments": {"tool_name": "convert_temperature", "arguments": _ARGUMENTS}}}
"""convert_temperature is marked quick (examples/_common.quick): it runs on the event loop, as the bare server's
async handler does."""
THREADED_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "invoke_tool", "_meta": _META,
                            "arguments": {"tool_name": "format_byte_size", "arguments": {"num_bytes": 1536}}}}
"""format_byte_size is as trivial but not marked: it runs in a worker thread, like any synchronous tool by default."""
THREADED = "lazytools, tool in a thread"
SEARCH_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "search_tools", "_meta": _META, "arguments": {"query": "convert a temperature"}}}
"""search_tools as a 2026-07-28 client sends it: the proxy surface, each match with its input schema."""
SEARCH = "lazytools, search_tools"
TOOL_CALLED = ("convert_temperature (bundled, on the event loop) through invoke_tool; the bare server's "
               "convert_temperature: the same function, input schema and dict result")


def bundled_temperature_tool() -> tuple[str, dict[str, Any], Callable[..., dict[str, Any]]]:
    """The bundled convert_temperature as lazytools lists it: description, input schema, and the function."""
    from lazytools_examples import units

    from lazytools.sources.functions import function_tool

    entry = function_tool(units.convert_temperature, group="units")
    return entry.description, dict(entry.input_schema), units.convert_temperature


# -- the bare SDK server (a child process) -------------------------------------------------------------------------


def serve_bare(port: int) -> None:
    """The SDK's low-level server with one trivial tool, as its documentation serves it over HTTP."""
    import mcp_types as types
    import uvicorn
    from mcp.server.lowlevel import Server

    description, schema, convert = bundled_temperature_tool()  # once, at start-up: calls run the SDK's path only
    tool = types.Tool(name="convert_temperature", description=description, input_schema=schema)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        answer = convert(**(params.arguments or {}))
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(answer))], structured_content=answer)

    server = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


# -- the parent: start both, load each in turn --------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def _child(command: list[str], port: int, cwd: Path, env: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """Start a server, wait until it accepts connections (60 s at most), yield its /mcp URL and pid, stop it."""
    process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    error = process.stderr.read().decode(errors="replace") if process.stderr else ""
                    raise RuntimeError(f"{command} did not start: {error[-2000:]}") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr:
            process.stderr.close()


def _headers(body: dict[str, Any]) -> dict[str, str]:
    return {**HEADERS, "mcp-name": body["params"]["name"]}


def _check(url: str, body: dict[str, Any]) -> str:
    """One call before the load: it must succeed, so the load measures answers and not refusals."""
    import httpx2

    answer = httpx2.post(url, json=body, headers=_headers(body), timeout=30)
    text = answer.text
    if answer.status_code != 200 or '"result"' not in text or '"isError":true' in text.replace(" ", ""):
        raise RuntimeError(f"{url} answered {answer.status_code}: {text[:500]}")
    return text


def _cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system, all threads) a process has used so far; None where /proc is missing."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wrk(url: str, body: dict[str, Any], seconds: float, connections: int, threads: int) -> tuple[float, int, int]:
    """Requests per second, requests and non-2xx answers, by wrk."""
    headers = "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in _headers(body).items())
    script = f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(body))}\n{headers}'
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as file:
        file.write(script)
    try:
        done = subprocess.run(["nice", "wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s",
                               "-s", file.name, url], capture_output=True, text=True, check=True)
    finally:
        os.unlink(file.name)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", done.stdout)
    total = re.search(r"(\d+) requests in", done.stdout)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", done.stdout)
    errors = re.search(r"Socket errors:.*", done.stdout)
    if rate is None or total is None:
        raise RuntimeError(f"wrk said: {done.stdout}{done.stderr}")
    failures = int(bad.group(1)) if bad else 0
    if errors:
        failures += sum(int(n) for n in re.findall(r"\d+", errors.group(0)))
    return float(rate.group(1)), int(total.group(1)), failures


def _python_load(url: str, body: dict[str, Any], seconds: float, connections: int,
                 threads: int) -> tuple[float, int, int]:
    """Requests per second, requests and failures, by `connections` keep-alive clients in this process."""
    import anyio
    import httpx2

    payload = json.dumps(body).encode()
    counts = {"ok": 0, "bad": 0}

    async def worker(end: float) -> None:
        async with httpx2.AsyncClient(timeout=30) as client:
            while time.perf_counter() < end:
                answer = await client.post(url, content=payload, headers=_headers(body))
                counts["ok" if answer.status_code == 200 else "bad"] += 1

    async def run() -> float:
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(connections):
                tg.start_soon(worker, start + seconds)
        return time.perf_counter() - start

    elapsed = anyio.run(run)
    total = counts["ok"] + counts["bad"]
    return total / elapsed, total, counts["bad"]


def _lazytools_command(port: int, root: Path) -> list[str]:
    return [*LAZYTOOLS, "--transport", "http", "--port", str(port), "--log-level", "WARNING",
            "--files-root", str(root), "--cache-dir", str(root)]


def throughput_benchmarks(seconds: float = 5, connections: int = 16, rounds: int = 5, threads: int = 2,
                          progress: Callable[[str], None] | None = None, compare_with: Path | None = None,
                          compare_call: str = "invoke") -> str:
    """lazytools against the bare SDK server: the median ratio of interleaved rounds, each round's requests per
    second, and server CPU per request (steadier on a shared machine). `compare_with`: another lazytools source
    tree (a checkout of main, say), served beside this one and loaded in the same rounds with the same call:
    `invoke_tool` of the trivial tool, or (`compare_call="search"`) search_tools."""
    load = _wrk if shutil.which("wrk") else _python_load
    generator = f"wrk -t{threads} -c{connections}" if load is _wrk else f"a Python client, {connections} connections"
    other = None
    if compare_with is not None:
        other = f"lazytools from {compare_with}" + (", search_tools" if compare_call == "search" else "")
    names = ("bare SDK", "lazytools", THREADED, SEARCH, *((other,) if other is not None else ()))
    rates: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}  # server CPU microseconds per request
    failures = 0
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        root = Path(tmp)
        bare_port, lazy_port = _free_port(), _free_port()
        bare_command = [sys.executable, "-m", "benchmarks.http_throughput", "--serve-bare", str(bare_port)]
        here = Path(__file__).resolve().parent.parent
        bare = stack.enter_context(_child(bare_command, bare_port, here))
        lazy = stack.enter_context(_child(_lazytools_command(lazy_port, root), lazy_port, root))
        targets = {"bare SDK": (*bare, BARE_CALL), "lazytools": (*lazy, LAZYTOOLS_CALL),
                   THREADED: (*lazy, THREADED_CALL), SEARCH: (*lazy, SEARCH_CALL)}
        if other is not None and compare_with is not None:
            port = _free_port()
            env = {**os.environ, "PYTHONPATH": str(compare_with.resolve())}
            targets[other] = (*stack.enter_context(_child(_lazytools_command(port, root), port, root, env)),
                              SEARCH_CALL if compare_call == "search" else LAZYTOOLS_CALL)
        for url, _, body in targets.values():
            _check(url, body)
            load(url, body, 1, connections, threads)  # warm-up: imports, caches, the first connections
        for number in range(rounds):
            order = list(names) if number % 2 == 0 else list(reversed(names))
            for name in order:
                if progress:
                    progress(f"HTTP throughput: round {number + 1}/{rounds}, {name} ({seconds:g} s)")
                url, pid, body = targets[name]
                before = _cpu_seconds(pid)
                rate, total, bad = load(url, body, seconds, connections, threads)
                after = _cpu_seconds(pid)
                rates[name].append(rate)
                if before is not None and after is not None and total:
                    cpu[name].append((after - before) / total * 1e6)
                failures += bad
    compared = ("lazytools", THREADED, SEARCH, *((other,) if other is not None else ()))
    ratios = {name: [ours / bare for ours, bare in zip(rates[name], rates["bare SDK"], strict=True)]
              for name in compared}
    lines = [f"## Stateless tools/call over HTTP ({VERSION}, 127.0.0.1, {generator}, {rounds} interleaved rounds of "
             f"{seconds:g} s)",
             f"tool called: {TOOL_CALLED}",
             f"lazytools / bare SDK, median of {rounds} rounds: {statistics.median(ratios['lazytools']):.2f}x",
             *(f"{name:>10}: " + ", ".join(f"{rate:,.0f}" for rate in values) + " req/s"
               f" (median {statistics.median(values):,.0f})" for name, values in rates.items())]
    labels = [("lazytools", "lazytools / bare"), (THREADED, "tool in a thread / bare"), (SEARCH, "search_tools / bare")]
    if other is not None:
        labels.append((other, f"{other} / bare"))
    for name, label in labels:
        lines.append(f"{label}, per round: " + ", ".join(f"{ratio:.2f}x" for ratio in ratios[name])
                     + f" (median {statistics.median(ratios[name]):.2f}x, spread {min(ratios[name]):.2f}-"
                     f"{max(ratios[name]):.2f})")
    if all(cpu.values()):
        medians = {name: statistics.median(values) for name, values in cpu.items()}
        lines.append("server CPU per request: " + "; ".join(
            f"{name} " + ", ".join(f"{v:.0f}" for v in values) + " µs" for name, values in cpu.items()))
        lines.append("bare / lazytools by CPU (throughput on an idle core): "
                     f"{medians['bare SDK'] / medians['lazytools']:.2f}x; tool in a thread "
                     f"{medians['bare SDK'] / medians[THREADED]:.2f}x; search_tools "
                     f"{medians['bare SDK'] / medians[SEARCH]:.2f}x"
                     + (f"; {other} {medians['bare SDK'] / medians[other]:.2f}x" if other is not None else ""))
    lines.append(f"failed requests: {failures}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.http_throughput", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5, help="load per server per round (default 5)")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections (default 16)")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the result is their median "
                        "(default 5)")
    parser.add_argument("--compare-with", type=Path, metavar="TREE", help="a second lazytools source tree (e.g. an "
                        "export of main) served beside this one and loaded in the same rounds")
    parser.add_argument("--compare-call", choices=("invoke", "search"), default="invoke",
                        help="what the second tree is loaded with: invoke_tool of the trivial tool (default) or "
                        "search_tools, to compare with the search_tools line")
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_bare is not None:
        serve_bare(args.serve_bare)
        return 0
    print(throughput_benchmarks(args.seconds, args.connections, args.rounds, args.threads,
                                progress=lambda line: print(line, file=sys.stderr, flush=True),
                                compare_with=args.compare_with, compare_call=args.compare_call))
    return 0


if __name__ == "__main__":
    sys.exit(main())
