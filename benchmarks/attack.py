"""A bounded, local attack on a real `lazytools --transport http` process, while another session pings it.

    python -m benchmarks.attack [--seconds 30] [--slowloris 300] [--fd-limit 256]

Only 127.0.0.1, only a child process this script starts (bundled catalog, files root in a scratch directory), and
every loop ends at the deadline (at most 120 s). At once, for `--seconds`:

- symlink swaps (issue #12 item 1): a thread keeps swapping `swap.txt` inside the files root between a regular file
  and a symlink to a file outside it, while clients call `read_text_file` and `search_in_files` on it; a result
  that holds the outside file's marker is a read outside the root;
- quadratic-regex inputs (item 5): `csv_to_json` with a 20 KB cell, `count_text_stats` on `"."*40000+"x"`,
  `extract_emails` on `"a."*30000`, `json_get_path` with a 20,000-character path;
- slowloris (item 8): up to `--slowloris` connections that send part of a request's headers, then one more header
  line every 2 s, never finishing; each one the server closes is reopened (at once by default: a connection flood);
- a separate MCP session pings every 100 ms, and `/healthz` is fetched every second.

The server runs with its open-file limit lowered to `--fd-limit` (the probe that found item 8 used 256). Printed:
ping p50 / p99 / max and failures, /healthz failures, reads outside the root, attack calls by outcome, slowloris
connections opened and closed by the server.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from . import LAZYTOOLS
from .stats import percentile

MARKER = "OUTSIDE-THE-ROOT-7f3a"
MAX_SECONDS = 120.0
MAX_SLOWLORIS = 1000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(root: Path, port: int, fd_limit: int, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
    env["LAZYTOOLS_MODE"] = "proxy"

    def limit_fds() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

    command = [*LAZYTOOLS, "--transport", "http", "--host", "127.0.0.1", "--port", str(port),
               "--files-root", str(root), "--log-level", "WARNING"]
    with log.open("wb") as sink:
        return subprocess.Popen(command, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink,
                                preexec_fn=limit_fds)


async def wait_healthy(base: str, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    async with httpx2.AsyncClient(timeout=2) as http:
        with anyio.fail_after(timeout):
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"lazytools exited with {process.returncode} at start-up")
                try:
                    if (await http.get(base + "/healthz")).status_code == 200:
                        return
                except httpx2.HTTPError:
                    pass
                await anyio.sleep(0.1)


def swapper(root: Path, outside: Path, deadline: float, swaps: list[int]) -> None:
    """Swap root/swap.txt between a regular file and a symlink to `outside`, until the deadline."""
    regular, link, target = root / ".regular.tmp", root / ".link.tmp", root / "swap.txt"
    target.write_text("inside the root\n")
    count = 0
    while time.monotonic() < deadline:
        regular.write_text("inside the root\n")
        os.replace(regular, target)
        link.unlink(missing_ok=True)
        link.symlink_to(outside)
        os.replace(link, target)
        count += 1
        time.sleep(0.0005)
    regular.write_text("inside the root\n")
    os.replace(regular, target)
    swaps.append(count)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


class Tally:
    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self.outside = 0
        self.pings: list[float] = []
        self.ping_failures = 0
        self.health_failures = 0
        self.health_checks = 0
        self.slow_opened = 0
        self.slow_closed = 0
        self.slow_refused = 0
        self.raw: list[float] = []


ATTACKS: list[tuple[str, dict[str, Any]]] = [
    ("csv_to_json", {"csv_text": 'a,b\n"' + "1" * 20000 + 'x",2\n'}),
    ("count_text_stats", {"text": "." * 40000 + "x"}),
    ("extract_emails", {"text": "a." * 30000}),
    ("json_get_path", {"data": {"a": 1}, "path": "a." * 10000}),
]


async def call(c: Client, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return await c.call_tool("invoke_tool", {"tool_name": tool, "arguments": arguments})


def _innermost(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {str(exc)[:80]}"


READS: dict[str, dict[str, Any]] = {
    "read_text_file": {"path": "swap.txt"},
    "search_in_files": {"query": "e", "path": ".", "file_glob": "swap.txt", "include_hidden": False},
}


async def caller(url: str, deadline: float, tally: Tally, calls: list[tuple[str, dict[str, Any]]]) -> None:
    """Call `calls` in turn in one session until the deadline; a session that breaks is counted and reopened."""
    i = 0
    while time.monotonic() < deadline:
        try:
            with anyio.move_on_after(max(deadline - time.monotonic(), 0) + 30):
                async with Client(url, mode="legacy",
                                  client_info=types.Implementation(name="claude-ai", version="1")) as c:
                    while time.monotonic() < deadline:
                        tool, arguments = calls[i % len(calls)]
                        i += 1
                        result = await call(c, tool, arguments)
                        tally.outcomes[f"{tool}: {'error' if result.is_error else 'ok'}"] += 1
                        if MARKER in text_of(result) or MARKER in json.dumps(result.structured_content or {}):
                            tally.outside += 1
        except Exception as exc:  # noqa: BLE001 - counted, the attack goes on
            tally.outcomes[f"session broke: {_innermost(exc)}"] += 1
            await anyio.sleep(0.5)


async def pinger(url: str, deadline: float, tally: Tally) -> None:
    """Ping every 100 ms in one session, opened before the attack starts; a failure counts, then it reconnects."""
    while time.monotonic() < deadline:
        try:
            async with Client(url, mode="legacy") as c:
                while time.monotonic() < deadline:
                    start = time.perf_counter()
                    with anyio.fail_after(30), warnings.catch_warnings():
                        warnings.simplefilter("ignore", MCPDeprecationWarning)
                        await c.send_ping()
                    tally.pings.append(time.perf_counter() - start)
                    await anyio.sleep(0.1)
        except Exception as exc:  # noqa: BLE001 - counted, the run goes on
            tally.ping_failures += 1
            tally.outcomes[f"ping session broke: {_innermost(exc)}"] += 1
            await anyio.sleep(0.5)


async def kept_alive(port: int, deadline: float, tally: Tally) -> None:
    """GET /healthz every 100 ms on one kept-alive connection: the server's own delay, without connection set-up."""
    stream = await anyio.connect_tcp("127.0.0.1", port)
    try:
        while time.monotonic() < deadline:
            start = time.perf_counter()
            await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            await stream.receive()
            tally.raw.append(time.perf_counter() - start)
            await anyio.sleep(0.1)
    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
        tally.outcomes["kept-alive /healthz connection closed"] += 1
    finally:
        await stream.aclose()


async def health(base: str, deadline: float, tally: Tally) -> None:
    """GET /healthz every second on a new connection (a kept-alive one would not show a server that accepts none)."""
    while time.monotonic() < deadline:
        tally.health_checks += 1
        try:
            async with httpx2.AsyncClient(timeout=5) as http:
                if (await http.get(base + "/healthz")).status_code != 200:
                    tally.health_failures += 1
        except httpx2.HTTPError:
            tally.health_failures += 1
        await anyio.sleep(1)


async def slowloris(port: int, deadline: float, tally: Tally, reconnect_delay: float) -> None:
    """One slow connection at a time, reopened (after `reconnect_delay`) each time the server closes it."""
    while time.monotonic() < deadline:
        try:
            stream = await anyio.connect_tcp("127.0.0.1", port)
        except OSError:
            tally.slow_refused += 1
            await anyio.sleep(1)
            continue
        tally.slow_opened += 1
        try:
            await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
            while time.monotonic() < deadline:
                with anyio.move_on_after(2):
                    data = await stream.receive()  # the server answering (503) or closing
                    if data:
                        continue
                await stream.send(b"X-Slow: 1\r\n")
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            tally.slow_closed += 1
        finally:
            await stream.aclose()
        await anyio.sleep(reconnect_delay)


def run_callers(url: str, deadline: float, readers: int, regex_workers: int, out: Any) -> None:
    """Child process: the file-tool readers and the regex attackers, each in its own session."""
    tally = Tally()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(readers):
                tool = ["read_text_file", "search_in_files"][i % 2]
                tg.start_soon(caller, url, deadline, tally, [(tool, READS[tool])])
            for i in range(regex_workers):
                tg.start_soon(caller, url, deadline, tally, ATTACKS[i:] + ATTACKS[:i])

    anyio.run(main)
    out.put(("callers", dict(tally.outcomes), tally.outside))


def run_slowloris(port: int, deadline: float, count: int, reconnect_delay: float, out: Any) -> None:
    """Child process: `count` slowloris connections, each reopened when the server closes it."""
    tally = Tally()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(count):
                tg.start_soon(slowloris, port, deadline, tally, reconnect_delay)

    anyio.run(main)
    out.put(("slowloris", tally.slow_opened, tally.slow_closed, tally.slow_refused))


def run_swapper(root: Path, outside: Path, deadline: float, out: Any) -> None:
    swaps: list[int] = []
    swapper(root, outside, deadline, swaps)
    out.put(("swaps", swaps[0] if swaps else 0))


async def attack(args: argparse.Namespace) -> Tally:
    """The attackers run in child processes: their own work must not delay this process's pings."""
    seconds = min(args.seconds, MAX_SECONDS)
    with tempfile.TemporaryDirectory(prefix="lazytools-attack-") as scratch:
        root = Path(scratch) / "root"
        root.mkdir()
        (root / "notes.txt").write_text("an ordinary file\n")
        outside = Path(scratch) / "outside.txt"
        outside.write_text(f"{MARKER}\n")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        log = Path(scratch) / "server.log"
        process = start_server(root, port, args.fd_limit, log)
        tally = Tally()
        context = multiprocessing.get_context("spawn")
        results = context.Queue()
        children = []
        try:
            await wait_healthy(base, process)
            deadline = time.monotonic() + seconds
            url = base + "/mcp"
            children = [
                context.Process(target=run_swapper, args=(root, outside, deadline, results)),
                context.Process(target=run_callers, args=(url, deadline, args.readers, args.regex_workers, results)),
                context.Process(target=run_slowloris,
                                args=(port, deadline, min(args.slowloris, MAX_SLOWLORIS), args.reconnect_delay,
                                      results)),
            ]
            for child in children:
                child.start()
            async with anyio.create_task_group() as tg:
                tg.start_soon(pinger, url, deadline, tally)
                tg.start_soon(health, base, deadline, tally)
                tg.start_soon(kept_alive, port, deadline, tally)
            for _ in children:
                message = await anyio.to_thread.run_sync(results.get, True, 120)
                if message[0] == "callers":
                    tally.outcomes.update(message[1])
                    tally.outside = message[2]
                elif message[0] == "slowloris":
                    tally.slow_opened, tally.slow_closed, tally.slow_refused = message[1:]
                else:
                    tally.outcomes["symlink swaps"] = message[1]
        finally:
            for child in children:
                child.join(30)
                if child.is_alive():
                    child.kill()
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
            if args.verbose:
                text = log.read_text(errors="replace")
                print(f"server: exit {process.returncode}; EMFILE errors: {text.count('Too many open files')}; "
                      f"log tail:\n{text[-1500:]}")
    return tally


def report(tally: Tally, args: argparse.Namespace) -> str:
    pings = sorted(tally.pings)
    lines = [f"attack for {min(args.seconds, MAX_SECONDS):g} s: {args.readers} readers, {args.regex_workers} regex "
             f"attackers, {min(args.slowloris, MAX_SLOWLORIS)} slowloris connections, server open-file limit "
             f"{args.fd_limit}, slowloris reconnect delay {args.reconnect_delay:g} s"]
    if pings:
        p99 = percentile(pings, 99)
        slowest = sorted(range(len(tally.pings)), key=lambda i: -tally.pings[i])[:3]
        lines.append(f"ping: {len(pings)} answered, {tally.ping_failures} failed; "
                     f"p50 {statistics.median(pings) * 1000:.1f} ms, "
                     f"p99 {p99*1000:.1f} ms, max {pings[-1]*1000:.1f} ms (slowest: "
                     + ", ".join(f"#{i + 1} {tally.pings[i] * 1000:.0f} ms" for i in slowest) + ")")
    else:
        lines.append(f"ping: none answered, {tally.ping_failures} failed")
    lines.append(f"/healthz: {tally.health_checks - tally.health_failures}/{tally.health_checks} answered 200 on new "
                 f"connections; on one kept-alive connection {len(tally.raw)} answered, max "
                 f"{max(tally.raw, default=0) * 1000:.1f} ms")
    lines.append(f"reads outside the root: {tally.outside}")
    lines.append(f"slowloris: {tally.slow_opened} connections opened, {tally.slow_closed} closed by the server, "
                 f"{tally.slow_refused} connects refused")
    for key, count in sorted(tally.outcomes.items()):
        lines.append(f"  {key}: {count}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--slowloris", type=int, default=300)
    parser.add_argument("--fd-limit", type=int, default=256)
    parser.add_argument("--reconnect-delay", type=float, default=0.0,
                        help="seconds a slowloris connection waits before reopening once closed (0: at once, a flood)")
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--regex-workers", type=int, default=2)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    tally = anyio.run(attack, args)
    print(report(tally, args))
    return 0 if tally.outside == 0 and tally.pings and tally.ping_failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
