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


def search_call(query: str) -> dict[str, Any]:
    """search_tools as a 2026-07-28 client sends it: the proxy surface, each match with its input schema."""
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_tools", "_meta": _META, "arguments": {"query": query}}}


SEARCH_CALL = search_call("convert a temperature")
SEARCH = "lazytools, search_tools"
_NEEDS = ("convert celsius to fahrenheit", "encode some text as base64", "hash a password with sha256",
          "when does this cron job run next", "turn a csv file into json", "days between two dates",
          "pretty print a json document", "check if a number is prime", "compare two semantic versions",
          "find email addresses in text", "roll some dice", "monthly payment on a loan", "mix two colors",
          "make a slug from a title", "decode a jwt token", "convert kilometers to miles", "count words in text",
          "generate a random password", "time now in tokyo", "escape html characters", "split a restaurant bill",
          "test a regular expression", "flatten a nested json object", "contrast between two colours",
          "convert a number to hexadecimal", "url encode a query string", "bump the minor version",
          "parse an iso date", "format a file size for humans", "shuffle a list of names",
          "solve a quadratic equation", "diff two pieces of text", "read a file", "search files for a word",
          "convert pounds to kilograms", "compound interest over ten years", "wrap text at eighty columns",
          "generate a uuid", "stats of a csv column", "convert megabytes to gigabytes")
_SETTINGS = ("for a report", "in a script", "from the command line", "for my team", "at work today",
             "before the release", "for an invoice", "on a laptop", "for a blog post", "quickly please",
             "for a customer", "in a spreadsheet", "for the weekend", "as a test", "for school", "for the logs")
FRESH_QUERIES = tuple(f"{need} {setting}" for setting in _SETTINGS for need in _NEEDS)
"""640 distinct requests of one need each, asked in turn: each index keeps its last 256 answers
(`search/recent.py`), so every request of a round is ranked afresh, as a new user's request is."""
SEARCH_CALLS = [search_call(query) for query in FRESH_QUERIES]
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
    # The fastest form the SDK offers for this call: stateless, answered as JSON (no SSE stream per request), on
    # the loop and HTTP parser lazytools uses (uvloop, httptools, when installed), without access lines.
    app = server.streamable_http_app(stateless_http=True, json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="on",
                loop=_same_loop(), http="httptools" if _installed("httptools") else "h11")


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _same_loop() -> str:
    """The event loop lazytools' command line runs on (lazytools/cli.py: uvloop when it is installed)."""
    return "uvloop" if _installed("uvloop") else "asyncio"


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


Bodies = list[dict[str, Any]]
"""The requests one load sends, in turn (one for a tool call, the fresh queries for search_tools)."""


def _headers(body: dict[str, Any]) -> dict[str, str]:
    return {**HEADERS, "mcp-name": body["params"]["name"]}


def _check(url: str, bodies: Bodies) -> str:
    """One call before the load: it must succeed, so the load measures answers and not refusals."""
    import httpx2

    body = bodies[0]
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


def _wrk(url: str, bodies: Bodies, seconds: float, connections: int, threads: int) -> tuple[float, int, int]:
    """Requests per second, requests and non-2xx answers, by wrk; each wrk thread sends `bodies` in turn, from
    its own starting point (so two threads never send the same body at once)."""
    headers = "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in _headers(bodies[0]).items())
    table = ", ".join(json.dumps(json.dumps(body)) for body in bodies)
    script = (f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(bodies[0]))}\n{headers}'
              f"local bodies = {{{table}}}\nlocal started = 0\n"
              "function setup(thread) thread:set('first', started); started = started + 1 end\n"
              "local turn = nil\n"
              "function request()\n"
              f"  if turn == nil then turn = math.floor((first or 0) * #bodies / {max(1, threads)}) end\n"
              "  turn = turn + 1\n"
              "  return wrk.format(nil, nil, nil, bodies[(turn % #bodies) + 1])\n"
              "end\n")
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


def _python_load(url: str, bodies: Bodies, seconds: float, connections: int,
                 threads: int) -> tuple[float, int, int]:
    """Requests per second, requests and failures, by `connections` keep-alive clients in this process, which
    send `bodies` in turn."""
    import anyio
    import httpx2

    payloads = [json.dumps(body).encode() for body in bodies]
    headers = _headers(bodies[0])
    counts = {"ok": 0, "bad": 0}
    turns = iter(range(1 << 62))

    async def worker(end: float) -> None:
        async with httpx2.AsyncClient(timeout=30) as client:
            while time.perf_counter() < end:
                payload = payloads[next(turns) % len(payloads)]
                answer = await client.post(url, content=payload, headers=headers)
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


def _lazytools_command(port: int, root: Path, *, learn: bool = True) -> list[str]:
    """lazytools as shipped: its defaults, learning from use included (into a store under `root`, not the user's:
    the cache directory is `root`); `learn=False` adds `--no-learn`, for the line that tells learning's share."""
    command = LAZYTOOLS if not learn else [part for part in LAZYTOOLS if part != "--no-learn"]
    return [*command, "--transport", "http", "--port", str(port), "--log-level", "WARNING",
            "--files-root", str(root), "--cache-dir", str(root)]


NO_LEARN = "lazytools --no-learn"


def _spread(values: list[float], unit: str, digits: int = 0) -> str:
    return (f"{min(values):,.{digits}f} / {statistics.median(values):,.{digits}f} / {max(values):,.{digits}f}"
            f"{unit}")


def throughput_benchmarks(seconds: float = 5, connections: int = 16, rounds: int = 5, threads: int = 2,
                          progress: Callable[[str], None] | None = None, compare_with: Path | None = None,
                          compare_call: str = "invoke", no_learn: bool = False) -> str:
    """lazytools as shipped against the bare SDK server: each round's ratio of requests per second (the rounds
    interleaved), min / median / max over the rounds, and server CPU per request (steadier on a shared machine).
    `no_learn`: one more line, lazytools with `--no-learn`, to tell what learning costs. `compare_with`: another
    lazytools source tree (a checkout of main, say), served beside this one and loaded in the same rounds with the
    same call: `invoke_tool` of the trivial tool, or (`compare_call="search"`) search_tools with fresh queries."""
    load = _wrk if shutil.which("wrk") else _python_load
    generator = f"wrk -t{threads} -c{connections}" if load is _wrk else f"a Python client, {connections} connections"
    other = None
    if compare_with is not None:
        other = f"lazytools from {compare_with}" + (", search_tools" if compare_call == "search" else "")
    names = ("bare SDK", "lazytools", THREADED, SEARCH, *((NO_LEARN,) if no_learn else ()),
             *((other,) if other is not None else ()))
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
        targets: dict[str, tuple[str, int, Bodies]] = {
            "bare SDK": (*bare, [BARE_CALL]), "lazytools": (*lazy, [LAZYTOOLS_CALL]),
            THREADED: (*lazy, [THREADED_CALL]), SEARCH: (*lazy, SEARCH_CALLS)}
        if no_learn:
            port = _free_port()
            unlearnt = root / "no-learn"
            unlearnt.mkdir()
            targets[NO_LEARN] = (*stack.enter_context(_child(_lazytools_command(port, unlearnt, learn=False), port,
                                                             unlearnt)), [LAZYTOOLS_CALL])
        if other is not None and compare_with is not None:
            port = _free_port()
            env = {**os.environ, "PYTHONPATH": str(compare_with.resolve())}
            elsewhere = root / "other"
            elsewhere.mkdir()
            targets[other] = (*stack.enter_context(_child(_lazytools_command(port, elsewhere), port, elsewhere,
                                                          env)),
                              SEARCH_CALLS if compare_call == "search" else [LAZYTOOLS_CALL])
        for url, _, bodies in targets.values():
            _check(url, bodies)
            load(url, bodies, 1, connections, threads)  # warm-up: imports, caches, the first connections
        for number in range(rounds):
            order = list(names) if number % 2 == 0 else list(reversed(names))
            for name in order:
                if progress:
                    progress(f"HTTP throughput: round {number + 1}/{rounds}, {name} ({seconds:g} s)")
                url, pid, bodies = targets[name]
                before = _cpu_seconds(pid)
                rate, total, bad = load(url, bodies, seconds, connections, threads)
                after = _cpu_seconds(pid)
                rates[name].append(rate)
                if before is not None and after is not None and total:
                    cpu[name].append((after - before) / total * 1e6)
                failures += bad
    compared = [name for name in names if name != "bare SDK"]
    ratios = {name: [ours / bare for ours, bare in zip(rates[name], rates["bare SDK"], strict=True)]
              for name in compared}
    load_average = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    lines = [f"## Stateless tools/call over HTTP ({VERSION}, 127.0.0.1, {generator}, {rounds} interleaved rounds of "
             f"{seconds:g} s; load average at the end {load_average})",
             f"tool called: {TOOL_CALLED}; search_tools: {len(FRESH_QUERIES)} requests in turn, each ranked afresh",
             "bare SDK: Server.streamable_http_app(stateless_http=True, json_response=True) under uvicorn, "
             f"loop {_same_loop()}; lazytools: its defaults (learning on)",
             f"lazytools / bare SDK, median of {rounds} rounds: {statistics.median(ratios['lazytools']):.2f}x",
             *(f"{name:>10}: " + ", ".join(f"{rate:,.0f}" for rate in values) + " req/s"
               f" (median {statistics.median(values):,.0f})" for name, values in rates.items())]
    labels = {"lazytools": "lazytools / bare", THREADED: "tool in a thread / bare",
              SEARCH: "search_tools / bare", NO_LEARN: "lazytools --no-learn / bare"}
    for name in compared:
        lines.append(f"{labels.get(name, f'{name} / bare')}, per round: "
                     + ", ".join(f"{ratio:.2f}x" for ratio in ratios[name])
                     + f" (median {statistics.median(ratios[name]):.2f}x, spread {min(ratios[name]):.2f}-"
                     f"{max(ratios[name]):.2f}; min / median / max {_spread(ratios[name], 'x', 2)})")
    if all(cpu.values()):
        medians = {name: statistics.median(values) for name, values in cpu.items()}
        lines.append("server CPU per request: " + "; ".join(
            f"{name} " + ", ".join(f"{v:.0f}" for v in values) + " µs" for name, values in cpu.items()))
        lines.append("server CPU per request, min / median / max: " + "; ".join(
            f"{name} {_spread(values, ' µs')}" for name, values in cpu.items()))
        # A server whose CPU reads as zero (its rounds too short for the clock to tick) has no ratio to give.
        lines.append("bare / lazytools by CPU (throughput on an idle core): " + "; ".join(
            f"{labels.get(name, name).removesuffix(' / bare')} "
            + (f"{medians['bare SDK'] / medians[name]:.2f}x" if medians[name] > 0 else "not measured (0 µs)")
            for name in compared))
    lines.append(f"failed requests: {failures}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.http_throughput", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5, help="load per server per round (default 5)")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections (default 16)")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the result is their median "
                        "(default 5)")
    parser.add_argument("--no-learn", action="store_true", help="also load a lazytools with --no-learn, in the "
                        "same rounds (what learning from use costs)")
    parser.add_argument("--compare-with", type=Path, metavar="TREE", help="a second lazytools source tree (e.g. an "
                        "export of main) served beside this one and loaded in the same rounds")
    parser.add_argument("--compare-call", choices=("invoke", "search"), default="invoke",
                        help="what the second tree is loaded with: invoke_tool of the trivial tool (default) or "
                        "search_tools with fresh queries, to compare with the search_tools line")
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_bare is not None:
        serve_bare(args.serve_bare)
        return 0
    print(throughput_benchmarks(args.seconds, args.connections, args.rounds, args.threads,
                                progress=lambda line: print(line, file=sys.stderr, flush=True),
                                compare_with=args.compare_with, compare_call=args.compare_call,
                                no_learn=args.no_learn))
    return 0


if __name__ == "__main__":
    sys.exit(main())
