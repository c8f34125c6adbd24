"""Every search-quality figure in one command: R@5 as served on every dev set, both halves, BM25 and semantic.

    python -m benchmarks.searchsets [--semantic] [--sets queries,confirm,...] [--metatool DIR] [--toolalpaca DIR]
        [--rankings DIR]

Each set of benchmarks/data/multiserver is run through `search_tools` exactly as `lazytools eval` runs it (the
meta-tool itself, the server's limit, 5), on its even and its odd half (`--half`), and one markdown table is printed:
a row per set and per split of a set with several, a column per half and mode. MetaTool (every 7th single-tool
query and all two-tool queries) is added when its folder exists: `--metatool DIR`, else
/work/shared/eval-data/metatool when present; it is never required. RestBench (benchmarks/data/restbench: TMDB and
Spotify endpoints, a held-out set no rule is tuned on) is always there; ToolAlpaca is added like MetaTool
(`--toolalpaca DIR`, else /work/shared/eval-data/toolalpaca when present). Out-of-scope requests have no R@5: their
figures come from `python -m benchmarks.nothingfits`. `--rankings DIR` writes each run's returned
ids (one JSONL per set, half and mode) to compare two commits query by query.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lazytools.evaluate import HALVES, Scores, cutoffs_for, evaluate, read_queries, served_search
from lazytools.search import build_index
from lazytools.search.config import DEFAULT, RankingConfig, configured_ranking
from lazytools.search.embedders import DEFAULT_EMBEDDER
from lazytools.settings import Settings
from lazytools.sources.jsonl import load_jsonl_catalog, read_servers, servers_beside

DATA = Path(__file__).parent / "data" / "multiserver"
SETS = ("queries", "confirm", "deliverables", "prereqs", "everyday", "crosslang", "phrasing", "questions", "misses",
        "crossserver", "eurolang")
"""The dev sets, each `<name>.jsonl` beside the dev catalog (`tools.jsonl`)."""
METATOOL = Path("/work/shared/eval-data/metatool")
METATOOL_EVERY = 7
TOOLALPACA = Path("/work/shared/eval-data/toolalpaca")
RESTBENCH = Path(__file__).parent / "data" / "restbench"
PUBLIC = ("metatool", "metatool-unseen", "toolalpaca", "restbench")
"""The public sets, each a catalog of its own."""
UNSEEN = Path(__file__).resolve().parent.parent / "scripts" / "encoder_metatool_heldout.txt"
"""The MetaTool tools held out of the fine-tuned encoder's training: `metatool-unseen` is every query wanting one of
them, over the whole MetaTool catalog. The `metatool` set holds queries of the other tools too, some of which the
encoder was trained on, so only this set compares that encoder with another fairly on MetaTool."""
LIMIT: int = Settings.model_fields["search_limit"].default


@dataclass(frozen=True, slots=True)
class Catalogue:
    name: str
    tools: Path
    sets: tuple[tuple[str, Path, int], ...]
    """(set name, queries file, keep every Nth single-tool query)"""
    wanting: frozenset[str] | None = None
    """Only the queries that want one of these tools (None: every query)."""


def _catalogues(sets: Sequence[str], metatool: Path | None, toolalpaca: Path | None = None) -> list[Catalogue]:
    chosen = tuple((name, DATA / f"{name}.jsonl", 1) for name in sets if name not in PUBLIC)
    found = [Catalogue("dev", DATA / "tools.jsonl", chosen)] if chosen else []
    if "metatool" in sets and metatool is not None:
        found.append(Catalogue("metatool", metatool / "tools.jsonl",
                               (("metatool", metatool / "queries.jsonl", METATOOL_EVERY),)))
    if "metatool-unseen" in sets and metatool is not None:
        found.append(Catalogue("metatool-unseen", metatool / "tools.jsonl",
                               (("metatool-unseen", metatool / "queries.jsonl", 1),), wanting=unseen_tools()))
    for name, folder in (("toolalpaca", toolalpaca), ("restbench", RESTBENCH)):
        if name in sets and folder is not None:
            found.append(Catalogue(name, folder / "tools.jsonl", ((name, folder / "queries.jsonl", 1),)))
    return found


def unseen_tools() -> frozenset[str]:
    """The MetaTool tools held out of the fine-tuned encoder's training (`UNSEEN`)."""
    lines = UNSEEN.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def measure(catalogue: Catalogue, *, semantic: bool, rankings: Path | None = None,
            embedder: str = DEFAULT_EMBEDDER, config: RankingConfig = DEFAULT) -> dict[tuple[str, str, str], Scores]:
    """(set, split, half) -> scores, as served at the default limit; the index is built once per catalog."""
    beside = servers_beside(catalogue.tools)  # what its servers say of themselves, as `lazytools eval` reads it
    loaded = load_jsonl_catalog(catalogue.tools, servers=read_servers(beside) if beside is not None else None)
    index = build_index(loaded.catalog, semantic=semantic, embedder=embedder, config=config)
    search = served_search(loaded.catalog, index, limit=LIMIT, ids=loaded.ids)
    figures: dict[tuple[str, str, str], Scores] = {}
    for name, path, every in catalogue.sets:
        for half in HALVES:
            queries = read_queries(path, every=every, half=half)
            if catalogue.wanting is not None:
                queries = [q for q in queries if any(need & catalogue.wanting for need in q.relevant)]
            returned: dict[str, list[str]] = {}

            def ranker(text: str) -> list[str]:
                returned[text] = search(text).returned
                return returned[text]

            for split, scores in evaluate(queries, ranker, cutoffs=cutoffs_for(LIMIT)).items():
                figures[(name, split, half)] = scores
            if rankings is not None:
                rankings.mkdir(parents=True, exist_ok=True)
                mode = "semantic" if semantic else "bm25"
                lines = [json.dumps({"id": q.id, "returned": returned[q.query]}, ensure_ascii=False) for q in queries]
                (rankings / f"{name}-{half}-{mode}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return figures


SERVED = 1000
"""R as served counts every tool a result names: its places (more for a request of several needs) and the tools
added after them (a deliverable's writer, a prerequisite's producer, suggestions)."""


def table(figures: dict[str, dict[tuple[str, str, str], Scores]], k: int = LIMIT) -> str:
    """One markdown table: a row per set (and per split where a set has several), R@k per half and mode."""
    modes = [mode for mode in ("BM25", "semantic") if mode in figures]
    rows: list[tuple[str, str]] = list(dict.fromkeys((s, split) for by in figures.values() for s, split, _ in by))
    splits: dict[str, list[str]] = {}
    for name, split in rows:
        splits.setdefault(name, []).append(split)
    head = ["set", "n (even / odd)"] + [f"{mode} {half}" for mode in modes for half in HALVES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, kinds in splits.items():
        shown = [k for k in kinds if k != "all"] + (["all"] if "all" in kinds else [])
        for split in shown:
            label = name if len(shown) == 1 else (f"{name}, all" if split == "all" else f"{name}, {split}")
            counts = []
            for half in HALVES:
                any_mode = next((by[(name, split, half)] for by in figures.values() if (name, split, half) in by),
                                None)
                counts.append(str(len(any_mode.results)) if any_mode is not None else "-")
            cells = [label, " / ".join(counts)]
            for mode in modes:
                for half in HALVES:
                    scores = figures[mode].get((name, split, half))
                    cells.append(f"{scores.recall(k):.3f}" if scores is not None else "-")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--semantic", action="store_true", help="also measure with the semantic extra")
    parser.add_argument("--only-semantic", action="store_true", help="measure with the semantic extra only")
    parser.add_argument("--sets", help=f"comma-separated, of {', '.join((*SETS, *PUBLIC))} (default: all)")
    parser.add_argument("--metatool", type=Path, help=f"MetaTool folder (tools.jsonl, queries.jsonl); default "
                        f"{METATOOL} when it exists")
    parser.add_argument("--toolalpaca", type=Path, help=f"ToolAlpaca folder (tools.jsonl, queries.jsonl); default "
                        f"{TOOLALPACA} when it exists")
    parser.add_argument("--rankings", type=Path, help="write each run's returned ids under this folder")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER,
                        help=f"the semantic mode's embedder, as LAZYTOOLS_EMBEDDER names it (default {DEFAULT_EMBEDDER})")
    parser.add_argument("--config", default="", help="the ranking (JSON, or a file of it, as LAZYTOOLS_SEARCH_RANKING; "
                        "default: the defaults)")
    args = parser.parse_args(argv)
    config = configured_ranking(args.config)
    sets = args.sets.split(",") if args.sets else [*SETS, *PUBLIC]
    unknown = [name for name in sets if name not in (*SETS, *PUBLIC)]
    if unknown:
        parser.error(f"unknown sets: {', '.join(unknown)}")
    metatool = args.metatool or (METATOOL if METATOOL.is_dir() else None)
    if args.metatool is not None and not (args.metatool / "queries.jsonl").is_file():
        parser.error(f"--metatool {args.metatool}: no queries.jsonl there")
    modes = ([] if args.only_semantic else [False]) + ([True] if args.semantic or args.only_semantic else [])
    figures: dict[str, dict[tuple[str, str, str], Scores]] = {}
    for semantic in modes:
        mode = "semantic" if semantic else "BM25"
        toolalpaca = args.toolalpaca or (TOOLALPACA if TOOLALPACA.is_dir() else None)
        for catalogue in _catalogues(sets, metatool, toolalpaca):
            print(f"measuring {catalogue.name}, {mode} ...", file=sys.stderr, flush=True)
            figures.setdefault(mode, {}).update(measure(catalogue, semantic=semantic, rankings=args.rankings,
                                                         embedder=args.embedder, config=config))
    print(f"R@{LIMIT} as served (`search_tools`, limit {LIMIT}): the first {LIMIT} tools named, even / odd halves of "
          "each split:\n")
    print(table(figures))
    print(f"\nR@{LIMIT} as served, every tool named (the places, more for several needs, and those added after "
          "them), even / odd halves:\n")
    print(table(figures, SERVED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
