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

__all__ = [
    "CLAUSE_WEIGHT",
    "LONG_TASK_CLAUSES",
    "LONG_TASK_CLAUSE_WEIGHT",
    "LONG_TASK_SEMANTIC_WEIGHT",
    "SEMANTIC_WEIGHT",
    "UNNAMED_SEMANTIC_WEIGHT",
    "ScoreArray",
    "clause_weight",
    "fuse_semantic",
    "semantic_weight",
    "with_clauses",
    "zscores",
]

ScoreArray = npt.NDArray[np.float64]
"""One score per catalog tool, in catalog order."""

SEMANTIC_WEIGHT = 0.6
"""Share of the embedding similarity in the fused score (BM25 gets the rest); chosen on MetaTool's even half and
checked on the odd one (figures in docs/search.md)."""
CLAUSE_WEIGHT = 0.3
"""How much a tool that best answers one need of a long request gains, next to the whole request's score."""
LONG_TASK_CLAUSES = 4
LONG_TASK_CLAUSE_WEIGHT = 0.6
"""BM25's clause weight for a task of LONG_TASK_CLAUSES or more clauses: a task told in several sentences with
three or four steps. Its whole text is dominated by whichever step has the most words (and by the story around
the steps), so the tool of a shorter step needs a larger share of its own clause to reach the first five. Shorter
requests keep CLAUSE_WEIGHT: most of their clauses are one need said twice (docs/search.md)."""


LONG_TASK_SEMANTIC_WEIGHT = 0.45
"""The embedding similarity's share for a task of LONG_TASK_CLAUSES or more clauses (at most; SEMANTIC_WEIGHT
below that). One vector for a whole story with three or four steps says mostly what the story is about (a
forecast, a Jira board), and at .6 it pulled the top five towards one server: the dev set's long tasks scored no
better than BM25 alone. With BM25's long-task clause weight carrying more of the ranking, they gain about three
points on both halves while MetaTool holds (tuned on the even halves; figures in docs/search.md)."""


def clause_weight(clause_count: int) -> float:
    """The BM25 clause weight for a request cut into `clause_count` clauses."""
    return LONG_TASK_CLAUSE_WEIGHT if clause_count >= LONG_TASK_CLAUSES else CLAUSE_WEIGHT


UNNAMED_SEMANTIC_WEIGHT = 0.7
"""The embedding similarity's share (with the default SEMANTIC_WEIGHT) for a request of fewer than
LONG_TASK_CLAUSES clauses that names no group. A named product ("post it on Slack", "in our Notion page") is
BM25's strongest signal, and there the embedding adds least; a request in the user's own words, naming no
server, is where the embedding finds what the words miss. On the dev set's requests that name no group .7 gains
on both halves, those that do name one lose at .7 (multi-step requests, both halves) and keep SEMANTIC_WEIGHT;
MetaTool, whose requests name no group, gains on both halves (figures in docs/search.md). Long tasks keep
LONG_TASK_SEMANTIC_WEIGHT either way: a lower share for those that name a group did worse (docs/search-log.md)."""


def semantic_weight(clause_count: int, weight: float = SEMANTIC_WEIGHT, *, named: bool = True) -> float:
    """The embedding similarity's share for a request cut into `clause_count` clauses, given the index's
    `weight`: never above LONG_TASK_SEMANTIC_WEIGHT for a long task; for a shorter one that names no group
    (`named`), `weight` scaled as UNNAMED_SEMANTIC_WEIGHT is to SEMANTIC_WEIGHT, at most 1 (a weight of 0 stays 0)."""
    if clause_count >= LONG_TASK_CLAUSES:
        return min(weight, LONG_TASK_SEMANTIC_WEIGHT)
    if named:
        return weight
    return min(1.0, weight * UNNAMED_SEMANTIC_WEIGHT / SEMANTIC_WEIGHT)


def zscores(scores: ScoreArray) -> ScoreArray:
    """(score - mean) / standard deviation; all zeros when every tool scores the same (catalogs of one tool)."""
    spread = float(scores.std()) if scores.size else 0.0
    if spread <= 1e-12:
        return np.zeros_like(scores)
    centred: ScoreArray = (scores - scores.mean()) / spread
    return centred


def fuse_semantic(
    lexical: ScoreArray, similarity: ScoreArray, weight: float = SEMANTIC_WEIGHT, *, parts: Sequence[ScoreArray] = ()
) -> ScoreArray:
    """Weighted z-scores of BM25 and of the request's similarity, where each tool also gains CLAUSE_WEIGHT times
    its best z-score over the request's separate needs (`parts`: one similarity per need).

    One mean vector for "book a flight, then find a hotel and tell my team on Slack" sits between the needs
    and close to none; each need's own vector finds its tool (gains on MetaTool's two-tool queries, none lost on
    single-need ones: docs/search.md).
    """
    semantic = zscores(similarity)
    if len(parts):
        semantic = semantic + CLAUSE_WEIGHT * np.max([zscores(part) for part in parts], axis=0)
    fused: ScoreArray = (1.0 - weight) * zscores(lexical) + weight * semantic
    return fused


def with_clauses(whole: ScoreArray, parts: Sequence[ScoreArray], weight: float = CLAUSE_WEIGHT) -> ScoreArray:
    """`whole` plus, for each tool, its best share of one clause's top score (scaled to `whole`'s top).

    A request listing several needs ("get the stock price and the latest news") ranks by all its words at
    once, where the tool for the smaller need can sink; its own clause puts it back near the top.
    """
    top = float(whole.max()) if whole.size else 0.0
    if not parts or top <= 0:
        return whole
    best = np.zeros_like(whole)
    for part in parts:
        part_top = float(part.max())
        if part_top > 0:
            np.maximum(best, part / part_top, out=best)
    return whole + weight * top * best
