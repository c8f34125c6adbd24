"""BM25 scoring with rank-bm25's formula and parameters, over precomputed postings.

rank-bm25 loops over every document in Python; here each term's postings (document ids and their
length-normalised term weights) are numpy arrays built once, so a query costs one vectorised add per
query term over only the documents that contain it. Scores equal `BM25Okapi.get_scores` (tested).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from rank_bm25 import BM25Okapi

__all__ = ["BM25Postings"]


class BM25Postings:
    """Term → (document ids, per-document weight), with rank-bm25's IDF."""

    def __init__(self, corpus: Sequence[Sequence[str]], *, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25):
        self.size = len(corpus)
        self.idf: dict[str, float] = {}
        self._postings: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}
        if self.size == 0 or not any(corpus):
            return
        okapi = BM25Okapi([list(doc) for doc in corpus], k1=k1, b=b, epsilon=epsilon)
        doc_len = np.asarray(okapi.doc_len, dtype=np.float64)
        norm = k1 * (1 - b + b * doc_len / okapi.avgdl)
        ids: dict[str, list[int]] = {}
        tfs: dict[str, list[float]] = {}
        for doc_id, freqs in enumerate(okapi.doc_freqs):
            for term, tf in freqs.items():
                ids.setdefault(term, []).append(doc_id)
                tfs.setdefault(term, []).append(tf)
        for term, doc_ids in ids.items():
            idx = np.asarray(doc_ids, dtype=np.int64)
            tf = np.asarray(tfs[term], dtype=np.float64)
            self._postings[term] = (idx, tf * (k1 + 1) / (tf + norm[idx]))
            self.idf[term] = self._positive_idf(okapi.idf[term], len(doc_ids), epsilon)

    def _positive_idf(self, idf: float, df: int, epsilon: float) -> float:
        # rank-bm25 floors negative IDFs at epsilon * average IDF, which is itself <= 0 in catalogs of two or
        # three tools: every shared word would then score <= 0. Only there, fall back to a small positive IDF.
        if idf > 0:
            return float(idf)
        return epsilon * math.log(1 + (self.size - df + 0.5) / (df + 0.5))

    def __contains__(self, term: object) -> bool:
        return term in self._postings

    @property
    def vocabulary(self) -> list[str]:
        return list(self._postings)

    def document_frequency(self, term: str) -> int:
        posting = self._postings.get(term)
        return 0 if posting is None else len(posting[0])

    def accumulate(self, scores: npt.NDArray[np.float64], term: str, weight: float = 1.0) -> bool:
        """Add `term`'s BM25 contribution (times `weight`) to `scores`; False if no document has it."""
        posting = self._postings.get(term)
        if posting is None:
            return False
        ids, weights = posting
        scores[ids] += (self.idf[term] * weight) * weights
        return True

    def scores(self, query: Sequence[str]) -> npt.NDArray[np.float64]:
        """BM25 score of every document for the query terms (repeated terms count again, as in rank-bm25)."""
        out = np.zeros(self.size, dtype=np.float64)
        for term in query:
            self.accumulate(out, term)
        return out
