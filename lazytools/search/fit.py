"""Whether any tool fits a request at all, from absolute evidence rather than from the ranking.

The relevance floor compares results with the best one, so something is always enabled: "mute my microphone" over
a catalog of git, maps and file tools enabled `git_commit`. Two signals say how well the best tool can fit, each on
a scale that does not depend on the catalog's size or on the request's length:

- lexical: the strongest single piece of evidence the best-ranked tool holds, one of the request's words (or a word
  it was read as: a synonym, a related word) that the tool's fields contain, as its IDF times the word's weight,
  over the IDF a word of a single tool would have. A request whose only shared words are ones many tools use
  ("set", "start", "new") scores low; one naming what a tool is about ("axolotl", "kubernetes") scores high.
- semantic (with the semantic extra): the cosine of the request's vector with the closest tool's.

A request fits when either signal clears its threshold (in BM25 mode only the lexical one exists). The thresholds
were chosen on the even halves of in-scope sets against requests written to be out of scope, and checked on the
odd halves (`python -m benchmarks.nothingfits`, figures in docs/search.md); they depend on the embedder, so a new
embedder needs them measured again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .embedders import DEFAULT_EMBEDDER

if TYPE_CHECKING:
    from .bm25 import BM25FPostings
    from .embedders import Vectors

__all__ = ["DEFAULT_FIT", "Evidence", "FitConfig", "evidence_of", "lexical_evidence"]


@dataclass(frozen=True, slots=True)
class FitConfig:
    """When search_tools says that nothing fits (and enables nothing). `enabled=False`: never."""

    enabled: bool = True
    min_lexical: float = 0.185
    """BM25 mode: the lexical evidence a request's best tool needs (0: every request fits)."""
    semantic_lexical: float = 0.218
    """Semantic mode: a request fits when its lexical evidence reaches this (0: every request fits; above 1: the
    cosine alone decides) ..."""
    min_cosine: float = 0.206
    """... or its closest tool's cosine reaches this."""
    embedder: str = DEFAULT_EMBEDDER
    """The embedder the semantic thresholds were chosen for: each embedder's cosines have a scale of their own, so
    with another one no request is refused in semantic mode."""

    def fits(self, evidence: Evidence | None) -> bool:
        if not self.enabled or evidence is None or evidence.named:
            return True
        if evidence.cosine is None:
            return evidence.lexical >= self.min_lexical
        if evidence.embedder != self.embedder:
            return True
        return evidence.lexical >= self.semantic_lexical or evidence.cosine >= self.min_cosine


@dataclass(frozen=True, slots=True)
class Evidence:
    """How well the best tool can fit a request (see the module's docstring)."""

    lexical: float
    cosine: float | None = None
    """The closest tool's cosine (semantic mode only)."""
    named: bool = False
    """The request names a tool: it fits, whatever its words say."""
    embedder: str | None = None
    """The name of the embedder that gave `cosine`."""


def evidence_of(bm25: BM25FPostings, terms: Mapping[str, float], best: int, candidates: npt.NDArray[np.bool_],
                vectors: Vectors | None, request: Vectors | None, *, named: bool,
                embedder: str | None = None) -> Evidence:
    """The evidence for a request scored with the weighted `terms`, whose best-ranked tool is at position `best`;
    with embeddings, the cosine of the `candidates` tool closest to the `request` vector (the embedder's own
    cosine, before any lift by server)."""
    lexical = lexical_evidence(terms, bm25.idf, partial(bm25.holds, best), bm25.size)
    cosine = None
    if vectors is not None and request is not None and candidates.any():
        cosine = float(np.einsum("ij,j->i", vectors, request)[candidates].max())
    return Evidence(lexical, cosine, named, embedder if cosine is not None else None)


def lexical_evidence(terms: Mapping[str, float], idf: Mapping[str, float], holds: Callable[[str], bool],
                     size: int) -> float:
    """The strongest weighted IDF among the query `terms` (term -> weight) that the best tool `holds`, over the IDF
    of a term only one of `size` tools has (Okapi's, as the index computes it), at most 1. The terms are tried
    strongest first, so a long request's hundreds of terms cost a few lookups."""
    single = math.log(max(size - 1 + 0.5, 1.0)) - math.log(1.5)
    ranked = sorted(((weight * idf[term], term) for term, weight in terms.items() if term in idf), reverse=True)
    best = next((value for value, term in ranked if holds(term)), 0.0)
    return min(1.0, best / single) if single > 0 else (1.0 if best > 0 else 0.0)


DEFAULT_FIT = FitConfig()
