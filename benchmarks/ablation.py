"""What each ranking stage and each query rule is worth: R@5 as served with it switched off, one at a time.

    python -m benchmarks.ablation [--semantic | --only-semantic] [--sets dev,metatool,toolalpaca,restbench]
                                  [--variants producer,typos,stop_words.function_words,...] [--config JSON]
                                  [--json FILE]

Each catalog's index is built once; every variant ranks with `SearchIndex.configured(config.without(name))`
(`config`: `--config`, the defaults when not given) through `search_tools` at the served limit (5), exactly as
`lazytools eval` and `benchmarks.searchsets` serve it. A stop-word list (`stop_words.<list>`) is part of how the
index reads the tools, so that variant builds another index with the list emptied, for tools and requests alike.
The sets: the multi-server dev sets (benchmarks/data/multiserver, pooled: every query of every set once), MetaTool
(every 7th single-tool query and all two-tool queries; /work/shared/eval-data/metatool or `--metatool DIR`, skipped
when absent), ToolAlpaca (benchmarks/data/toolalpaca) and RestBench (benchmarks/data/restbench, or the
search-edges worktree's copy until it is merged; skipped when absent). Each set on its even and odd half.

R@5 as served counts every tool the result names (its five places and the tools added after them: a deliverable's
writer, a prerequisite's producer, suggestions); R@5 of the first five places alone is printed beside it. Printed:
R@5 with everything on, then per variant the change when it is off (positive: the stage or rule gains
that much), and the verdict of docs/search-log.md's bar: a rule is kept where it gains on most of the sets it
changes and loses more than .005 on none (either half).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from lazytools.evaluate import HALVES, LabelledQuery, QueryResult, read_queries, served_search
from lazytools.search import analysis, build_index, documents, phrases, query, tables
from lazytools.search.config import RULES, STAGES, RankingConfig, ranking_config
from lazytools.sources.jsonl import load_jsonl_catalog, read_servers, servers_beside

from .searchsets import DATA, LIMIT, METATOOL, METATOOL_EVERY, SETS

if TYPE_CHECKING:
    from lazytools.search.embedders import Embedder, Vectors

HERE = Path(__file__).parent / "data"
RESTBENCH_ELSEWHERE = Path("/work/wt/search-edges/benchmarks/data/restbench")
BM25_ONLY: frozenset[str] = frozenset()
"""Stages that do nothing with the semantic extra (and `SEMANTIC_ONLY` nothing without it)."""
SEMANTIC_ONLY = frozenset({"semantic"})
LOSS = 0.005
"""A variant whose removal gains more than this on any set's half (the rule loses it) fails the bar."""


@dataclass(frozen=True, slots=True)
class LabelledSet:
    name: str
    tools: Path
    queries: tuple[tuple[Path, int], ...]
    """(queries file, keep every Nth single-tool query): a pooled set reads several files."""


def labelled_sets(names: Sequence[str], metatool: Path | None) -> list[LabelledSet]:
    found: list[LabelledSet] = []
    for name in names:
        if name == "dev":
            found.append(LabelledSet("dev", DATA / "tools.jsonl", tuple((DATA / f"{s}.jsonl", 1) for s in SETS)))
        elif name == "metatool" and metatool is not None and (metatool / "queries.jsonl").is_file():
            found.append(LabelledSet("metatool", metatool / "tools.jsonl",
                                     ((metatool / "queries.jsonl", METATOOL_EVERY),)))
        elif name == "toolalpaca":
            found.append(LabelledSet("toolalpaca", HERE / "toolalpaca" / "tools.jsonl",
                                     ((HERE / "toolalpaca" / "queries.jsonl", 1),)))
        elif name == "restbench":
            folder = next((f for f in (HERE / "restbench", RESTBENCH_ELSEWHERE) if (f / "queries.jsonl").is_file()),
                          None)
            if folder is not None:
                found.append(LabelledSet("restbench", folder / "tools.jsonl", ((folder / "queries.jsonl", 1),)))
            else:
                print("restbench: not found, skipped", file=sys.stderr)
        elif name == "metatool":
            print("metatool: not found, skipped (--metatool DIR)", file=sys.stderr)
    return found


class RememberingEmbedder:
    """An embedder that encodes each text once: every variant asks for the same requests' vectors."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self.name, self.fingerprint = inner.name, inner.fingerprint
        self._known: dict[str, npt.NDArray[np.float32]] = {}

    @property
    def dimensions(self) -> int:
        return self._inner.dimensions

    def embed(self, texts: Sequence[str]) -> Vectors:
        missing = [text for text in dict.fromkeys(texts) if text not in self._known]
        if missing:
            for text, row in zip(missing, self._inner.embed(missing), strict=True):
                self._known[text] = row
        return np.stack([self._known[text] for text in texts]) if texts else self._inner.embed(texts)



TABLES: tuple[str, ...] = ("stop_words.function_words", "stop_words.request_filler")
"""Tables no config switches off, because the index is built with them (a tool's text loses its stop words too):
each variant builds another index with one list of data/stop_words.json emptied, for the tools and the requests."""
_STOP_USERS = (analysis, documents, phrases)
"""The modules that read `analysis.STOP_WORDS`."""


@contextmanager
def without_stop_words(name: str) -> Iterator[None]:
    """The stop-word list `name` ("stop_words.<list>") emptied while the block runs, tools and requests alike."""
    lists = [key for key in tables.table("stop_words") if not key.startswith("_")]
    kept = frozenset().union(*(tables.words("stop_words", key) for key in lists if key != name.removeprefix("stop_words.")))
    saved = [module.STOP_WORDS for module in _STOP_USERS]
    try:
        for module in _STOP_USERS:
            module.STOP_WORDS = kept  # type: ignore[attr-defined]
        _clear_text_caches()
        yield
    finally:
        for module, value in zip(_STOP_USERS, saved, strict=True):
            module.STOP_WORDS = value  # type: ignore[attr-defined]
        _clear_text_caches()


def _clear_text_caches() -> None:
    analysis._tokenized.cache_clear()
    query._clauses.cache_clear()


def variants(semantic: bool, chosen: Sequence[str] | None) -> list[str]:
    names = [name for name in (*STAGES, *RULES, *TABLES)
             if not (semantic and name in BM25_ONLY) and not (not semantic and name in SEMANTIC_ONLY)]
    return names if chosen is None else [name for name in chosen if name in names]  # in the order asked


SERVED = 1000
"""Every tool a result names: the ranked places and any added after them (a writer, a producer, suggestions)."""


def recall(results: Sequence[QueryResult], k: int = SERVED) -> float:
    return sum(r.recall(k) for r in results) / len(results) if results else 0.0


def measure(labelled: LabelledSet, names: Sequence[str], *, semantic: bool,
            base: RankingConfig | None = None) -> dict[str, dict[str, float]]:
    """variant ("" for everything on) -> half -> R@5 as served; the index is built once."""
    beside = servers_beside(labelled.tools)
    loaded = load_jsonl_catalog(labelled.tools, servers=read_servers(beside) if beside is not None else None)
    index = build_index(loaded.catalog, semantic=semantic)
    if index.embedder is not None and index.vectors is not None:
        index.use_embeddings(RememberingEmbedder(index.embedder), index.vectors)
    halves: dict[str, list[LabelledQuery]] = {
        half: [q for path, every in labelled.queries for q in read_queries(path, every=every, half=half)]
        for half in HALVES}
    figures: dict[str, dict[str, float]] = {}
    for name in ["", *names]:
        with without_stop_words(name) if name in TABLES else nullcontext():
            if name in TABLES:
                view = build_index(loaded.catalog, config=base or RankingConfig())
                if index.embedder is not None and index.vectors is not None:
                    view.use_embeddings(index.embedder, index.vectors)
            else:
                view = index.configured((base or RankingConfig()).without(*([name] if name else [])))
            search = served_search(loaded.catalog, view, limit=LIMIT, ids=loaded.ids)
            for half, queries in halves.items():
                results = [QueryResult(q, search(q.query).returned) for q in queries]
                figures.setdefault(name, {})[half] = recall(results)
                figures.setdefault(f"{name}@{LIMIT}", {})[half] = recall(results, LIMIT)
        print(f"  {labelled.name} {name or 'everything on'}: as served "
              + " / ".join(f"{figures[name][h]:.4f}" for h in HALVES) + f", first {LIMIT} "
              + " / ".join(f"{figures[f'{name}@{LIMIT}'][h]:.4f}" for h in HALVES), file=sys.stderr, flush=True)
    return figures


def verdict(gains: dict[str, dict[str, float]]) -> str:
    """keep / remove / neutral by the bar: `gains` set -> half -> R@5 with the rule minus without it."""
    losing = [name for name, by in gains.items() if min(by.values()) < -LOSS]
    changed = {name: sum(by.values()) for name, by in gains.items() if any(abs(v) > 1e-9 for v in by.values())}
    if not changed:
        return "neutral"
    gaining = [name for name, total in changed.items() if total > 1e-9]
    if losing:
        return f"remove (loses on {', '.join(losing)})"
    if len(gaining) * 2 > len(changed) and len(gaining) >= 1:
        return f"keep (gains on {len(gaining)} of {len(changed)} changed)"
    return f"remove (gains on {len(gaining)} of {len(changed)} changed)"


def table(figures: dict[str, dict[str, dict[str, float]]], names: Sequence[str]) -> str:
    """The markdown table of R@5 as served: everything on, then each variant's gain (on minus off)."""
    sets = list(figures)
    head = ["off", *[f"{s} {h}" for s in sets for h in HALVES], "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines.append("| (everything on: R@5 as served) | "
                 + " | ".join(f"{figures[s][''][h]:.3f}" for s in sets for h in HALVES) + " | |")
    lines.append(f"| (everything on: first {LIMIT} places) | "
                 + " | ".join(f"{figures[s][f'@{LIMIT}'][h]:.3f}" for s in sets for h in HALVES) + " | |")
    for name in names:
        gains = {s: {h: figures[s][""][h] - figures[s][name][h] for h in HALVES} for s in sets if name in figures[s]}
        cells = [f"{gains[s][h]:+.3f}" if s in gains else "-" for s in sets for h in HALVES]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {verdict(gains)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--semantic", action="store_true", help="also measure with the semantic extra")
    parser.add_argument("--only-semantic", action="store_true", help="measure with the semantic extra only")
    parser.add_argument("--sets", default="dev,metatool,toolalpaca,restbench", help="comma-separated")
    parser.add_argument("--variants", help=f"comma-separated, of {', '.join((*STAGES, *RULES, *TABLES))} (default: "
                        "all; none: only everything on)")
    parser.add_argument("--metatool", type=Path, help=f"MetaTool folder; default {METATOOL} when it exists")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--config", default="", help="the ranking every variant starts from (JSON, as "
                        "LAZYTOOLS_SEARCH_RANKING; default: the defaults)")
    args = parser.parse_args(argv)
    chosen = [] if args.variants == "none" else args.variants.split(",") if args.variants else None
    unknown = [name for name in chosen or () if name not in (*STAGES, *RULES, *TABLES)]
    if unknown:
        parser.error(f"unknown variants: {', '.join(unknown)}")
    metatool = args.metatool or (METATOOL if METATOOL.is_dir() else None)
    base = ranking_config(args.config)
    modes = ([] if args.only_semantic else [False]) + ([True] if args.semantic or args.only_semantic else [])
    everything: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for semantic in modes:
        mode = "semantic" if semantic else "BM25"
        names = variants(semantic, chosen)
        figures: dict[str, dict[str, dict[str, float]]] = {}
        for labelled in labelled_sets(args.sets.split(","), metatool):
            print(f"measuring {labelled.name}, {mode} ...", file=sys.stderr, flush=True)
            figures[labelled.name] = measure(labelled, names, semantic=semantic, base=base)
        everything[mode] = figures
        print(f"\n{mode}: R@{LIMIT} as served with everything on, then the change each stage or rule brings "
              f"(on minus off), even / odd halves:\n")
        print(table(figures, names))
    if args.json is not None:
        args.json.write_text(json.dumps(everything, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
