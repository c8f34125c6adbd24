"""The soak test: N concurrent HTTP sessions looping search → enable → call against a child lazytools, for a while.

    python -m benchmarks.soak --sessions 20 --seconds 180

It starts `python -m lazytools --transport http` (bundled example catalog, no .env, no LAZYTOOLS_* variables) on a
free port of 127.0.0.1, drives it with real MCP clients, samples the child's resident memory from /proc, and prints
requests served, errors, latency percentiles and memory growth after warm-up. Sessions come in three kinds:
dynamic (search, re-list, call the enabled tool, and the same through invoke_tool), proxy (search, invoke_tool) and
stateless 2026-07-28 requests; each session is closed and replaced after `churn` rounds, so session set-up and
clean-up are soaked too. Every wait is bounded and the run stops by itself; the exit status is 1 if anything failed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client

from tests.helpers import spawned_http_server

from .stats import percentiles

__all__ = ["ROUNDS", "SoakPlan", "SoakReport", "main", "run_soak", "spawned_http_server"]

Kind = Literal["dynamic", "proxy", "stateless"]
_KINDS: tuple[Kind, ...] = ("dynamic", "proxy", "stateless", "dynamic", "proxy")
_CLIENT_NAMES = {"dynamic": "Visual Studio Code", "proxy": "claude-ai", "stateless": "soak-stateless"}
_MAX_SESSIONS = 500
_MAX_SECONDS = 3600.0
_MAX_ERROR_SAMPLES = 20
_REQUESTS_PER_ROUND = 5
"""At most: search, search by name, re-list, direct call, invoke_tool."""


SIGTERM_EXIT = 128 + 15
"""How lazytools exits after SIGTERM, as shells report a process ended by it."""


@dataclass(frozen=True, slots=True)
class Round:
    """One search → call round: a query, the tool it should find, arguments and a piece of the expected answer."""

    query: str
    tool: str
    arguments: dict[str, Any]
    expect: str


ROUNDS = (
    Round("convert a temperature from celsius to fahrenheit", "convert_temperature",
          {"value": 100, "from_unit": "C", "to_unit": "F"}, "212"),
    Round("encode text as base64", "base64_encode", {"text": "hello"}, "aGVsbG8="),
    Round("hash a string with sha256", "hash_text", {"text": "abc", "algorithm": "sha256"}, "ba7816bf"),
    Round("reverse a piece of text", "reverse_text", {"text": "soak"}, "kaos"),
    Round("is this number prime", "check_prime", {"n": 97}, '"is_prime": true'),
    Round("compare two semantic versions", "semver_compare", {"version_a": "1.2.0", "version_b": "1.10.0"},
          '"newer": "1.10.0"'),
    Round("turn a title into a URL slug", "slugify_text", {"text": "Hello Soak World"}, "hello-soak-world"),
    Round("greatest common divisor of numbers", "gcd_lcm", {"numbers": [12, 18]}, '"gcd": 6'),
)
"""Tools of the bundled catalog with answers that never change."""


@dataclass(frozen=True, slots=True)
class SoakPlan:
    sessions: int = 20
    seconds: float = 180.0
    warmup: float | None = None
    """Seconds excluded from the memory-growth figure; default: a sixth of the run, at most 30 s."""
    sample_every: float = 5.0
    churn: int = 25
    """Rounds per session before it is closed and replaced by a new one."""
    request_timeout: float = 30.0
    max_requests: int | None = None
    log_level: str = "WARNING"

    def __post_init__(self) -> None:
        if not 1 <= self.sessions <= _MAX_SESSIONS:
            raise ValueError(f"sessions: 1 to {_MAX_SESSIONS}")
        if not 0 < self.seconds <= _MAX_SECONDS:
            raise ValueError(f"seconds: more than 0, at most {_MAX_SECONDS:g}")
        if self.sample_every <= 0 or self.churn < 1 or self.request_timeout <= 0:
            raise ValueError("sample_every and request_timeout must be positive, churn at least 1")

    @property
    def warmup_seconds(self) -> float:
        return self.warmup if self.warmup is not None else min(30.0, self.seconds / 6)


@dataclass
class SoakReport:
    plan: SoakPlan
    latencies: dict[str, list[float]] = field(default_factory=dict)
    """Milliseconds per request, by operation (open, search, list, call, invoke)."""
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    sessions_opened: dict[str, int] = field(default_factory=dict)
    rss: list[tuple[float, int]] = field(default_factory=list)
    """(seconds since the load started, resident bytes) of the server process."""
    cpu_seconds: float = 0.0
    """Server CPU time (user + system) over the run."""
    elapsed: float = 0.0
    server_exit: int | None = None

    @property
    def requests(self) -> int:
        return sum(len(samples) for samples in self.latencies.values())

    def record(self, op: str, milliseconds: float) -> None:
        self.latencies.setdefault(op, []).append(milliseconds)

    def fail(self, where: str, problem: str) -> None:
        self.errors += 1
        if len(self.error_samples) < _MAX_ERROR_SAMPLES:
            self.error_samples.append(f"{where}: {problem}"[:300])

    def rss_after_warmup(self) -> tuple[int, int] | None:
        """(resident bytes at the end of warm-up, at the end of the run), or None without samples after it."""
        after = [(t, rss) for t, rss in self.rss if t >= self.plan.warmup_seconds]
        if len(after) < 2:
            return None
        return after[0][1], after[-1][1]

    def growth_per_minute(self) -> float | None:
        """Least-squares slope of resident memory after warm-up, in bytes per minute."""
        after = [(t, rss) for t, rss in self.rss if t >= self.plan.warmup_seconds]
        if len(after) < 3:
            return None
        times = [t for t, _ in after]
        if len(set(times)) < 2:
            return None
        return statistics.linear_regression(times, [float(rss) for _, rss in after]).slope * 60

    def summary(self) -> str:
        plan = self.plan
        lines = [f"soak: {plan.sessions} concurrent sessions for {self.elapsed:.0f} s against lazytools --transport "
                 f"http on 127.0.0.1 (bundled catalog; sessions replaced every {plan.churn} rounds)"]
        opened = ", ".join(f"{count} {kind}" for kind, count in sorted(self.sessions_opened.items()))
        lines.append(f"requests served: {self.requests} ({self.requests / max(self.elapsed, 1e-9):.0f}/s); "
                     f"sessions opened: {opened}; errors: {self.errors}")
        every = [ms for samples in self.latencies.values() for ms in samples]
        if every:
            p50, p99 = percentiles(every)
            lines.append(f"latency, all requests: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {max(every):.1f} ms")
        for op in ("open", "search", "list", "call", "invoke"):
            if self.latencies.get(op):
                p50, p99 = percentiles(self.latencies[op])
                lines.append(f"  {op:<6} x{len(self.latencies[op]):<7} p50 {p50:6.1f} ms   p99 {p99:6.1f} ms")
        if self.rss:
            first, peak = self.rss[0][1], max(rss for _, rss in self.rss)
            lines.append(f"server RSS: {first / 2**20:.1f} MiB at the start of the load, peak {peak / 2**20:.1f} MiB")
        window = self.rss_after_warmup()
        slope = self.growth_per_minute()
        if window is not None:
            start, end = window
            lines.append(f"after {plan.warmup_seconds:.0f} s of warm-up: {start / 2**20:.1f} → {end / 2**20:.1f} MiB "
                         f"({(end - start) / 2**20:+.1f} MiB)"
                         + (f", trend {slope / 2**20:+.2f} MiB/min" if slope is not None else ""))
        lines.append(f"server CPU: {self.cpu_seconds:.1f} s over {self.elapsed:.0f} s; exit status after SIGTERM: "
                     f"{self.server_exit}")
        lines += [f"  error: {sample}" for sample in self.error_samples]
        return "\n".join(lines)


# -- the server child --------------------------------------------------------------------------------------------


def _rss_and_cpu(pid: int) -> tuple[int, float]:
    """Resident bytes and CPU seconds (user + system) of a process, from /proc (Linux)."""
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return rss, (int(fields[11]) + int(fields[12])) / ticks


# -- the load ------------------------------------------------------------------------------------------------------


class _Load:
    def __init__(self, plan: SoakPlan, url: str, report: SoakReport) -> None:
        self.plan = plan
        self.url = url
        self.report = report
        self.deadline = 0.0

    def over(self) -> bool:
        cap = self.plan.max_requests
        return time.monotonic() >= self.deadline or (cap is not None and self.report.requests >= cap)

    async def timed(self, op: str, call: Callable[[], Awaitable[Any]]) -> Any:
        start = time.perf_counter()
        with anyio.fail_after(self.plan.request_timeout):
            result = await call()
        self.report.record(op, (time.perf_counter() - start) * 1000)
        return result

    async def worker(self, index: int) -> None:
        kind = _KINDS[index % len(_KINDS)]
        turn = index
        while not self.over():
            try:
                turn = await self.session(kind, turn)
            except Exception as exc:  # a broken session is an error; the worker opens a new one and goes on
                self.report.fail(f"{kind} session", f"{type(exc).__name__}: {exc}")

    async def session(self, kind: Kind, turn: int) -> int:
        info = types.Implementation(name=_CLIENT_NAMES[kind], version="1")
        mode = "2026-07-28" if kind == "stateless" else "legacy"
        # One bound for the whole session: the client's own tasks live in it, so no per-request scope can hold them.
        with anyio.fail_after(self.plan.request_timeout * (self.plan.churn * _REQUESTS_PER_ROUND + 2)):
            start = time.perf_counter()
            async with Client(self.url, mode=mode, client_info=info) as client:
                self.report.record("open", (time.perf_counter() - start) * 1000)
                self.report.sessions_opened[kind] = self.report.sessions_opened.get(kind, 0) + 1
                for _ in range(self.plan.churn):
                    if self.over():
                        break
                    await self.round(client, kind, ROUNDS[turn % len(ROUNDS)])
                    turn += 1
        return turn

    async def round(self, client: Client, kind: Kind, step: Round) -> None:
        found = await self.timed("search", lambda: client.call_tool("search_tools", {"query": step.query}))
        self.check(kind, "search", found, step.tool)
        if kind == "dynamic":
            # The query found it, or exact tool_names enable it; either way it is listed and callable now.
            if step.tool not in _text(found):
                await self.timed("search", lambda: client.call_tool("search_tools", {"tool_names": [step.tool]}))
            listed = await self.timed("list", lambda: client.list_tools(cache_mode="bypass"))
            if step.tool not in [tool.name for tool in listed.tools]:
                self.report.fail("dynamic list", f"{step.tool} not listed after search_tools")
            direct = await self.timed("call", lambda: client.call_tool(step.tool, step.arguments))
            self.check(kind, step.tool, direct, step.expect)
        bridged = await self.timed("invoke", lambda: client.call_tool(
            "invoke_tool", {"tool_name": step.tool, "arguments": step.arguments}))
        self.check(kind, f"invoke_tool {step.tool}", bridged, step.expect)

    def check(self, kind: Kind, what: str, result: types.CallToolResult, expect: str) -> None:
        if result.is_error or expect not in _text(result):
            self.report.fail(f"{kind} {what}", f"expected {expect!r}, got {_text(result)[:200]!r}")


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def _sample(report: SoakReport, pid: int, every: float, start: float, stop: anyio.Event) -> None:
    while True:
        rss, _ = _rss_and_cpu(pid)
        report.rss.append((time.monotonic() - start, rss))
        with anyio.move_on_after(every):
            await stop.wait()
        if stop.is_set():
            return


async def run_soak(plan: SoakPlan) -> SoakReport:
    """Start a lazytools HTTP server, load it as `plan` says, stop it, and report."""
    report = SoakReport(plan)
    async with spawned_http_server("--no-learn", log_level=plan.log_level) as server:
        pid = server.process.pid
        load = _Load(plan, server.url, report)
        _, cpu_before = _rss_and_cpu(pid)
        start = time.monotonic()
        load.deadline = start + plan.seconds
        stop = anyio.Event()
        async with anyio.create_task_group() as samplers:
            samplers.start_soon(_sample, report, pid, plan.sample_every, start, stop)
            # Rounds in flight at the deadline finish; each request is bounded by request_timeout.
            with anyio.fail_after(plan.seconds + plan.request_timeout * (plan.churn * _REQUESTS_PER_ROUND + 4)):
                async with anyio.create_task_group() as workers:
                    for index in range(plan.sessions):
                        workers.start_soon(load.worker, index)
            report.elapsed = time.monotonic() - start
            stop.set()
        rss, cpu_after = _rss_and_cpu(pid)
        report.rss.append((time.monotonic() - start, rss))
        report.cpu_seconds = cpu_after - cpu_before
    report.server_exit = server.exit_code
    if server.exit_code != SIGTERM_EXIT:
        report.fail("server", f"exit status {server.exit_code} after SIGTERM (not {SIGTERM_EXIT})")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20, help=f"concurrent sessions (1-{_MAX_SESSIONS})")
    parser.add_argument("--seconds", type=float, default=180.0, help="how long the load runs")
    parser.add_argument("--warmup", type=float, help="seconds left out of the memory growth (default: run/6, ≤30)")
    parser.add_argument("--sample-every", type=float, default=5.0, help="seconds between memory samples")
    parser.add_argument("--churn", type=int, default=25, help="rounds per session before it is replaced")
    parser.add_argument("--max-requests", type=int, help="stop after this many requests")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="the server's log level (its log is discarded)")
    args = parser.parse_args(argv)
    plan = SoakPlan(sessions=args.sessions, seconds=args.seconds, warmup=args.warmup, sample_every=args.sample_every,
                    churn=args.churn, max_requests=args.max_requests, log_level=args.log_level)
    report = anyio.run(run_soak, plan)
    print(report.summary())
    return 0 if report.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
