"""What the "Not matched yet" line of search_tools is worth: recall once a model searches the clauses it names.

    nice -n 19 python -m benchmarks.followups [--semantic] [--half even|odd] [--sweep]
    nice -n 19 python -m benchmarks.followups --tools M/tools.jsonl --queries M/queries.jsonl --every 7 \\
        --splits single [--half even|odd]      # false alarms on short single-need requests (MetaTool)

Each request goes through the `search_tools` meta-tool as served (limit 5). Per request: R@5 as served; then
"recall after follow-ups", the needed tools found in the union of the five returned and, for each clause the line
names, the first five `search_tools` returns for that clause alone (what an agent told to do so would get back).
A named clause "leads to a miss" when its own five hold a needed tool that the request's five did not. `--sweep`
replays the line at other thresholds from the same searches (each clause's best share among the five is in the
outcome), so the threshold is chosen on one half and confirmed on the other.

By default it reads only the dev set in this repository (`benchmarks/data/multiserver`, long and multi splits).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lazytools.evaluate import LabelledQuery, read_queries
from lazytools.search import Results, build_index
from lazytools.search.needs import ANSWERED_SHARE, MAX_UNANSWERED, Need, unanswered
from lazytools.server.metatools import search_tools
from lazytools.sources.jsonl import load_jsonl_catalog

__all__ = ["Request", "Summary", "main", "measure", "summarise"]

DEV = Path(__file__).parent / "data" / "multiserver"
LIMIT = 5
SHARES = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
SIMILARITIES = (0.0, 0.3, 0.35, 0.4, 0.45)


@dataclass(frozen=True, slots=True)
class Request:
    """One labelled request as served: its five, its clauses' best shares, and each clause's own five."""

    query: LabelledQuery
    returned: list[str]
    needs: tuple[Need, ...]
    listed: list[str]
    """The clauses the served line names."""
    alone: dict[str, list[str]]
    """Each clause's own first five (for every clause, so other thresholds can be replayed)."""

    def covered(self, tools: set[str]) -> int:
        return sum(1 for needed in self.query.relevant if needed & tools)


@dataclass(frozen=True, slots=True)
class Summary:
    requests: int
    with_line: int
    listed: int
    leading: int
    """Listed clauses whose own five hold a needed tool the request's five miss."""
    recall: float
    after: float
    every_clause: float
    """Recall if every clause were searched on its own: the most follow-ups could add."""

    def row(self, label: str) -> str:
        precision = self.leading / self.listed if self.listed else 0.0
        return (f"{label:<10} {self.requests:>4} {self.with_line / self.requests:>9.3f} "
                f"{self.listed / self.requests:>7.2f} {precision:>9.3f} {self.recall:>6.3f} {self.after:>6.3f} "
                f"{self.every_clause:>6.3f}")


HEADER = f"{'':<10} {'n':>4} {'has line':>9} {'listed':>7} {'precision':>9} {'R@5':>6} {'after':>6} {'all cl':>6}"


def measure(tools: Path, queries: Sequence[LabelledQuery], *, semantic: bool) -> list[Request]:
    loaded = load_jsonl_catalog(tools)
    index = build_index(loaded.catalog, semantic=semantic)

    def served(text: str) -> Results:
        return search_tools(loaded.catalog, index, {"query": text, "limit": LIMIT}, surface="dynamic",
                            default_limit=LIMIT, max_limit=LIMIT, bridge=False)

    def ids(outcome: Results) -> list[str]:
        return [loaded.ids[entry.name] for entry in outcome.returned][:LIMIT]

    requests: list[Request] = []
    for query in queries:
        outcome = served(query.query)
        # The served line's own needs; without embeddings search_tools measures none, so they are asked for here
        # (the same hits) to show what the line would do.
        needs = outcome.needs or index.find(query.query, limit=LIMIT, needs=True).needs
        alone = {need.text: ids(served(need.text)) for need in needs}
        requests.append(Request(query, ids(outcome), needs, outcome.unmatched, alone))
    return requests


def summarise(requests: Sequence[Request], pick: Callable[[Request], list[str]]) -> Summary:
    """Figures when the line names `pick(request)` for each request."""
    with_line = listed = leading = 0
    recall = after = every = 0.0
    for request in requests:
        five = set(request.returned)
        named = pick(request)
        with_line += bool(named)
        listed += len(named)
        union = set(five)
        for clause in named:
            own = set(request.alone[clause])
            leading += any(needed & own and not needed & five for needed in request.query.relevant)
            union |= own
        everything = five.union(*request.alone.values())
        total = len(request.query.relevant)
        recall += request.covered(five) / total
        after += request.covered(union) / total
        every += request.covered(everything) / total
    n = len(requests)
    return Summary(n, with_line, listed, leading, recall / n, after / n, every / n)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tools", type=Path, default=DEV / "tools.jsonl")
    parser.add_argument("--queries", type=Path, default=DEV / "queries.jsonl")
    parser.add_argument("--splits", default="long,multi", help="comma-separated splits (default: long,multi)")
    parser.add_argument("--every", type=int, default=1, help="keep every Nth single-need query (MetaTool: 7)")
    parser.add_argument("--half", choices=("even", "odd"))
    parser.add_argument("--semantic", action="store_true")
    parser.add_argument("--sweep", action="store_true", help="replay the line at other thresholds")
    args = parser.parse_args(argv)
    splits = args.splits.split(",")
    queries = [q for q in read_queries(args.queries, every=args.every, half=args.half) if q.split in splits]
    requests = measure(args.tools, queries, semantic=args.semantic)
    mode = "BM25 + semantic" if args.semantic else "BM25"
    print(f"{mode}, {args.queries}, splits {args.splits}" + (f", {args.half} half" if args.half else "")
          + f": {len(requests)} requests; line at share < {ANSWERED_SHARE}, at most {MAX_UNANSWERED} clauses")
    print(HEADER)
    for split in splits:
        part = [r for r in requests if r.query.split == split]
        if part:
            print(summarise(part, lambda r: r.listed).row(split))
    if len(splits) > 1:
        print(summarise(requests, lambda r: r.listed).row("all"))
    if args.sweep:
        print("\nsweep (all listed splits together): share below, cosine at least")
        print(HEADER)
        for similarity in SIMILARITIES if args.semantic else (0.0,):
            for share in SHARES:
                def pick(request: Request, share: float = share, similarity: float = similarity) -> list[str]:
                    needs = request.needs if args.semantic else [replace(n, similarity=1.0) for n in request.needs]
                    return unanswered(needs, share, similarity)

                print(summarise(requests, pick).row(f"{share:.1f} {similarity:.2f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
