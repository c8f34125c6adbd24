"""The first results of a long task chosen so that its steps are covered, not only its best-scored step.

A task of several steps ("check the forecast for Lisbon, convert 9am Lisbon time to Chicago time, add a packing
note to my Obsidian daily note") ranks by all its words at once, and the step with the most words fills the top
five with one server's near-alike tools (five Open-Meteo forecasts, four Sentry searches). Here the top results
are picked one at a time (xQuAD, Santos et al. 2010): each pick is the tool with the best mix of its own
relevance and of how much it answers clauses that the tools already picked do not answer yet. A clause that a
picked tool answers fully (its best tool) stops counting; one it answers half counts half.

Two choices make it work (the rules they replaced are in docs/search-log.md): nothing is reserved (a clause
whose tools are weak, a story clause, gains its tool only what its share is worth against the others' relevance),
and tools are compared through the clauses they answer, not through their own texts (a forecast and a translation
never look alike; two forecasts for the same clause stop adding coverage whatever their descriptions say).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .fusion import ScoreArray, zscores

__all__ = ["clause_shares", "cover", "embedding_shares", "lexical_shares"]

def lexical_shares(parts: Sequence[ScoreArray], pool: npt.NDArray[np.intp]) -> ScoreArray:
    """(clauses, pool): each pooled tool's BM25 score for a clause as a share of that clause's best score."""
    shares = np.zeros((len(parts), pool.size), dtype=np.float64)
    for row, part in enumerate(parts):
        top = float(part.max()) if part.size else 0.0
        if top > 0:
            shares[row] = np.clip(part[pool] / top, 0.0, 1.0)
    return shares


def embedding_shares(
    similarities: Sequence[ScoreArray], pool: npt.NDArray[np.intp], *, catalog_best: bool = False
) -> ScoreArray:
    """(clauses, pool): each pooled tool's z-score (over the catalog) for a clause's embedding, negative ones
    as 0, as a share of the clause's best in the pool (`catalog_best`: in the whole catalog)."""
    shares = np.zeros((len(similarities), pool.size), dtype=np.float64)
    for row, similarity in enumerate(similarities):
        z = zscores(similarity)
        above = np.clip(z[pool], 0.0, None)
        top = float(z.max()) if catalog_best and z.size else float(above.max()) if above.size else 0.0
        if top > 0:
            shares[row] = above / top
    return shares


def clause_shares(
    parts: Sequence[ScoreArray],
    similarities: Sequence[ScoreArray],
    pool: npt.NDArray[np.intp],
    *,
    catalog_best: bool = False,
) -> ScoreArray:
    """(clauses, pool): each pooled tool's share of each clause, BM25's; for the clauses that were embedded
    (`similarities`, the first ones), the mean of BM25's and the embedding's (the embedding's best taken in the
    pool, or with `catalog_best` in the whole catalog, as BM25's always is)."""
    shares = lexical_shares(parts, pool)
    if similarities:
        embedded = len(similarities)
        semantic = embedding_shares(similarities, pool, catalog_best=catalog_best)
        shares[:embedded] = (shares[:embedded] + semantic) / 2.0
    return shares


def cover(relevance: ScoreArray, shares: ScoreArray, *, weight: float, limit: int) -> list[int]:
    """Positions in `relevance` (the pooled tools' scores, best first) of `limit` picks, each maximising
    (1 - weight) x its relevance (scaled to [0, 1] over the pool) + weight x the mean over clauses of its share
    of each clause times how much of that clause the picks so far leave unanswered."""
    count = relevance.size
    if count == 0:
        return []
    low, high = float(relevance.min()), float(relevance.max())
    scaled = (relevance - low) / (high - low) if high > low else np.ones_like(relevance)
    clause_count = shares.shape[0]
    left = np.full(clause_count, 1.0 / clause_count) if clause_count else np.zeros(0)
    available = np.ones(count, dtype=bool)
    picks: list[int] = []
    while len(picks) < min(limit, count):
        gain = (1.0 - weight) * scaled + weight * (left @ shares if clause_count else 0.0)
        gain[~available] = -np.inf
        pick = int(np.argmax(gain))  # ties: the better-scored tool (the pool is in score order)
        picks.append(pick)
        available[pick] = False
        if clause_count:
            left = left * (1.0 - shares[:, pick])
    return picks
