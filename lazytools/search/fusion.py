"""Combining score lists: BM25 with embedding similarity, a whole request with its separate needs.

The fusion of BM25 and cosine similarity was chosen by measurement (`lazytools eval --semantic` on the
MetaTool set): a weighted sum of per-query z-scores beat reciprocal-rank fusion and max- or min-max-normalised
sums. BM25 scores have no fixed scale (they grow with query length) and cosines live in [-1, 1]; z-scores put
both in "standard deviations above this query's average tool", which is what a weight can mean.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .config import DEFAULT, RankingConfig

__all__ = ["ScoreArray", "fuse_semantic", "semantic_weight", "with_clauses", "zscores"]

ScoreArray = npt.NDArray[np.float64]
"""One score per catalog tool, in catalog order."""

def semantic_weight(clause_count: int, config: RankingConfig = DEFAULT, *, named: bool = True) -> float:
    """The embedding similarity's share for a request cut into `clause_count` clauses: never above
    `long_task_semantic_weight` for a long task; for a shorter one that names no group (`named`),
    `semantic_weight` scaled as `unnamed_semantic_weight` is to the default share, at most 1 (a weight of 0 stays
    0). A named product ("post it on Slack") is BM25's strongest signal, where the embedding adds least; a request
    in the user's own words is where the embedding finds what the words miss (figures in docs/search.md)."""
    weight = config.semantic_weight
    if clause_count >= config.long_task_clauses:
        return min(weight, config.long_task_semantic_weight)
    if named:
        return weight
    return min(1.0, weight * config.unnamed_semantic_weight / DEFAULT.semantic_weight)


def zscores(scores: ScoreArray) -> ScoreArray:
    """(score - mean) / standard deviation; all zeros when every tool scores the same (catalogs of one tool)."""
    spread = float(scores.std()) if scores.size else 0.0
    if spread <= 1e-12:
        return np.zeros_like(scores)
    centred: ScoreArray = (scores - scores.mean()) / spread
    return centred


def fuse_semantic(
    lexical: ScoreArray, similarity: ScoreArray, weight: float = DEFAULT.semantic_weight, *,
    parts: Sequence[ScoreArray] = (), clause_weight: float = DEFAULT.clause_weight,
) -> ScoreArray:
    """Weighted z-scores of BM25 and of the request's similarity, where each tool also gains `clause_weight` times
    its best z-score over the request's separate needs (`parts`: one similarity per need).

    One mean vector for "book a flight, then find a hotel and tell my team on Slack" sits between the needs
    and close to none; each need's own vector finds its tool (gains on MetaTool's two-tool queries, none lost on
    single-need ones: docs/search.md).
    """
    semantic = zscores(similarity)
    if len(parts):
        semantic = semantic + clause_weight * np.max([zscores(part) for part in parts], axis=0)
    fused: ScoreArray = (1.0 - weight) * zscores(lexical) + weight * semantic
    return fused


def with_clauses(whole: ScoreArray, parts: Sequence[ScoreArray], weight: float = DEFAULT.clause_weight) -> ScoreArray:
    """`whole` plus, for each tool, its best share of one clause's top score (scaled to `whole`'s top).

    A request listing several needs ("get the stock price and the latest news") ranks by all its words at
    once, where the tool for the smaller need can sink; its own clause puts it back near the top.
    """
    top = float(whole.max()) if whole.size else 0.0
    if not parts or top <= 0:
        return whole
    # All clauses at once (a long task has twenty): each scaled to its own top, the best per tool; a clause that
    # reaches no tool adds nothing.
    stacked: ScoreArray = np.array(parts, dtype=np.float64)  # a copy, whatever `parts` is: divided in place below
    tops = stacked.max(axis=1)
    reaching = tops > 0
    if not reaching.all():
        stacked, tops = stacked[reaching], tops[reaching]
    stacked /= tops[:, None]
    best: ScoreArray = stacked.max(axis=0, initial=0.0)
    lifted: ScoreArray = whole + weight * top * best
    return lifted
