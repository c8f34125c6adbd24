"""Replicas sharing sessions through Redis behind haproxy: throughput, latency, Redis overhead, idle sessions, CPU.

    python -m benchmarks.scaling [--seconds 10] [--connections 50] [--idle 30000] [--replicas 1,2,3]

Everything is real and on this machine: redis-server, haproxy (examples/haproxy.cfg) and `lazytools --transport
http` replicas (tests/cluster.py starts them), `wrk` as the load generator (Debian's `wrk`; one thread, so it
costs the machine little). The load is handshake-era sessions: 50 are opened (initialize, initialized, a search
that enables `reverse_text`), then wrk's 50 keep-alive connections send, each request with the next session's id,
either `tools/call search_tools` or `tools/call reverse_text`. With 2 cores every replica, haproxy, Redis and wrk
share them: requests per second then says little about more machines, so CPU seconds per request are reported too
(summed over the replicas, and Redis and haproxy apart), from which capacity per core follows.

"Redis overhead" runs three replicas without haproxy, sessions in memory in one, in Redis in the others (one reading
every record from Redis, one with local copies of them: `LAZYTOOLS_STATE_LOCAL_COPY`), measures them in turns
(`--rounds`, `--overhead-seconds` each) at 1 and 16 connections and reports the medians.
"Idle sessions" opens `--idle` sessions through haproxy (initialize + initialized) and reports Redis's memory per
session and the replicas' resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2

from tests.cluster import Replica, cluster, free_port, running_redis

__all__ = ["main"]

ACCEPT = "application/json, text/event-stream"
CALLS = {
    "search_tools": {"name": "search_tools", "arguments": {"query": "reverse the characters of a text"}},
    "tools/call": {"name": "reverse_text", "arguments": {"text": "Hello, replicas"}},
}


@dataclass
class Load:
    rate: float
    requests: int
    failures: int
    p50_ms: float
    p99_ms: float
    cpu_per_request_ms: dict[str, float]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def open_sessions(url: str, count: int, *, enable: bool = True, parallel: int = 50,
                        failed: list[str] | None = None) -> list[str]:
    """`count` handshake-era sessions (client `mcp`: dynamic surface) opened over raw HTTP; their ids. With `failed`,
    a session that could not be opened is counted there instead of ending the run."""
    keys: list[str] = []
    limiter = anyio.Semaphore(parallel)

    async def one(http: httpx2.AsyncClient) -> None:
        if failed is None:
            await opening(http)
            return
        try:
            await opening(http)
        except (RuntimeError, httpx2.HTTPError) as exc:
            failed.append(str(exc)[:200])

    async def opening(http: httpx2.AsyncClient) -> None:
        async with limiter:
            headers = {"accept": ACCEPT, "content-type": "application/json"}
            opened = await http.post(url, headers=headers, json={
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "mcp", "version": "1"}}})
            opened.raise_for_status()
            headers["mcp-session-id"] = opened.headers["mcp-session-id"]
            done = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            if done.status_code >= 400:
                raise RuntimeError(f"notifications/initialized: {done.status_code} {done.text[:200]}")
            if enable:
                found = await http.post(url, headers=headers, json={
                    "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "search_tools", "arguments": {"tool_names": ["reverse_text"]}}})
                found.raise_for_status()
            keys.append(headers["mcp-session-id"])

    async with httpx2.AsyncClient(timeout=120, limits=httpx2.Limits(max_connections=parallel)) as http:
        async with anyio.create_task_group() as tg:
            for _ in range(count):
                tg.start_soon(one, http)
    return keys


def wrk(url: str, keys: list[str], call: str, seconds: float, connections: int) -> tuple[float, int, int, float, float]:
    """Requests/s, requests, failures, p50 and p99 in ms: wrk's keep-alive connections, each request carrying the
    next session's id."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": CALLS[call]})
    script = f"""
local keys = {{{", ".join(json.dumps(k) for k in keys)}}}
local n = 0
wrk.method = "POST"
wrk.body = {json.dumps(body)}
wrk.headers["content-type"] = "application/json"
wrk.headers["accept"] = "{ACCEPT}"
request = function()
  n = n + 1
  wrk.headers["mcp-session-id"] = keys[(n % #keys) + 1]
  return wrk.format()
end
"""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as file:
        file.write(script)
    try:
        done = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency",
                               "-s", file.name, url], capture_output=True, text=True, check=True)
    finally:
        os.unlink(file.name)
    out = done.stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:.*", out)
    failures = (int(bad.group(1)) if bad else 0) + (sum(int(n) for n in re.findall(r"\d+", errors.group(0)))
                                                    if errors else 0)
    return rate, total, failures, _ms(out, "50%"), _ms(out, "99%")


def _ms(out: str, label: str) -> float:
    found = re.search(rf"{re.escape(label)}\s+([\d.]+)(us|ms|s)", out)
    if found is None:
        return float("nan")
    value, unit = float(found.group(1)), found.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def measure(url: str, keys: list[str], call: str, seconds: float, connections: int,
            pids: dict[str, list[int]]) -> Load:
    before = {name: sum(_cpu_seconds(p) for p in group) for name, group in pids.items()}
    rate, total, failures, p50, p99 = wrk(url, keys, call, seconds, connections)
    after = {name: sum(_cpu_seconds(p) for p in group) for name, group in pids.items()}
    per = {name: (after[name] - before[name]) / max(total, 1) * 1000 for name in pids}
    return Load(rate, total, failures, p50, p99, per)


def _line(label: str, load: Load) -> str:
    cpu = ", ".join(f"{name} {ms:.2f}" for name, ms in load.cpu_per_request_ms.items())
    return (f"| {label} | {load.rate:,.0f} | {load.p50_ms:.2f} | {load.p99_ms:.1f} | {load.failures} | {cpu} |")


async def throughput(counts: list[int], seconds: float, connections: int) -> list[str]:
    lines = ["| replicas, call | req/s | p50 ms | p99 ms | failed | CPU ms per request |", "|---|---|---|---|---|---|"]
    for count in counts:
        async with cluster(count, env={"LAZYTOOLS_LEARN": "false"}) as c:
            keys = await open_sessions(c.url, connections)
            pids = {"replicas": [r.process.pid for r in c.replicas if r.process is not None],
                    "redis": [c.redis.process.pid] if c.redis.process is not None else [],
                    "haproxy": [c.haproxy.pid]}
            for call in CALLS:
                lines.append(_line(f"{count}, {call}", measure(c.url, keys, call, seconds, connections, pids)))
    return lines


@asynccontextmanager
async def one_replica(state_url: str | None, **settings: str) -> AsyncIterator[Replica]:
    with tempfile.TemporaryDirectory(prefix="lazytools-bench-") as scratch:
        env = {"LAZYTOOLS_LOG_LEVEL": "WARNING", "LAZYTOOLS_LEARN": "false",
               **({"LAZYTOOLS_STATE_URL": state_url} if state_url else {}), **settings}
        replica = Replica(free_port(), Path(scratch), env)
        await replica.start()
        try:
            yield replica
        finally:
            await replica.stop()


async def overhead(seconds: float, rounds: int) -> list[str]:
    """One replica with sessions in memory, one with sessions in Redis read by every request
    (`LAZYTOOLS_STATE_LOCAL_COPY=false`) and one with local copies of the records, all up at once and measured in
    turns (the order rotating per round), at 1 connection and at 16: the medians over the rounds of p50 and of the
    replica's CPU per request (plus redis-server's), and what Redis adds to each."""
    labels = ("memory", "Redis", "Redis+copy")
    lines = ["| call, connections | p50 ms memory | p50 ms Redis | p50 ms Redis+copy | added p50 ms Redis | "
             "added p50 ms Redis+copy | CPU ms/request memory | CPU ms/request Redis | CPU ms/request Redis+copy "
             "(replica + redis-server) |", "|---|---|---|---|---|---|---|---|---|"]
    async with running_redis() as redis, one_replica(None) as memory, \
            one_replica(redis.url, LAZYTOOLS_STATE_LOCAL_COPY="false") as shared, \
            one_replica(redis.url, LAZYTOOLS_STATE_LOCAL_COPY="true") as copied:
        setups = []
        for label, replica in zip(labels, (memory, shared, copied), strict=True):
            endpoint = f"{replica.base}/mcp"
            assert replica.process is not None
            pids = {"replica": [replica.process.pid]}
            if label != "memory" and redis.process is not None:
                pids["redis"] = [redis.process.pid]
            setups.append((label, endpoint, await open_sessions(endpoint, 16), pids))
        for call in CALLS:
            for connections in (1, 16):
                got: dict[str, list[Load]] = {label: [] for label in labels}
                for turn in range(rounds):
                    for label, endpoint, keys, pids in setups[turn % 3:] + setups[:turn % 3]:
                        got[label].append(measure(endpoint, keys, call, seconds, connections, pids))
                p50 = {label: _median([load.p50_ms for load in loads]) for label, loads in got.items()}
                cpu = {label: _median([sum(load.cpu_per_request_ms.values()) for load in loads])
                       for label, loads in got.items()}
                lines.append(f"| {call}, {connections} | {p50['memory']:.2f} | {p50['Redis']:.2f} | "
                             f"{p50['Redis+copy']:.2f} | {p50['Redis'] - p50['memory']:+.2f} | "
                             f"{p50['Redis+copy'] - p50['memory']:+.2f} | {cpu['memory']:.2f} | {cpu['Redis']:.2f} | "
                             f"{cpu['Redis+copy']:.2f} |")
    return lines


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


async def idle(count: int) -> list[str]:
    # Replicas drop their part of a session 10 s after its last request there: the sessions are held by Redis.
    async with cluster(3, env={"LAZYTOOLS_REPLICA_IDLE_TIMEOUT": "10", "LAZYTOOLS_LEARN": "false"}) as c:
        client = c.redis
        before = _redis_memory(client.port)
        failed: list[str] = []
        keys = await open_sessions(c.url, count, enable=False, failed=failed)
        after = _redis_memory(client.port)
        sample = _redis_cli(client.port, "MEMORY", "USAGE", f"lazytools:session:{keys[0]}")
        rss = [_rss_mb(r.process.pid) for r in c.replicas if r.process is not None]
        answering = await _still_served(c.url, keys[:: max(1, len(keys) // 300)])
        in_redis = _redis_cli(client.port, "DBSIZE")
    return [f"sessions opened through haproxy (initialize + initialized, 50 at a time): {len(keys):,} of {count:,} "
            f"({len(failed)} failed{': ' + failed[0] if failed else ''}); keys in Redis: {in_redis}",
            f"Redis used_memory: +{(after - before) / max(len(keys), 1):,.0f} bytes per session "
            f"(MEMORY USAGE of one record: {sample} bytes)",
            f"replicas' resident memory after: {', '.join(f'{mb:,.0f} MB' for mb in rss)}",
            f"a sample of {answering[1]} sessions asked tools/list afterwards: {answering[0]} answered"]


async def _still_served(url: str, keys: list[str]) -> tuple[int, int]:
    ok = 0
    async with httpx2.AsyncClient(timeout=60) as http:
        for key in keys:
            response = await http.post(url, headers={"accept": ACCEPT, "content-type": "application/json",
                                                     "mcp-session-id": key},
                                       json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
            ok += response.status_code == 200 and "search_tools" in response.text
    return ok, len(keys)


def _redis_cli(port: int, *args: str) -> str:
    binary = shutil.which("redis-cli")
    if binary is None:
        return "?"
    return subprocess.run([binary, "-p", str(port), *args], capture_output=True, text=True, check=False).stdout.strip()


def _redis_memory(port: int) -> int:
    found = re.search(r"used_memory:(\d+)", _redis_cli(port, "INFO", "memory"))
    return int(found.group(1)) if found else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaling", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--idle", type=int, default=30_000)
    parser.add_argument("--replicas", default="1,2,3")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the Redis overhead comparison")
    parser.add_argument("--overhead-seconds", type=float, default=3, help="seconds per measurement in a round")
    parser.add_argument("--only", choices=["throughput", "overhead", "idle"], action="append")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        print("wrk is not installed (apt-get install -y wrk)", file=sys.stderr)
        return 2
    only = set(args.only or ["throughput", "overhead", "idle"])
    out: list[Any] = []
    if "throughput" in only:
        out += ["## Through haproxy, 50 sessions, 50 connections", "",
                *anyio.run(throughput, [int(n) for n in args.replicas.split(",")], args.seconds, args.connections), ""]
    if "overhead" in only:
        out += ["## Redis overhead against the memory store (interleaved, median of rounds)", "",
                *anyio.run(overhead, args.overhead_seconds, args.rounds), ""]
    if "idle" in only:
        out += ["## Idle sessions across 3 replicas", "", *anyio.run(idle, args.idle), ""]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
