"""What a policy costs: per call (the principal's grant, its view of the catalog, the name lookup, the argument
constraints and the rate limit, as one tools/call pays them) and per search (search_tools over the principal's
view of the index against the same search without a policy), with 1,000 rules over a 1,000-tool catalog.

The policy: 1,000 rules, each for one group, allowing one server's tools by pattern and denying a few by name, with
an argument constraint on every tenth; the principal belongs to 10 of the groups. A second figure has every rule
apply to the principal (`who = ["*"]`), the worst case for building its view (built once per policy and catalog
version, then cached). The token check is measured by `python -m benchmarks.auth` (a known token: ~1.5 µs, the
HTTP edge ~20 µs); add it to the per-call figure here.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from lazytools.catalog import Catalog, Group
from lazytools.identity import Principal, acting_as
from lazytools.policy.file import PolicyFile
from lazytools.policy.limits import MemoryRateLimiter
from lazytools.search import SearchIndex
from lazytools.server.access import Gate
from lazytools.server.metatools import search_tools

from .search import synthetic_catalog, synthetic_queries
from .stats import percentiles

__all__ = ["policy_benchmarks", "policy_text"]


def policy_text(rules: int, servers: list[str], *, everyone: bool = False) -> str:
    lines = ['default = "deny"', "calls_per_minute = 1000000"]
    for i in range(rules):
        server = servers[i % len(servers)]
        who = '"*"' if everyone else f'"group:g{i}"'
        lines += ["[[rules]]", f"who = [{who}]",
                  f'allow = {{ tools = ["{server}__*"] }}',
                  f'deny = {{ tools = ["{server}__delete_{i}", "{server}__purge_*_{i}"] }}']
        if i % 10 == 0:
            lines.append(f'arguments = [{{ tools = ["{server}__export_*"], argument = "path", '
                         f'under = ["/data/{i}"], optional = true }}]')
    return "\n".join(lines) + "\n"


def policy_benchmarks(quick: bool = False, rounds: int | None = None) -> str:
    rounds = rounds or (2_000 if quick else 20_000)
    entries = synthetic_catalog(1_000)
    catalog = Catalog()
    for server in sorted({entry.group for entry in entries}):
        catalog.set_group(Group(server), [entry for entry in entries if entry.group == server])
    servers = sorted({entry.group for entry in entries})
    index = SearchIndex(list(catalog))
    principal = Principal(name="alice", kind="oauth", subject="alice", issuer="https://idp",
                          groups=frozenset(f"g{i}" for i in range(0, 1_000, 100)))
    lines = ["## Policy (1,000 rules, 1,000 tools)"]
    with tempfile.TemporaryDirectory() as tmp:
        for label, everyone in (("10 of 1,000 rules apply", False), ("all 1,000 rules apply", True)):
            path = Path(tmp) / f"policy-{everyone}.toml"
            path.write_text(policy_text(1_000, servers, everyone=everyone))
            gate = Gate(catalog, PolicyFile(path, max_bytes=16 * 1024 * 1024), principal)
            started = time.perf_counter()
            with acting_as(principal):
                access = gate.access()
                index_view = access.index(index)
            built = time.perf_counter() - started
            visible = access.catalog
            name = next(entry.name for entry in visible if "__export_" not in entry.name)
            per_call = _per_call(gate, principal, name, rounds)
            p50, p99 = percentiles(per_call)
            lines.append(f"{label}: per call p50 {p50 * 1e3:.4f} ms, p99 {p99 * 1e3:.4f} ms ({rounds} runs); "
                         f"the principal's view built once in {built * 1e3:.1f} ms ({len(visible)} tools visible)")
            queries = synthetic_queries(list(catalog), 60 if quick else 300)
            bare, restricted = _search_times([(catalog, index), (visible, index_view)], queries)
            lines.append(f"{label}: search_tools p50 {restricted:.3f} ms with the policy, {bare:.3f} ms without "
                         f"({restricted / bare:.2f}x)")
    return "\n".join(lines)


def _per_call(gate: Gate, principal: Principal, name: str, rounds: int) -> list[float]:
    """What tools/call adds: the Access (is it ready, the grant, the cached view), the name's lookup in it, the
    argument constraints, and the rate limiter's count (memory)."""
    import anyio

    limiter = MemoryRateLimiter()
    arguments: dict[str, Any] = {"path": "/data/0/report.csv"}
    samples: list[float] = []

    async def run() -> None:
        with acting_as(principal):
            for _ in range(rounds):
                started = time.perf_counter()
                gate.warm(principal)  # AccessMiddleware's check
                access = gate.access()
                entry = access.catalog.get(name)
                access.check_arguments(entry, arguments)
                grant = gate.grant()
                assert grant is not None and grant.calls_per_minute is not None
                await limiter.hit(principal.key, grant.calls_per_minute)
                samples.append(time.perf_counter() - started)

    anyio.run(run)
    return samples


def _search_times(pairs: list[tuple[Catalog, SearchIndex]], queries: list[str]) -> list[float]:
    """p50 ms of each (catalog, index) pair over `queries`, the pairs alternating query by query so that a busy
    machine slows them alike."""

    def search(catalog: Catalog, index: SearchIndex, query: str) -> None:
        search_tools(catalog, index, {"query": query}, surface="proxy", default_limit=5, max_limit=20, bridge=True)

    for query in queries[:20]:
        for catalog, index in pairs:
            search(catalog, index, query)
    samples: list[list[float]] = [[] for _ in pairs]
    for query in queries:
        for (catalog, index), times in zip(pairs, samples, strict=True):
            started = time.perf_counter()
            search(catalog, index, query)
            times.append((time.perf_counter() - started) * 1000)
    return [percentiles(times)[0] for times in samples]


if __name__ == "__main__":
    import sys

    print(policy_benchmarks(quick="--quick" in sys.argv))
