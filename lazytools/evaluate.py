"""Search quality on labelled queries, as served: Recall@k and MRR by tool id, and the worst misses.

The catalog is loaded from JSONL into a real `Catalog`, indexed as the server indexes it, and every query goes
through the `search_tools` meta-tool itself at the server's limit: the figures describe exactly the tools a model
gets back, in their order (`--rankings` writes them down, one JSON line per query).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .catalog import Catalog
from .entry import ToolEntry
from .errors import ConfigError
from .safetext import clip
from .search import SearchIndex, build_index
from .search.config import configured_ranking
from .search.embedders import DEFAULT_EMBEDDER, check_embedder
from .search.fit import DEFAULT_FIT, FitConfig
from .server.metatools import MAX_QUERY_CHARS, RELEVANCE_FLOOR, search_tools
from .settings import Settings
from .sources.jsonl import load_jsonl_catalog, read_jsonl, read_servers, servers_beside

__all__ = [
    "CUTOFFS",
    "HALVES",
    "UNKNOWN_SHOWN",
    "LabelledQuery",
    "QueryResult",
    "Scores",
    "Served",
    "cutoffs_for",
    "evaluate",
    "latency_line",
    "read_queries",
    "run_eval",
    "served_search",
]

logger = logging.getLogger("lazytools.eval")

CUTOFFS = (1, 5, 10)
"""Recall is reported at these ranks (those within the limit, and the limit itself); MRR is cut at the limit."""

Ranker = Callable[[str], Sequence[str]]
"""A query in, tool ids out, best first: what `search_tools` returned."""


def cutoffs_for(limit: int) -> tuple[int, ...]:
    """The ranks worth reporting for results of at most `limit` tools: R@10 of a top five says nothing new."""
    return tuple(sorted({k for k in CUTOFFS if k < limit} | {limit}))


@dataclass(frozen=True, slots=True)
class LabelledQuery:
    id: str
    query: str
    relevant: tuple[frozenset[str], ...]
    """The tools the query needs; each is a set of equivalent ids, any one of which counts (the same read_file
    on two servers)."""
    split: str


@dataclass(frozen=True, slots=True)
class QueryResult:
    query: LabelledQuery
    ranked: list[str]

    def recall(self, k: int) -> float:
        top = set(self.ranked[:k])
        return sum(1 for needed in self.query.relevant if needed & top) / len(self.query.relevant)

    def reciprocal_rank(self, k: int = CUTOFFS[-1]) -> float:
        wanted = frozenset().union(*self.query.relevant)
        for rank, tool_id in enumerate(self.ranked[:k], 1):
            if tool_id in wanted:
                return 1.0 / rank
        return 0.0


@dataclass(slots=True)
class Scores:
    """Means over queries of Recall@k and MRR@depth."""

    label: str
    results: list[QueryResult] = field(default_factory=list)
    cutoffs: tuple[int, ...] = CUTOFFS

    def recall(self, k: int) -> float:
        return sum(r.recall(k) for r in self.results) / len(self.results) if self.results else 0.0

    @property
    def mrr(self) -> float:
        depth = self.cutoffs[-1]
        return sum(r.reciprocal_rank(depth) for r in self.results) / len(self.results) if self.results else 0.0

    def row(self) -> str:
        recalls = "  ".join(f"{self.recall(k):.3f}" for k in self.cutoffs)
        return f"{self.label:<8} {len(self.results):>6}  {recalls}  {self.mrr:.3f}"


HALVES = ("even", "odd")
"""A query set cut in two, to tune on one half and check on the other: each split's kept queries, numbered from
0 in file order, go to the even or the odd half by their number."""


def _relevant(item: Any) -> frozenset[str] | None:
    """One label: an id, or a non-empty list of equivalent ids."""
    items = item if isinstance(item, list) else [item]
    if not items or not all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in items):
        return None
    return frozenset(str(i) for i in items)


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
        text, labels = record.get("query"), record.get("relevant_tool_ids")
        relevant = [_relevant(item) for item in labels] if isinstance(labels, list) else []
        if not isinstance(text, str) or not relevant or None in relevant:
            raise ConfigError(
                f"{path}:{number}: needs 'query' (string) and 'relevant_tool_ids' (non-empty list of ids, or of "
                "lists of equivalent ids)"
            )
        if not text.strip():  # search_tools refuses both: one such line would stop the run after the others
            raise ConfigError(f"{path}:{number}: 'query' is empty")
        if len(text) > MAX_QUERY_CHARS:
            raise ConfigError(f"{path}:{number}: 'query' has {len(text):,} characters; search_tools takes at most "
                              f"{MAX_QUERY_CHARS:,}")
        needed = tuple(dict.fromkeys(r for r in relevant if r is not None))
        kind = record.get("split") or ("single" if len(needed) == 1 else "multi")
        if split is not None and kind != split:
            continue
        if kind == "single":
            singles += 1
            if (singles - 1) % every:
                continue
        queries.append(LabelledQuery(str(record.get("id", number)), text, needed, str(kind)))
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


def evaluate(
    queries: Sequence[LabelledQuery], ranker: Ranker, *, cutoffs: tuple[int, ...] = CUTOFFS
) -> dict[str, Scores]:
    """Scores per split, plus `all` when there is more than one split."""
    by_split: dict[str, Scores] = {}
    everything = Scores("all", cutoffs=cutoffs)
    for query in queries:
        result = QueryResult(query, list(ranker(query.query)))
        by_split.setdefault(query.split, Scores(query.split, cutoffs=cutoffs)).results.append(result)
        everything.results.append(result)
    if len(by_split) > 1:
        by_split["all"] = everything
    return by_split


def _worst(results: Sequence[QueryResult], limit: int, depth: int) -> list[QueryResult]:
    """Imperfect queries, worst first: no relevant tool returned, then the lowest reciprocal ranks."""
    imperfect = [r for r in results if r.reciprocal_rank(depth) < 1.0 or r.recall(depth) < 1.0]
    return sorted(imperfect, key=lambda r: (r.reciprocal_rank(depth), r.recall(depth)))[:limit]


def report(scores: Mapping[str, Scores], *, title: str, misses: int, extra: str = "") -> str:
    first = next(iter(scores.values()), None)
    cutoffs = first.cutoffs if first is not None else CUTOFFS
    depth = cutoffs[-1]
    header = f"{'split':<8} {'n':>6}  " + "  ".join(f"R@{k:<3}" for k in cutoffs) + f"  MRR@{depth}"
    lines = [title, header, *(s.row() for s in scores.values())]
    if extra:
        lines.append(extra.strip("\n"))
    everything = scores.get("all") or first
    worst = _worst(everything.results, misses, depth) if misses > 0 and everything is not None else []
    if worst:
        lines.append(f"\nWorst {len(worst)} (relevant → top 3 returned):")
        for result in worst:
            wanted = ", ".join("|".join(sorted(ids)) for ids in result.query.relevant)
            got = ", ".join(result.ranked[:3]) or "nothing"
            lines.append(f"- [{result.query.id}] {result.query.query!r}\n    {wanted} → {got}")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Served:
    """One search as served: every tool the result names, in order, and those it enabled."""

    returned: list[str]
    enabled: list[str]


def served_search(
    catalog: Catalog,
    index: SearchIndex,
    *,
    limit: int,
    ids: Mapping[str, str] | None = None,
    floor: float = RELEVANCE_FLOOR,
    max_limit: int | None = None,
    places: bool = True,
    fit: FitConfig = DEFAULT_FIT,
) -> Callable[[str], Served]:
    """A query → what `search_tools` returns for it with the relevance `floor` (the meta-tool itself, not a copy of
    its rules), as ids (`ids`: public name → id; the names themselves by default): with `places`, a search the
    model gives no limit, served with the default `limit`, so a request of several needs gets its places up to
    `max_limit` (the server's maximum, by default its default maximum); else a search that asks for `limit`."""
    most = Settings.model_fields["search_max_limit"].default if max_limit is None else max_limit

    def tool_ids(entries: Sequence[ToolEntry]) -> list[str]:
        return [ids[entry.name] if ids is not None else entry.name for entry in entries]

    def search(text: str) -> Served:
        outcome = search_tools(
            catalog, index, {"query": text} if places else {"query": text, "limit": limit},
            surface="dynamic", default_limit=limit, max_limit=max(limit, most), bridge=False, floor=floor, fit=fit,
        )
        return Served(tool_ids(outcome.returned), tool_ids(outcome.enabled))

    return search


def latency_line(milliseconds: Sequence[float]) -> str:
    """The report's line on speed, from each query's `search_tools` call (wall clock, in this process): quality and
    speed from one run."""
    ordered = sorted(milliseconds)

    def at(share: float) -> float:  # nearest rank: a value some query took
        return ordered[max(0, math.ceil(share * len(ordered)) - 1)] if ordered else 0.0

    return f"latency per query as served: p50 {at(0.5):.2f} ms, p95 {at(0.95):.2f} ms"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


UNKNOWN_SHOWN = 5
"""Unknown label ids quoted in the warning; the count says how many there are."""


def _check_labels(queries: Sequence[LabelledQuery], known: set[str], tools_path: Path) -> None:
    """Labels naming no tool of the catalog (a typo, another catalog's ids) can never be found: a warning with the
    first few and a count when some are, refused when none is known (every figure would be 0, telling nothing)."""
    labels = [ids for query in queries for ids in query.relevant]
    unknown = list(dict.fromkeys(i for ids in labels if not ids & known for i in sorted(ids)))
    if not unknown:
        return
    shown = ", ".join(repr(clip(i, 60)) for i in unknown[:UNKNOWN_SHOWN]) + (", ..." if len(unknown) > UNKNOWN_SHOWN
                                                                              else "")
    if all(not ids & known for ids in labels):
        raise ConfigError(f"no labelled tool is in {tools_path} (ids not found: {len(unknown)}, {shown}); are the "
                          "queries for another catalog?")
    logger.warning("labelled tool ids not in %s: %d (%s); the queries needing them count as misses", tools_path,
                   len(unknown), shown)


def _same_file(one: Path, other: Path) -> bool:
    """The same file on disk, whatever the two paths (relative, through a symlink, a hard link)."""
    try:
        return os.path.samefile(one, other)
    except OSError:  # one of them does not exist (yet): not the same file
        return False


def run_eval(
    tools_path: Path,
    queries_path: Path,
    *,
    every: int = 1,
    misses: int = 10,
    split: str | None = None,
    semantic: bool = False,
    half: str | None = None,
    limit: int | None = None,
    max_limit: int | None = None,
    rankings: Path | None = None,
    floor: float = RELEVANCE_FLOOR,
    embedder: str = DEFAULT_EMBEDDER,
    servers: Path | None = None,
    ranking: str = "",
) -> str:
    """The `lazytools eval` report: figures per split and the worst misses, from what `search_tools` returns at
    `limit` (default: the server's default limit, never above `max_limit`, the server's maximum); `rankings` receives
    each query's returned tool ids. `servers` describes the catalog's servers (see `read_servers`); by default
    `servers.jsonl` beside the tools file, when there is one, as a gateway would read its upstreams'."""
    for given in (tools_path, queries_path):
        if rankings is not None and _same_file(rankings, given):
            raise ConfigError(f"--rankings {rankings} is the input file {given}: it would be overwritten; name "
                              "another file")
    depth = Settings.model_fields["search_limit"].default if limit is None else limit
    most = Settings.model_fields["search_max_limit"].default if max_limit is None else max_limit
    if depth < 1:
        raise ConfigError("--limit must be at least 1")
    if depth > most:  # the server refuses it: figures "as served" at a limit no search can ask for mean nothing
        raise ConfigError(f"--limit {depth} is above what search_tools accepts, {most} (--search-max-limit / "
                          "LAZYTOOLS_SEARCH_MAX_LIMIT)")
    if semantic:
        check_embedder(embedder)
    if servers is None:
        servers = servers_beside(tools_path)
    loaded = load_jsonl_catalog(tools_path, servers=read_servers(servers) if servers is not None else None)
    index = build_index(loaded.catalog, semantic=semantic, embedder=embedder,
                        config=configured_ranking(ranking))
    queries = read_queries(queries_path, every=every, split=split, half=half)
    if not queries:
        raise ConfigError(f"{queries_path}: no queries selected")
    _check_labels(queries, set(loaded.ids.values()), tools_path)
    # Without --limit, as a model asks (no limit: the needs decide the places); with it, as a model asking for it.
    search = served_search(loaded.catalog, index, limit=depth, ids=loaded.ids, floor=floor, max_limit=most,
                           places=limit is None)
    served: dict[str, Served] = {}
    took: list[float] = []

    def ranker(text: str) -> list[str]:
        start = time.perf_counter()
        served[text] = search(text)
        took.append((time.perf_counter() - start) * 1000)
        return served[text].returned

    scores = evaluate(queries, ranker, cutoffs=cutoffs_for(depth))
    outcomes = [served[q.query] for q in queries]
    whole = [QueryResult(q, served[q.query].returned) for q in queries]
    enabled = [QueryResult(q, served[q.query].enabled) for q in queries]
    extra = (
        f"\nEverything returned (mean {_mean([len(s.returned) for s in outcomes]):.2f} tools, suggested producers "
        f"included): R {_mean([r.recall(len(r.ranked)) for r in whole]):.3f}. Enabled alone (mean "
        f"{_mean([len(s.enabled) for s in outcomes]):.2f} tools): R@{depth} {_mean([r.recall(depth) for r in enabled]):.3f}."
        f"\n{latency_line(took)}"
    )
    if rankings is not None:
        lines = [
            json.dumps({"id": q.id, "returned": served[q.query].returned, "enabled": served[q.query].enabled},
                       ensure_ascii=False)
            for q in queries
        ]
        try:
            rankings.write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"Cannot write {rankings}: {exc.strerror or exc}") from exc
    mode = "BM25 + semantic" if semantic else "BM25"
    title = (
        f"Search quality ({mode}) as served at limit {depth} on {len(loaded.catalog)} tools from "
        f"{tools_path.name}, {len(queries)} queries from {queries_path.name}"
        + (f" (1 in {every} single-tool queries)" if every > 1 and split != "multi" else "")
        + (f", {half} half" if half is not None else "")
        + (f", servers described by {servers.name}" if servers is not None else "")
    )
    return report(scores, title=title, misses=misses, extra=extra)
