"""When search says "nothing fits": the evidence per request, thresholds chosen on even halves, checked on odd ones.

    python -m benchmarks.nothingfits [--semantic] [--embedder NAME] [--signals FILE] [--from FILE] [--metatool DIR]
                                     [--toolalpaca DIR] [--weights lexical=.2,gap=.8,words=.035]

Every request of the in-scope sets (the dev sets, MetaTool, ToolAlpaca, RestBench) and of the out-of-scope sets
(`OUTSIDE`: benchmarks/data/multiserver/outofscope.jsonl for the dev catalog, benchmarks/data/bundled/outofscope.jsonl
for the bundled examples, and the held-out ones, benchmarks/data/bundled/heldout.jsonl and
benchmarks/data/toolalpaca/outofscope.jsonl) is searched once as `lazytools eval` serves it with "nothing fits"
off: its R@5 and its evidence (`search.fit`: lexical, and in semantic mode the encoder's cosine, gap, lift and
the closest outside tool's cosine) are kept (`--signals FILE` writes them, `--from FILE` reads them back instead of searching). Then:

- the thresholds are chosen on the even halves: the ones that say "nothing fits" for the most out-of-scope
  requests while the R@5 of every calibration set (the dev sets together, MetaTool, ToolAlpaca) loses at most
  MAX_LOSS (in semantic mode with each outside penalty of `OUTSIDE_PENALTIES`, the lightest first); RestBench,
  eurolang (`CHECK_ONLY`), the bundled catalog's requests and the held-out ones are never used to choose;
- the table gives, per half, the share of out-of-scope requests for which nothing is enabled, and every in-scope
  set's R@5 before and after, with the thresholds chosen and with the shipped ones (`DEFAULT_FIT`).
A request judged unfit gets nothing, so its R@5 becomes 0: what a wrongly refused request costs as served.
`--embedder` measures another embedder than the default (each embedder's cosines have a scale of their own, so the
thresholds chosen are for it; the shipped rule, chosen for the default, then refuses nothing).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lazytools.evaluate import HALVES, read_queries, served_search
from lazytools.search import build_index
from lazytools.search.embedders import DEFAULT_EMBEDDER
from lazytools.search.fit import DEFAULT_FIT, Evidence, FitConfig
from lazytools.search.language import ENGLISH
from lazytools.sources.jsonl import load_jsonl_catalog, read_servers, servers_beside

from .searchsets import DATA, LIMIT, METATOOL, METATOOL_EVERY, SETS

__all__ = ["Row", "choose", "main", "per_set", "rows_of", "table"]

HERE = Path(__file__).parent / "data"
TOOLALPACA = Path("/work/shared/eval-data/toolalpaca")
MAX_LOSS = 0.01
CALIBRATION = ("dev", "metatool", "toolalpaca")
"""The in-scope catalogs thresholds are chosen on (their sets' even halves); the others are checks only."""
CHECK_ONLY = frozenset({"eurolang"})
"""Sets of those catalogs that are checks only (benchmarks/data/multiserver/SOURCE.md: not for tuning)."""
OFF = FitConfig(enabled=False)
OUTSIDE = {
    "dev": (DATA / "outofscope.jsonl",),
    "toolalpaca": (HERE / "toolalpaca" / "outofscope.jsonl",),
    "bundled": (HERE / "bundled" / "outofscope.jsonl", HERE / "bundled" / "heldout.jsonl"),
}
"""Each catalog's out-of-scope requests (the file's stem names the set). Only the dev catalog's even half is used
to choose; ToolAlpaca's and the bundled catalog's `heldout` were written (and committed) before any search ran on
them and are never used to choose: the held-out check."""
HELD_OUT = (("toolalpaca", "outofscope"), ("bundled", "heldout"))


@dataclass(frozen=True, slots=True)
class Row:
    catalog: str
    name: str
    half: str
    id: str
    recall: float | None
    """R@5 as served with "nothing fits" off; None for an out-of-scope request."""
    lexical: float
    cosine: float | None
    second: float = 0.0
    coverage: float = 0.0
    gap: float | None = None
    lift: float | None = None
    words: float = 0.0
    embedder: str | None = None
    """The embedder that gave `cosine` (signal files written before it was kept: the default)."""
    outside: float | None = None
    """The closest outside tool's cosine (`Evidence.outside`; signal files written before it: none)."""
    language: str = ENGLISH
    """The request's language (`Evidence.language`; signal files written before it: English)."""


def _out_of_scope(path: Path, half: str) -> list[tuple[str, str]]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(str(r["id"]), str(r["query"])) for number, r in enumerate(records) if number % 2 == HALVES.index(half)]


def _bundled(semantic: bool, embedder: str) -> tuple[object, object]:
    from lazytools.app import bundled_catalog
    from lazytools.catalog import Catalog

    catalog = bundled_catalog(Path(tempfile.mkdtemp()), Catalog())
    index = build_index(catalog, semantic=semantic, embedder=embedder)
    index.measure_yardsticks()  # the lift is measured here though the shipped rule does not weigh it
    return catalog, index


def rows_of(semantic: bool, metatool: Path | None, toolalpaca: Path | None,
            embedder: str = DEFAULT_EMBEDDER) -> Iterable[Row]:
    """Every request's R@5 (fit off) and evidence, catalog by catalog."""
    catalogues: list[tuple[str, Path, list[tuple[str, Path, int]]]] = [
        ("dev", DATA / "tools.jsonl", [(name, DATA / f"{name}.jsonl", 1) for name in SETS]),
        ("restbench", HERE / "restbench" / "tools.jsonl", [("restbench", HERE / "restbench" / "queries.jsonl", 1)]),
    ]
    if metatool is not None:
        catalogues.append(("metatool", metatool / "tools.jsonl",
                           [("metatool", metatool / "queries.jsonl", METATOOL_EVERY)]))
    if toolalpaca is not None:
        catalogues.append(("toolalpaca", toolalpaca / "tools.jsonl", [("toolalpaca", toolalpaca / "queries.jsonl", 1)]))
    for name, tools, sets in catalogues:
        print(f"searching {name} ({'semantic' if semantic else 'BM25'}) ...", file=sys.stderr, flush=True)
        beside = servers_beside(tools)
        loaded = load_jsonl_catalog(tools, servers=read_servers(beside) if beside is not None else None)
        index = build_index(loaded.catalog, semantic=semantic, embedder=embedder)
        index.measure_yardsticks()  # the lift is measured here though the shipped rule does not weigh it
        search = served_search(loaded.catalog, index, limit=LIMIT, ids=loaded.ids, fit=OFF)
        for set_name, path, every in sets:
            for half in HALVES:
                for query in read_queries(path, every=every, half=half):
                    evidence = index.find(query.query, limit=LIMIT).evidence
                    returned = set(search(query.query).returned[:LIMIT])
                    recall = sum(1 for needed in query.relevant if needed & returned) / len(query.relevant)
                    yield _row(name, set_name, half, query.id, recall, evidence)
        for outside in OUTSIDE.get(name, ()):
            for half in HALVES:
                for qid, text in _out_of_scope(outside, half):
                    yield _row(name, outside.stem, half, qid, None, index.find(text, limit=LIMIT).evidence)
    print("searching the bundled examples ...", file=sys.stderr, flush=True)
    _, bundled = _bundled(semantic, embedder)
    for outside in OUTSIDE["bundled"]:
        for half in HALVES:
            for qid, text in _out_of_scope(outside, half):
                yield _row("bundled", outside.stem, half, qid, None, bundled.find(text, limit=LIMIT).evidence)  # type: ignore[attr-defined]


def _row(catalog: str, name: str, half: str, qid: str, recall: float | None, evidence: Evidence | None) -> Row:
    if evidence is None:  # nothing matched at all: no tool is returned either way
        return Row(catalog, name, half, qid, recall, 0.0, None)
    return Row(catalog, name, half, qid, recall, evidence.lexical, evidence.cosine, evidence.second,
               evidence.coverage, evidence.gap, evidence.lift, evidence.words, evidence.embedder, evidence.outside,
               evidence.language)


def _fits(row: Row, fit: FitConfig) -> bool:
    return fit.fits(_evidence(row))


def _embedder_of(rows: Iterable[Row]) -> str:
    return next((r.embedder or DEFAULT_EMBEDDER for r in rows if r.cosine is not None), DEFAULT_EMBEDDER)


def _group(row: Row) -> str:
    return "outofscope" if row.recall is None else row.catalog


def _loss(rows: Sequence[Row], fit: FitConfig) -> float:
    return sum(r.recall or 0.0 for r in rows if not _fits(r, fit)) / len(rows) if rows else 0.0


def choose(rows: Sequence[Row], semantic: bool, weighed: tuple[tuple[str, float], ...] | None = None) -> FitConfig:
    """The rule refusing the most even-half out-of-scope requests of the dev catalog while no calibration set's
    even half (each dev set on its own, MetaTool, ToolAlpaca) loses more than MAX_LOSS of R@5: in BM25 mode a
    lexical threshold, in semantic mode the weights of `WEIGHED` (non-negative, summing to 1, in steps of
    WEIGHT_STEP) and the threshold of their sum; with `weighed` given (semantic), only the threshold of its sum."""
    even = [r for r in rows if r.half == "even"]
    inside: dict[tuple[str, str], list[Row]] = {}
    for r in even:  # every set on its own: a small set refusing one request it answers loses more than .01
        if r.recall is not None and r.catalog in CALIBRATION and r.name not in CHECK_ONLY:
            inside.setdefault((r.catalog, r.name), []).append(r)
    outside = [r for r in even if r.recall is None and r.catalog == "dev"]
    embedder = _embedder_of(rows)
    if not semantic:
        return _chosen(outside, inside.values(), lambda r: r.lexical, lambda t: FitConfig(min_lexical=t))
    penalties = OUTSIDE_PENALTIES if any(r.outside is not None for r in rows) else OUTSIDE_PENALTIES[:1]
    if weighed is not None:
        every = [weighed]
    else:
        steps = round(1 / WEIGHT_STEP)
        every = [tuple((name, part / steps) for name, part in zip(WEIGHED, parts, strict=True) if part)
                 for parts in itertools.product(range(steps + 1), repeat=len(WEIGHED)) if sum(parts) == steps]
    best: tuple[float, FitConfig] = (-1.0, OFF)
    for weights in every:
        for penalty in penalties:  # the lightest penalty first: a heavier one must refuse more to be chosen
            fit = _threshold_of(outside, inside.values(), weights, embedder, penalty)
            caught = _share(outside, fit)
            if caught > best[0]:
                best = (caught, fit)
    return best[1]


def _threshold_of(outside: Sequence[Row], inside: Iterable[Sequence[Row]],
                  weights: tuple[tuple[str, float], ...], embedder: str = DEFAULT_EMBEDDER,
                  penalty: tuple[float, float] = (0.0, 0.0)) -> FitConfig:
    def make(threshold: float) -> FitConfig:
        return FitConfig(semantic_weights=weights, min_semantic=threshold, embedder=embedder,
                         outside_weight=penalty[0], outside_margin=penalty[1])

    probe = make(0.0)
    return _chosen(outside, inside, lambda r: probe.semantic_score(_evidence(r)), make)


OUTSIDE_PENALTIES = ((0.0, 0.0),) + tuple((weight, margin) for weight in (0.25, 0.5, 0.75, 1.0)
                                          for margin in (0.0, 0.05, 0.1, 0.15))
"""The outside penalties (`FitConfig.outside_weight`, `outside_margin`) the semantic rule may be chosen with, the
first none: measured only on signal files that hold the outside evidence."""


WEIGHED = ("lexical", "gap", "lift")
"""The evidence the semantic rule may weigh when choosing (the raw cosine, `second` and `coverage` separated nothing
more on the odd halves; docs/search-log.md, rounds 4b and 4c)."""
WEIGHT_STEP = 0.05


def _chosen(outside: Sequence[Row], inside: Iterable[Sequence[Row]], score: Callable[[Row], float],
            make: Callable[[float], FitConfig]) -> FitConfig:
    """The highest threshold on `score` (a request below it is refused) at which no `inside` set loses more than
    MAX_LOSS, floored to 4 decimals as it is stored, as `make` builds it."""
    bound = math.inf
    for group in inside:
        lost = 0.0
        for r in sorted(group, key=score):
            lost += (r.recall or 0.0) / len(group)
            if lost > MAX_LOSS + 1e-12:
                bound = min(bound, score(r))
                break
    if bound == math.inf:
        bound = max((score(r) for r in outside), default=0.0) + 1e-4
    return make(math.floor(bound * 1e4) / 1e4)  # below 0 too: an outside penalty can take a score under it


def _share(outside: Sequence[Row], fit: FitConfig) -> float:
    return sum(not _fits(r, fit) for r in outside) / len(outside) if outside else 0.0


def _evidence(row: Row) -> Evidence:
    embedder = (row.embedder or DEFAULT_EMBEDDER) if row.cosine is not None else None
    return Evidence(row.lexical, row.cosine, embedder=embedder,
                    second=row.second, coverage=row.coverage, gap=row.gap, lift=row.lift, words=row.words,
                    outside=row.outside, language=row.language)


def _outside(rows: Sequence[Row], sets: Sequence[tuple[str, str]]) -> list[Row]:
    return [r for r in rows if r.recall is None and (r.catalog, r.name) in sets]


OUTSIDE_COLUMNS = {"dev": (("dev", "outofscope"),), "bundled": (("bundled", "outofscope"),), "held out": HELD_OUT}


def table(rows: Sequence[Row], fits: dict[str, FitConfig]) -> str:
    lines = ["| thresholds | half | out of scope: nothing enabled (" + " / ".join(OUTSIDE_COLUMNS) + ") | "
             + " | ".join(f"{name} R@5 before → after" for name in ("dev", "metatool", "toolalpaca", "restbench"))
             + " |", "|" + "---|" * 7]
    for label, fit in fits.items():
        for half in HALVES:
            part = [r for r in rows if r.half == half]
            cells = [label, half]
            shares = []
            for sets in OUTSIDE_COLUMNS.values():
                outside = _outside(part, sets)
                shares.append(f"{sum(not _fits(r, fit) for r in outside) / len(outside):.2f} ({len(outside)})"
                              if outside else "-")
            cells.append(" / ".join(shares))
            for name in ("dev", "metatool", "toolalpaca", "restbench"):
                inside = [r for r in part if r.recall is not None and r.catalog == name]
                if not inside:
                    cells.append("-")
                    continue
                before = sum(r.recall or 0.0 for r in inside) / len(inside)
                cells.append(f"{before:.3f} → {before - _loss(inside, fit):.3f}")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_set(rows: Sequence[Row], fit: FitConfig) -> str:
    """Every in-scope set's R@5 before → after per half with `fit`, and how many requests it refused."""
    lines = ["| set | n (even / odd) | even: R@5 before → after (refused) | odd: R@5 before → after (refused) |",
             "|---|---|---|---|"]
    names = list(dict.fromkeys((r.catalog, r.name) for r in rows if r.recall is not None))
    for catalog, name in names:
        cells, counts = [], []
        for half in HALVES:
            inside = [r for r in rows if (r.catalog, r.name, r.half) == (catalog, name, half) and r.recall is not None]
            counts.append(str(len(inside)))
            if not inside:
                cells.append("-")
                continue
            before = sum(r.recall or 0.0 for r in inside) / len(inside)
            refused = sum(not _fits(r, fit) for r in inside)
            cells.append(f"{before:.3f} → {before - _loss(inside, fit):.3f} ({refused})")
        lines.append(f"| {name} | {' / '.join(counts)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.nothingfits", description=__doc__.split("\n\n")[0])
    parser.add_argument("--semantic", action="store_true", help="the semantic mode (default: BM25)")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER,
                        help=f"semantic: the embedder to measure (default {DEFAULT_EMBEDDER})")
    parser.add_argument("--signals", type=Path, help="write each request's R@5 and evidence here (JSONL)")
    parser.add_argument("--from", dest="source", type=Path, help="read them from here instead of searching")
    parser.add_argument("--metatool", type=Path, default=METATOOL if METATOOL.is_dir() else None)
    parser.add_argument("--toolalpaca", type=Path, default=TOOLALPACA if TOOLALPACA.is_dir() else None)
    parser.add_argument("--weights", type=_weights, help="semantic: also choose the threshold (and the outside "
                        "penalty) for these weights on the even halves (e.g. lexical=.2,gap=.8,words=.035)")
    args = parser.parse_args(argv)
    if args.source is not None:
        rows = [Row(**json.loads(line)) for line in args.source.read_text(encoding="utf-8").splitlines() if line]
    else:
        rows = []
        for row in rows_of(args.semantic, args.metatool, args.toolalpaca, args.embedder):
            rows.append(row)
            if args.signals is not None:
                with args.signals.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(_as_dict(row)) + "\n")
    semantic = any(r.cosine is not None for r in rows)
    chosen = choose(rows, semantic)
    print(f"chosen on the even halves ({'semantic' if semantic else 'BM25'}): {chosen}\n")
    fits = {"chosen": chosen, "shipped": DEFAULT_FIT}
    if args.weights is not None and semantic:
        fits["weights given"] = choose(rows, semantic, args.weights)
        print(f"chosen on the even halves for the weights given: {fits['weights given']}\n")
    print(table(rows, fits))
    print("\nEach in-scope set with the shipped thresholds:\n")
    print(per_set(rows, DEFAULT_FIT))
    return 0


def _weights(text: str) -> tuple[tuple[str, float], ...]:
    """`lexical=.2,gap=.8` as `FitConfig.semantic_weights` (argparse reports a ValueError as a bad argument)."""
    return tuple((name.strip(), float(weight)) for name, weight in (part.split("=") for part in text.split(",")))


def _as_dict(row: Row) -> dict[str, object]:
    return {name: getattr(row, name) for name in Row.__slots__}


if __name__ == "__main__":
    sys.exit(main())
