"""Latency of the semantic mode's embedders: search p50/p95 at 1,000 tools, index build cold and from the cache.

    nice python -m benchmarks.embedders [--tools 1000] [--embedders bm25,wordllama,minilm,minilm+wordllama]

Not part of the package or the tests (speed belongs here, not in unit tests). The catalog is the synthetic one of
`benchmarks/search.py` (a gateway in front of many MCP servers); the queries mix what models send: a few words, a
sentence, and multi-step tasks whose needs are each embedded.
Each search is timed alone, as the server runs it (one query, one thread for the encoder), in wall time and in
the process's CPU time: on shared cores the first grows with the machine's load, the second hardly.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from lazytools.search import SearchIndex, build_index
from lazytools.search.embedders import VectorCache, embedder_named

from .search import synthetic_catalog
from .stats import percentile

QUERIES = [
    "create an issue", "send a slack message", "list open pull requests", "weather in Paris", "git commit",
    "convert a video to mp4", "find invoices from last month that are unpaid",
    "take a screenshot of the dashboard and post it to the team channel",
    "I need to know which customers cancelled their subscription this week",
    "search the docs for how to rotate an API key",
    "List the open issues labelled bug in the backend repository, create a branch for the oldest one, "
    "then post a summary with links to the engineering channel on Slack.",
    "Find the failing deployment in the staging cluster, fetch its last 200 log lines, open a ticket in Jira "
    "with the error, and email the on-call engineer a link to the ticket.",
    "Read the quarterly sales table from the database, build a chart of revenue by region, save it as an "
    "image in the shared drive, and add a note to the finance project with the link.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20, help="times each query is searched")
    parser.add_argument("--embedders", default="bm25,wordllama,minilm,minilm+wordllama")
    args = parser.parse_args()
    entries = synthetic_catalog(args.tools)
    print(f"{args.tools} tools, {len(QUERIES)} queries x {args.rounds} rounds")
    print(f"{'mode':<18} {'load s':>7} {'build cold s':>12} {'build cached s':>14} {'p50 ms':>7} {'p95 ms':>7} "
          f"{'long p50 ms':>11} {'cpu p50 ms':>10} {'cpu p95 ms':>10}")
    for name in args.embedders.split(","):
        load = cold = warm = 0.0
        if name == "bm25":
            index = SearchIndex(entries)
        else:
            started = time.perf_counter()
            model = embedder_named(name)
            load = time.perf_counter() - started
            with tempfile.TemporaryDirectory() as folder:
                started = time.perf_counter()
                index = build_index(entries, semantic=True, embedder=model, cache_dir=Path(folder))
                cold = time.perf_counter() - started
                started = time.perf_counter()  # a restart: same texts, vectors read from the cache
                again = build_index(entries, semantic=True, embedder=model, cache_dir=Path(folder))
                warm = time.perf_counter() - started
                assert VectorCache(Path(folder)).path_for(model).is_file() and again.semantic
        times: list[float] = []
        cpu: list[float] = []
        long: list[float] = []
        for _ in range(args.rounds):
            for query in QUERIES:
                started, started_cpu = time.perf_counter(), time.process_time()
                index.search(query, limit=5)
                elapsed = (time.perf_counter() - started) * 1000
                cpu.append((time.process_time() - started_cpu) * 1000)
                times.append(elapsed)
                if len(query) > 120:
                    long.append(elapsed)
        print(f"{name:<18} {load:7.2f} {cold:12.2f} {warm:14.3f} {statistics.median(times):7.2f} "
              f"{percentile(times, 95):7.2f} {statistics.median(long):11.2f} {statistics.median(cpu):10.2f} "
              f"{percentile(cpu, 95):10.2f}")


if __name__ == "__main__":
    main()
