"""Which needs of a multi-step request its results leave unanswered, so the model can search for them again.

Five results cannot hold every step of a long task: a step's tool often ranks 6th-40th for the whole task while
it is 1st or 2nd for its own clause. The results cannot grow without costing the other steps their places, but a
model told which steps nothing returned answers can search for each of them on its own. A clause is named when
no returned tool has ANSWERED_SHARE of it, with the same per-clause shares as `coverage` (a tool's BM25 score for
the clause over the catalog's best for it, averaged with the same share of the clause's embedding z-scores), and
when some tool of the catalog resembles the clause at all (STEP_SIMILARITY): a task's story ("I'm flying to
Lisbon next Thursday", "My landlord says the flat has a damp problem") is a clause too, and no tool answers it.
Without the semantic extra nothing is named: BM25 alone does not tell a story clause from a step (see
docs/search-log.md). The results themselves stay as ranked: a named step's best tool is needed less often than
the result whose place it would take, so the line names the step and the model's own search for it brings five
results, not one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .coverage import clause_shares
from .fusion import ScoreArray

__all__ = ["ANSWERED_SHARE", "MAX_UNANSWERED", "STEP_SIMILARITY", "Need", "answered_needs", "unanswered"]

ANSWERED_SHARE = 0.8
"""A clause is answered when a returned tool has at least this share of it. Chosen with STEP_SIMILARITY on the
dev set's long and multi-step requests (even half, checked on the odd one) for how often a named clause leads to
a needed tool the five missed (`python -m benchmarks.followups`; figures in docs/search-log.md)."""
STEP_SIMILARITY = 0.35
"""A clause is a step, not the task's story, when its cosine with the catalog's closest tool reaches this (the
default embedder's scale). Without it, 17-24% of the named clauses led anywhere, at any share."""
MAX_UNANSWERED = 3
"""At most this many unanswered clauses are named: a longer list is a second request the model will not make."""


@dataclass(frozen=True, slots=True)
class Need:
    """One clause of a request, how well the results answer it (the best share of it among them), and how close
    the catalog's closest tool is to it in meaning (None: the clause was not embedded)."""

    text: str
    answered: float
    similarity: float | None = None


def answered_needs(
    needs: Sequence[str],
    parts: Sequence[ScoreArray],
    similarities: Sequence[ScoreArray],
    picked: Sequence[int],
) -> tuple[Need, ...]:
    """Each need with the best share of it among the `picked` tools (catalog positions), taken against the whole
    catalog's best for the clause, and its best cosine (`similarities`: the first needs' cosines with every tool)."""
    if not needs or not parts:
        return ()
    shares = clause_shares(parts, similarities, np.asarray(picked, dtype=np.intp), catalog_best=True)
    best = shares.max(axis=1) if shares.shape[1] else np.zeros(len(needs))
    closest: list[float | None] = [float(s.max()) if s.size else None for s in similarities]
    closest += [None] * (len(needs) - len(closest))
    return tuple(Need(text, float(share), near) for text, share, near in zip(needs, best, closest, strict=True))


def unanswered(
    needs: Sequence[Need],
    threshold: float = ANSWERED_SHARE,
    similarity: float = STEP_SIMILARITY,
    most: int = MAX_UNANSWERED,
) -> list[str]:
    """The steps no result answers with at least `threshold` of them, in the request's order, at most `most`."""
    steps = [need for need in needs if need.similarity is not None and need.similarity >= similarity]
    return [need.text for need in steps if need.answered < threshold][:most]
