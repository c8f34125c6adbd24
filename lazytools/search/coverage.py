"""Each tool's share of each need of a request: its BM25 score for the need as a share of the need's best and,
with the semantic extra, the mean of that and its embedding share. `needs` reads these to say which needs the
results leave unanswered.

(Picking a long task's first results to cover its needs, xQuAD-style, was removed in round 4: it lost on
ToolAlpaca's two halves and MetaTool's odd half for under .004 on the dev set; docs/search-log.md.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .fusion import ScoreArray, zscores

__all__ = ["clause_shares", "embedding_shares", "lexical_shares"]

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

