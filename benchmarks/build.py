"""Building the search index at scale: CPU seconds and memory of a BM25 `SearchIndex` over 1k / 10k / 100k tools,
beside a naive BM25 index (rank-bm25's `BM25Okapi`) over the same tools in the same run.

    python -m benchmarks.build [--sizes 1000,10000,100000] [--rounds 3]

The catalogs are the dev set's real tools (benchmarks/data/multiserver/tools.jsonl, 654 tools over 60-odd servers)
copied as often as needed, each copy a server of its own (`github_3`) whose tools carry the copy's number in their
names, so every tool is distinct while the descriptions stay those of real MCP servers.

The naive baseline splits each tool's name, description and parameter text into the same terms lazytools indexes
(`tokenize`) and hands them to `BM25Okapi`. CPU seconds are process time of the build alone (a build per round,
min / median / max over the rounds); memory is tracemalloc's, in a separate build of each (tracing slows a build):
the peak during the build and what the index keeps once built. The word tables loaded when search is imported
are measured apart, in a fresh interpreter, and so is the Chinese dictionary a process reads on its first Chinese
text (the dev set's catalog has Chinese-described tools): before, it fell into the first timed build.

A third row is the rebuild a live index does when one server changes its tools (`changed_server`: one server's
tools described anew, moved to the end as `Catalog.set_group` orders them): the other servers' segments are kept
from the build before (`search.segments`), so only that server's tools are read again. Its memory column is what a
live index keeps besides the index: every server's segments.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from lazytools.catalog import Catalog
from lazytools.entry import ToolEntry
from lazytools.sources.jsonl import load_jsonl_catalog

__all__ = ["changed_server", "main", "naive_index", "scaled_catalog"]

TOOLS = Path(__file__).parent / "data" / "multiserver" / "tools.jsonl"
MIB = 1024 * 1024


def scaled_catalog(size: int) -> list[ToolEntry]:
    """`size` distinct tools: the dev catalog's, copy after copy, each copy's servers and names numbered."""
    catalog: Catalog = load_jsonl_catalog(TOOLS).catalog
    real = list(catalog)
    entries: list[ToolEntry] = []
    copy = 0
    while len(entries) < size:
        for entry in real[: size - len(entries)]:
            if copy == 0:
                entries.append(entry)
                continue
            upstream = entry.upstream_name or entry.name
            entries.append(ToolEntry(name=f"{entry.name}_{copy}", group=f"{entry.group}_{copy}",
                                     description=entry.description, input_schema=entry.input_schema,
                                     call=entry.call, title=entry.title, upstream_name=f"{upstream}_{copy}"))
        copy += 1
    return entries


def naive_index(entries: list[ToolEntry]) -> Any:
    """rank-bm25's BM25Okapi over each tool's name, description and parameter text, split as lazytools splits."""
    from rank_bm25 import BM25Okapi

    from lazytools.search.analysis import tokenize

    def text(entry: ToolEntry) -> str:
        properties = entry.input_schema.get("properties") or {}
        parameters = " ".join(f"{name} {spec.get('description', '') if isinstance(spec, dict) else ''}"
                              for name, spec in properties.items())
        return f"{entry.upstream_name or entry.name} {entry.description} {parameters}"

    return BM25Okapi([tokenize(text(entry)) for entry in entries])


def changed_server(entries: list[ToolEntry]) -> list[ToolEntry]:
    """`entries` with the tools of one server (the middle tool's) described anew and moved to the end."""
    group = entries[len(entries) // 2].group
    mine = [replace(entry, description=f"{entry.description} Described anew.") for entry in entries
            if entry.group == group]
    return [entry for entry in entries if entry.group != group] + mine


def rebuilder(entries: list[ToolEntry]) -> Callable[[list[ToolEntry]], Any]:
    """A build of a changed catalog that keeps `entries`' segments, as a live index does."""
    from lazytools.search import SearchIndex
    from lazytools.search.segments import catalog_segments

    previous = {segment.group: segment for segment in catalog_segments(entries)}

    def rebuild(changed: list[ToolEntry]) -> Any:
        return SearchIndex(changed, segments=catalog_segments(changed, previous))

    return rebuild


def segments_of(entries: list[ToolEntry]) -> Any:
    from lazytools.search.segments import catalog_segments

    return catalog_segments(entries)


def lazytools_index(entries: list[ToolEntry]) -> Any:
    from lazytools.search import SearchIndex

    return SearchIndex(entries)


def _cpu(build: Callable[[list[ToolEntry]], Any], entries: list[ToolEntry]) -> float:
    gc.collect()
    start = time.process_time()
    index = build(entries)
    spent = time.process_time() - start
    del index
    return spent


def _memory(build: Callable[[list[ToolEntry]], Any], entries: list[ToolEntry]) -> tuple[float, float]:
    """MiB: tracemalloc's peak during the build, and what the built index still holds."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    index = build(entries)
    gc.collect()
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del index
    return (peak - before) / MIB, (kept - before) / MIB


_TABLES = """
import json, resource, sys, time, tracemalloc
tracemalloc.start()
start = time.process_time()
import lazytools.search
spent = time.process_time() - start
print(json.dumps([tracemalloc.get_traced_memory()[0] / 1048576, spent,
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]))
"""


def import_cost() -> tuple[float, float, float]:
    """In a fresh interpreter: MiB traced after `import lazytools.search`, its CPU seconds (traced), peak RSS MiB."""
    done = subprocess.run([sys.executable, "-c", _TABLES], capture_output=True, text=True, check=True)
    traced, spent, rss = json.loads(done.stdout)
    return traced, spent, rss


def _cell(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


REBUILT = "one server changed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-memory", action="store_true", help="CPU seconds only (tracing doubles the time)")
    args = parser.parse_args(argv)
    traced, spent, rss = import_cost()
    print(f"import lazytools.search: {traced:.1f} MiB traced, {spent:.2f} s CPU (traced), peak RSS {rss:.0f} MiB")
    from lazytools.search.crosslang import default_glossary

    start = time.process_time()
    default_glossary()  # read on the first Chinese text: by the first build, apart from every timed one
    print(f"CC-CEDICT, read once per process on the first Chinese text: {time.process_time() - start:.2f} s CPU")
    builders = {"naive BM25Okapi": naive_index, "SearchIndex": lazytools_index}
    print(f"{'tools':>7}  {'index':<18} {'build CPU s, median (min-max)':>30}  {'peak MiB':>9}  {'kept MiB':>9}")
    for size in (int(s) for s in args.sizes.split(",")):
        entries = scaled_catalog(size)
        lazytools_index(entries[:50])  # the tables and caches a running server has, loaded before timing
        changed = changed_server(entries)
        rebuild = rebuilder(entries)
        seconds: dict[str, list[float]] = {name: [] for name in [*builders, REBUILT]}
        for number in range(args.rounds):
            for name in list(builders) if number % 2 == 0 else list(reversed(builders)):
                seconds[name].append(_cpu(builders[name], entries))
            seconds[REBUILT].append(_cpu(rebuild, changed))
        for name, build in builders.items():
            peak, kept = (float("nan"), float("nan")) if args.no_memory else _memory(build, entries)
            print(f"{size:>7}  {name:<18} {_cell(seconds[name]):>30}  {peak:>9.1f}  {kept:>9.1f}", flush=True)
        peak, kept = (float("nan"), float("nan")) if args.no_memory else _memory(segments_of, entries)
        print(f"{size:>7}  {REBUILT:<18} {_cell(seconds[REBUILT]):>30}  {peak:>9.1f}  {kept:>9.1f}"
              "  (memory: the segments a live index keeps)", flush=True)
    print(f"{args.rounds} rounds, interleaved; load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
