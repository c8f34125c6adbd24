"""CPU cost of a served search for a long request: 1,000 characters at 500 tools, BM25 and semantic.

    python -m benchmarks.longrequests [--requests 40] [--chars 1000] [--tools 500] [--compare-with TREE] [--rounds 1]

The catalog is the dev catalog's first 500 tools (benchmarks/data/multiserver: real servers' tools); the requests
are its long multi-step tasks joined, in a fixed order, into distinct requests of about 1,000 characters (each
holds a dozen needs or more). Each is sent once through `search_tools` as a dynamic session serves it (argument
check, selection, the result's text; no usage history), and the process CPU time of that call is taken, so another
program's load changes the figure less than a wall clock would. `--compare-with TREE` measures a second lazytools
source tree (e.g. `git archive` of the commit before a change, unpacked) in the same run, one child process per
tree and mode, alternating, for a before/after on one machine at one time; `--rounds N` repeats that N times and
pools each tree's samples, in turn first and second, so that a busy spell of the machine falls on both
trees rather than on one.

    python -m benchmarks.longrequests --quality [--requests 70] [--chars 1000]

measures what such requests find instead: the same joining, each request labelled with the needs of the tasks that
lie wholly inside it (`relevant_tool_ids`: one need per item), served over the whole dev catalog with its servers;
the share of those needs some returned tool answers, BM25 and semantic (docs/search-log.md, "Round 4c").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .stats import percentile

__all__ = ["labelled_requests", "long_requests", "main", "measure", "needs_found"]

DATA = Path(__file__).parent / "data" / "multiserver"


def long_requests(count: int, chars: int) -> list[str]:
    """`count` distinct requests of about `chars` characters (cut at a word), from the dev set's long tasks."""
    tasks = [json.loads(line)["query"] for line in (DATA / "queries.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip() and json.loads(line).get("split") == "long"]
    requests: list[str] = []
    for number in range(count):
        text, step = "", number
        while len(text) < chars:
            text += tasks[step % len(tasks)].strip() + "\n"
            step += 7 + number // len(tasks)  # a different sequence of tasks for every request
        requests.append(text[:chars].rsplit(" ", 1)[0])
    return requests


def labelled_requests(count: int, chars: int) -> list[tuple[str, list[frozenset[str]]]]:
    """`long_requests`' requests, each with the needs (sets of tool ids, any of which answers) of its whole tasks."""
    rows = [json.loads(line) for line in (DATA / "queries.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line).get("split") == "long"]
    labelled = []
    for number in range(count):
        text, step, needs = "", number, []
        while len(text) < chars:
            row = rows[step % len(rows)]
            if len(text) + len(row["query"].strip()) + 1 <= chars:
                needs += [frozenset([need] if isinstance(need, str) else need) for need in row["relevant_tool_ids"]]
            text += row["query"].strip() + "\n"
            step += 7 + number // len(rows)
        labelled.append((text[:chars].rsplit(" ", 1)[0], needs))
    return labelled


def needs_found(semantic: bool, requests: list[tuple[str, list[frozenset[str]]]], cache_dir: Path) -> tuple[int, int]:
    """(needs some returned tool answers, needs) over `requests`, served over the whole dev catalog."""
    from lazytools.search import build_index
    from lazytools.server.metatools import search_tools
    from lazytools.settings import Settings
    from lazytools.sources.jsonl import load_jsonl_catalog, read_servers

    loaded = load_jsonl_catalog(DATA / "tools.jsonl", servers=read_servers(DATA / "servers.jsonl"))
    index = build_index(loaded.catalog, semantic=semantic, cache_dir=cache_dir)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    found = total = 0
    for text, needs in requests:
        outcome = search_tools(loaded.catalog, index, {"query": text}, surface="dynamic",
                               default_limit=settings.search_limit, max_limit=settings.search_max_limit, bridge=False,
                               floor=settings.relevance_floor)
        returned = {loaded.ids[entry.name] for entry in outcome.returned}
        found += sum(bool(need & returned) for need in needs)
        total += len(needs)
    return found, total


def measure(semantic: bool, tools: int, requests: list[str], cache_dir: Path) -> list[float]:
    """CPU ms of each request's served search, in order."""
    from lazytools.search import build_index
    from lazytools.server.metatools import search_tools
    from lazytools.settings import Settings
    from lazytools.sources.jsonl import load_jsonl_catalog

    with tempfile.TemporaryDirectory() as scratch:
        cut = Path(scratch) / "tools.jsonl"
        lines = (DATA / "tools.jsonl").read_text(encoding="utf-8").splitlines()[:tools]
        cut.write_text("\n".join(lines) + "\n", encoding="utf-8")
        catalog = load_jsonl_catalog(cut).catalog
    index = build_index(catalog, semantic=semantic, cache_dir=cache_dir)
    index.vocabulary.prepare()  # the spelling table, which the server builds with the index (search/live.py)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]

    def served(query: str) -> object:
        return search_tools(catalog, index, {"query": query}, surface="dynamic", default_limit=settings.search_limit,
                            max_limit=settings.search_max_limit, bridge=settings.dynamic_bridge,
                            floor=settings.relevance_floor, enable_at_most=settings.max_enabled)

    served("warm the caches a running server has: the stemmer, the spelling table, the encoder's first run")
    samples = []
    for query in requests:  # each once: a repeated request would be answered from the index's recent answers
        start = time.process_time_ns()
        served(query)
        samples.append((time.process_time_ns() - start) / 1e6)
    return samples


_CHILD = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import lazytools  # from the tree measured, before this tree's benchmarks are put in front
sys.path.insert(0, sys.argv[2])
from benchmarks.longrequests import long_requests, measure
print(json.dumps(measure(sys.argv[3] == "semantic", int(sys.argv[4]), long_requests(int(sys.argv[5]), int(sys.argv[6])),
                         Path(sys.argv[7]))))
"""


def _measured_in(tree: Path, mode: str, args: argparse.Namespace, cache: Path) -> list[float]:
    here = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tree.resolve()), str(here), mode, str(args.tools),
                           str(args.requests), str(args.chars), str(cache)],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": "", "OPENBLAS_NUM_THREADS": "1"})
    samples: list[float] = json.loads(done.stdout)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.longrequests", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=40, help="distinct requests (default 40)")
    parser.add_argument("--chars", type=int, default=1000, help="characters per request (default 1000)")
    parser.add_argument("--tools", type=int, default=500, help="tools of the dev catalog served (default 500)")
    parser.add_argument("--modes", default="bm25,semantic", help="bm25, semantic or both (default)")
    parser.add_argument("--compare-with", type=Path, metavar="TREE", help="a second lazytools source tree")
    parser.add_argument("--rounds", type=int, default=1, help="measurements of each tree and mode, alternating, "
                        "pooled (default 1)")
    parser.add_argument("--quality", action="store_true", help="the share of labelled needs found instead of CPU")
    args = parser.parse_args(argv)
    if args.quality:
        labelled = labelled_requests(args.requests, args.chars)
        with tempfile.TemporaryDirectory() as cache:
            for mode in args.modes.split(","):
                found, total = needs_found(mode == "semantic", labelled, Path(cache))
                print(f"{mode:<9} needs found {found}/{total} = {found / total:.3f} ({len(labelled)} requests of "
                      f"~{args.chars} characters)")
        return 0
    here = Path(__file__).resolve().parent.parent
    trees = {"this tree": here, **({str(args.compare_with): args.compare_with} if args.compare_with else {})}
    figures: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as cache:  # tool vectors, embedded once and shared by both trees
        for mode in args.modes.split(","):
            for round_ in range(args.rounds):
                for name in (list(trees) if round_ % 2 == 0 else list(trees)[::-1]):  # ABBA: drift falls on both
                    print(f"measuring {name}, {mode} ({round_ + 1}/{args.rounds}) ...", file=sys.stderr, flush=True)
                    figures.setdefault((name, mode), []).extend(_measured_in(trees[name], mode, args, Path(cache)))
    per_round = f", in each of {args.rounds} rounds" if args.rounds > 1 else ""
    print(f"## search_tools as served for requests of ~{args.chars} characters at {args.tools} tools: CPU ms per "
          f"request ({args.requests} distinct requests, each once{per_round}); load average at the end: "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'tree':<40} {'mode':<9} {'p50':>8} {'p95':>8}")
    for (name, mode), samples in figures.items():
        print(f"{name[:40]:<40} {mode:<9} {percentile(samples, 50):>8.2f} {percentile(samples, 95):>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
