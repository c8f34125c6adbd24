"""Search that learns from use, evaluated offline: usage replayed from one half of the dev set's tasks, then R@5 as
served with and without the prior learnt from it.

    python -m benchmarks.learning [--history even|odd] [--semantic] [--sessions N]

History: every task of the history half is searched as served (no prior); its search is recorded with what it
returned and enabled, and each tool the task needs is recorded as called after it, in the task's order (of
equivalent tools, the one the search returned, else the first labelled: the one a user would have gone on to find),
in `--sessions` distinct sessions (3 by default: learning counts a pattern only once at least three sessions show it,
so one replay of each task, as if one user did it once, teaches nothing by design).
Then, with the prior built from those records, R@5 as served on:
- `usage.jsonl`: paraphrases (`paraphrase`) and related requests (`related`) of even-half tasks, written before any
  search ran on them (must lift);
- the other half of `queries.jsonl`, tasks the history never saw (must not drop);
- every set with an empty history (must equal the figures without learning).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from lazytools.catalog import Catalog
from lazytools.evaluate import LabelledQuery, cutoffs_for, evaluate, read_queries
from lazytools.learning.keys import hashed_terms
from lazytools.learning.prior import UsagePrior
from lazytools.learning.records import CallRecord, SearchRecord
from lazytools.search import SearchIndex, build_index
from lazytools.server.metatools import search_tools
from lazytools.sources.jsonl import load_jsonl_catalog

DATA = Path(__file__).parent / "data" / "multiserver"
LIMIT = 5


def _searcher(catalog: Catalog, index: SearchIndex, ids: dict[str, str],
              prior: UsagePrior | None) -> Callable[[str], tuple[list[str], list[str]]]:
    def search(text: str) -> tuple[list[str], list[str]]:
        outcome = search_tools(catalog, index, {"query": text, "limit": LIMIT}, surface="dynamic",
                               default_limit=LIMIT, max_limit=LIMIT, bridge=False, prior=prior)
        return [ids[e.name] for e in outcome.returned], [ids[e.name] for e in outcome.enabled]
    return search


def replay(history: Sequence[LabelledQuery], search: Callable[[str], tuple[list[str], list[str]]],
           names: dict[str, str], *, now: float, sessions: int = 3) -> UsagePrior:
    """The prior learnt from each task of `history` searched and its needed tools then called, in `sessions`
    distinct sessions."""
    prior = UsagePrior(origin=now)
    runs = [(f"replay-{number}-{copy}", task) for number, task in enumerate(history) for copy in range(sessions)]
    for session, task in runs:
        returned, enabled = search(task.query)
        terms = hashed_terms(task.query)
        prior.add(SearchRecord(id=session, at=now, session=session, terms=terms,
                               returned=tuple(names[i] for i in returned), enabled=tuple(names[i] for i in enabled)))
        before: str | None = None
        for need in task.relevant:
            chosen = next((i for i in returned if i in need), sorted(need)[0])
            tool = names[chosen]
            prior.add(CallRecord(at=now, session=session, tool=tool, ok=True, search=session, terms=terms,
                                 after=before))
            before = tool
    return prior


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", choices=["even", "odd"], default="even")
    parser.add_argument("--semantic", action="store_true")
    parser.add_argument("--sessions", type=int, default=3, help="distinct sessions each history task is replayed in")
    args = parser.parse_args(argv)
    loaded = load_jsonl_catalog(DATA / "tools.jsonl")
    catalog, ids = loaded.catalog, loaded.ids
    names = {tool_id: name for name, tool_id in ids.items()}
    index = build_index(catalog, semantic=args.semantic)
    other = "odd" if args.history == "even" else "even"
    history = read_queries(DATA / "queries.jsonl", half=args.history)
    now = time.time()
    prior = replay(history, _searcher(catalog, index, ids, None), names, now=now, sessions=args.sessions)
    sets = {
        "usage.jsonl": read_queries(DATA / "usage.jsonl"),
        f"queries.jsonl, {other} half": read_queries(DATA / "queries.jsonl", half=other),
        f"queries.jsonl, {args.history} half (the history itself)": history,
    }
    print(f"History: {len(history)} tasks of the {args.history} half, each in {args.sessions} sessions; {'semantic' if args.semantic else 'BM25'}; "
          f"R@{LIMIT} as served")
    print(f"{'set':<52} {'split':<11} {'no prior':>8} {'empty':>8} {'learnt':>8}")
    for label, queries in sets.items():
        runs = {}
        for name, used in (("none", None), ("empty", UsagePrior(origin=now)), ("learnt", prior)):
            search = _searcher(catalog, index, ids, used)
            runs[name] = evaluate(queries, lambda text: search(text)[0], cutoffs=cutoffs_for(LIMIT))
        for split in runs["none"]:
            row = [runs[name][split].recall(LIMIT) for name in ("none", "empty", "learnt")]
            print(f"{label:<52} {split:<11} {row[0]:8.3f} {row[1]:8.3f} {row[2]:8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
