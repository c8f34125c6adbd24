"""Search quality on labelled queries: Recall@1/5/10 and MRR@10 by tool id, and the worst misses.

The catalog is loaded from JSONL into a real `Catalog` and searched with the same `SearchIndex` the server
builds, so the figures describe what a model gets from `search_tools`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError
from .sources.jsonl import load_jsonl_catalog, read_jsonl
from .search import build_index

__all__ = ["CUTOFFS", "HALVES", "LabelledQuery", "QueryResult", "Scores", "evaluate", "read_queries", "run_eval"]

CUTOFFS = (1, 5, 10)
"""Recall is reported at these ranks; MRR is cut at the last one."""

Ranker = Callable[[str], Sequence[str]]
"""A query in, tool ids out, best first (at least `max(CUTOFFS)` of them when there are that many)."""


@dataclass(frozen=True, slots=True)
class LabelledQuery:
    id: str
    query: str
    relevant: frozenset[str]
    split: str


@dataclass(frozen=True, slots=True)
class QueryResult:
    query: LabelledQuery
    ranked: list[str]

    def recall(self, k: int) -> float:
        return len(self.query.relevant.intersection(self.ranked[:k])) / len(self.query.relevant)

    def reciprocal_rank(self, k: int = CUTOFFS[-1]) -> float:
        for rank, tool_id in enumerate(self.ranked[:k], 1):
            if tool_id in self.query.relevant:
                return 1.0 / rank
        return 0.0


@dataclass(slots=True)
class Scores:
    """Means over queries of Recall@k and MRR@10."""

    label: str
    results: list[QueryResult] = field(default_factory=list)

    def recall(self, k: int) -> float:
        return sum(r.recall(k) for r in self.results) / len(self.results) if self.results else 0.0

    @property
    def mrr(self) -> float:
        return sum(r.reciprocal_rank() for r in self.results) / len(self.results) if self.results else 0.0

    def row(self) -> str:
        recalls = "  ".join(f"{self.recall(k):.3f}" for k in CUTOFFS)
        return f"{self.label:<8} {len(self.results):>6}  {recalls}  {self.mrr:.3f}"


HALVES = ("even", "odd")
"""A query set cut in two, to tune on one half and check on the other: each split's kept queries, numbered from
0 in file order, go to the even or the odd half by their number."""


def read_queries(
    path: Path, *, every: int = 1, split: str | None = None, half: str | None = None
) -> list[LabelledQuery]:
    """Labelled queries; `every` keeps every Nth query of the single-tool split (file order, first one kept);
    `half` ("even" or "odd") then keeps every other query of each split."""
    if every < 1:
        raise ConfigError("--every must be at least 1")
    if half is not None and half not in HALVES:
        raise ConfigError(f"--half must be one of {', '.join(HALVES)}")
    queries: list[LabelledQuery] = []
    singles = 0
    for number, record in read_jsonl(path):
        text, relevant = record.get("query"), record.get("relevant_tool_ids")
        if not isinstance(text, str) or not isinstance(relevant, list) or not relevant:
            raise ConfigError(f"{path}:{number}: needs 'query' (string) and 'relevant_tool_ids' (non-empty list)")
        ids = frozenset(str(item) for item in relevant)
        kind = record.get("split") or ("single" if len(ids) == 1 else "multi")
        if split is not None and kind != split:
            continue
        if kind == "single":
            singles += 1
            if (singles - 1) % every:
                continue
        queries.append(LabelledQuery(str(record.get("id", number)), text, ids, str(kind)))
    return queries if half is None else _half(queries, HALVES.index(half))


def _half(queries: Sequence[LabelledQuery], parity: int) -> list[LabelledQuery]:
    seen: dict[str, int] = {}
    kept: list[LabelledQuery] = []
    for query in queries:
        number = seen.get(query.split, 0)
        seen[query.split] = number + 1
        if number % 2 == parity:
            kept.append(query)
    return kept


def evaluate(queries: Sequence[LabelledQuery], ranker: Ranker) -> dict[str, Scores]:
    """Scores per split, plus `all` when there is more than one split."""
    by_split: dict[str, Scores] = {}
    everything = Scores("all")
    for query in queries:
        result = QueryResult(query, list(ranker(query.query)))
        by_split.setdefault(query.split, Scores(query.split)).results.append(result)
        everything.results.append(result)
    if len(by_split) > 1:
        by_split["all"] = everything
    return by_split


def _worst(results: Sequence[QueryResult], limit: int) -> list[QueryResult]:
    """Imperfect queries, worst first: no relevant tool in the top 10, then the lowest reciprocal ranks."""
    imperfect = [r for r in results if r.reciprocal_rank() < 1.0 or r.recall(CUTOFFS[-1]) < 1.0]
    return sorted(imperfect, key=lambda r: (r.reciprocal_rank(), r.recall(CUTOFFS[-1])))[:limit]


def report(scores: Mapping[str, Scores], *, title: str, misses: int) -> str:
    header = f"{'split':<8} {'n':>6}  " + "  ".join(f"R@{k:<3}" for k in CUTOFFS) + "  MRR@10"
    lines = [title, header, *(s.row() for s in scores.values())]
    everything = scores.get("all") or next(iter(scores.values()), None)
    worst = _worst(everything.results, misses) if misses > 0 and everything is not None else []
    if worst:
        lines.append(f"\nWorst {len(worst)} (relevant → top 3 returned):")
        for result in worst:
            wanted = ", ".join(sorted(result.query.relevant))
            got = ", ".join(result.ranked[:3]) or "nothing"
            lines.append(f"- [{result.query.id}] {result.query.query!r}\n    {wanted} → {got}")
    return "\n".join(lines)


def run_eval(
    tools_path: Path,
    queries_path: Path,
    *,
    every: int = 1,
    misses: int = 10,
    split: str | None = None,
    semantic: bool = False,
    half: str | None = None,
) -> str:
    """The `lazytools eval` report: figures per split and the worst misses."""
    loaded = load_jsonl_catalog(tools_path)
    index = build_index(loaded.catalog, semantic=semantic)
    queries = read_queries(queries_path, every=every, split=split, half=half)
    if not queries:
        raise ConfigError(f"{queries_path}: no queries selected")
    depth = CUTOFFS[-1]

    def ranker(text: str) -> list[str]:
        return [loaded.ids[hit.entry.name] for hit in index.search(text, limit=depth)]

    mode = "BM25 + semantic" if semantic else "BM25"
    title = (
        f"Search quality ({mode}) on {len(loaded.catalog)} tools from {tools_path.name}, "
        f"{len(queries)} queries from {queries_path.name}"
        + (f" (1 in {every} single-tool queries)" if every > 1 and split != "multi" else "")
        + (f", {half} half" if half is not None else "")
    )
    return report(evaluate(queries, ranker), title=title, misses=misses)
