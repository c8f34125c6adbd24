"""BM25F scoring over precomputed postings: each term's document ids and weights are numpy arrays built once, so a
query costs a few vectorised calls over only the documents that contain its terms.

The formula, parameters and IDF are Okapi BM25's as rank-bm25 computes them; with one field of weight 1 the scores
equal rank-bm25's `BM25Okapi.get_scores` (tests/test_bm25.py keeps rank-bm25 as that reference).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["BM25FPostings"]


class BM25FPostings:
    """BM25F: each field's term frequency normalised by that field's own length, then weighted and summed
    into one pseudo-frequency that saturates once (Robertson, Zaragoza & Taylor 2004).

    Repeating a field's terms (the cheap way to weight fields) lengthens the whole document and lets a long
    description dilute a short name; here a long description dilutes only its own field. The IDF is Okapi's over
    whole documents.
    """

    def __init__(  # noqa: PLR0913 - each field needs its weight and its own length normalisation
        self,
        documents: Sequence[Mapping[str, Sequence[str]]],
        weights: Mapping[str, float],
        *,
        k1: float = 1.5,
        b: Mapping[str, float] | float = 0.75,
        epsilon: float = 0.25,
        apart: frozenset[str] = frozenset(),
    ) -> None:
        """`apart`: fields that only some documents have, another rendering of their text (a translation): such a
        field's length is compared with the average of the documents that have it, and its terms count in a term's
        document frequency only when no other field holds the term, so the rest of the catalog ranks as before."""
        self.size = len(documents)
        self.idf: dict[str, float] = {}
        self._slot: dict[str, int] = {}
        """Term -> its slot: its postings are `_ids[_starts[slot]:_ends[slot]]` (documents in order) and the same
        range of `_weights` (each document's saturated pseudo-frequency), all terms' in two flat arrays."""
        self._ids: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._weights: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        self._starts: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._ends: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._idfs: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        self.rendered_only: frozenset[str] = frozenset()
        """Terms only an `apart` field holds: a typed word finds them, expansions do not."""
        fields = list(weights)
        field_b = {field: b if isinstance(b, float) else b.get(field, 0.75) for field in fields}
        lengths = {f: np.asarray([len(doc.get(f, ())) for doc in documents], dtype=np.float64) for f in fields}
        averages = {f: float(lengths[f].mean()) if self.size else 0.0 for f in fields}
        for f in apart & set(fields):
            present = lengths[f][lengths[f] > 0]
            averages[f] = float(present.mean()) if present.size else 0.0
        # Per field and document: weight / (1 - b + b * length / average length).
        scale = {
            f: weights[f] / (1 - field_b[f] + field_b[f] * lengths[f] / (averages[f] or 1.0)) for f in fields
        }
        pseudo: dict[str, dict[int, float]] = {}
        counted: dict[str, set[int]] = {}  # per term, the documents that hold it outside the `apart` fields
        for doc_id, doc in enumerate(documents):
            for f in fields:
                counts = Counter(doc.get(f, ()))
                factor = float(scale[f][doc_id])
                for term, tf in counts.items():
                    per_doc = pseudo.setdefault(term, {})
                    per_doc[doc_id] = per_doc.get(doc_id, 0.0) + tf * factor
                    if f not in apart:
                        counted.setdefault(term, set()).add(doc_id)
        if not pseudo:
            return
        frequency = {t: len(counted.get(t) or docs) for t, docs in pseudo.items()}
        self.rendered_only = frozenset(t for t in pseudo if t not in counted)
        idf = {t: math.log(self.size - n + 0.5) - math.log(n + 0.5) for t, n in frequency.items()}
        floor = epsilon * (sum(idf.values()) / len(idf))
        sizes = np.fromiter((len(docs) for docs in pseudo.values()), dtype=np.int64, count=len(pseudo))
        self._ends = np.cumsum(sizes)
        self._starts = self._ends - sizes
        total = int(self._ends[-1])
        self._ids = np.fromiter((doc for docs in pseudo.values() for doc in docs), dtype=np.int64, count=total)
        freqs = np.fromiter((f for docs in pseudo.values() for f in docs.values()), dtype=np.float64, count=total)
        self._weights = freqs * (k1 + 1) / (freqs + k1)
        del freqs
        for slot, term in enumerate(pseudo):
            self._slot[term] = slot
            raw = idf[term] if idf[term] >= 0 else floor
            self.idf[term] = _positive_idf(raw, self.size, frequency[term], epsilon)
        self._idfs = np.fromiter(self.idf.values(), dtype=np.float64, count=len(self.idf))

    @property
    def vocabulary(self) -> list[str]:
        return list(self._slot)

    def _posting(self, term: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        slot = self._slot.get(term)
        if slot is None:
            return None
        start, end = int(self._starts[slot]), int(self._ends[slot])
        return self._ids[start:end], self._weights[start:end]

    def scores(self, terms: Mapping[str, float]) -> npt.NDArray[np.float64]:
        """Every document's score for weighted terms: the sum `accumulate` makes term by term, in one pass.

        The postings of the terms the index holds are gathered from the flat arrays with a few numpy calls, whatever
        the number of terms (a long request has hundreds), and `np.bincount` adds its weights in the order given, so
        each document's contributions are added in the terms' order, as `accumulate` adds them: the scores are the
        same to the last bit (a test checks it)."""
        row: npt.NDArray[np.float64] = self.scores_many([terms])[0]
        return row

    def scores_many(self, queries: Sequence[Mapping[str, float]]) -> npt.NDArray[np.float64]:
        """(queries, documents): `scores` of each of `queries`, in one pass over their postings (a request and
        each of its needs)."""
        slot_of = self._slot.get
        slots: list[int] = []
        weights: list[float] = []
        rows: list[int] = []
        for row, terms in enumerate(queries):
            for term, weight in terms.items():
                slot = slot_of(term)
                if slot is not None:
                    slots.append(slot)
                    weights.append(weight)
                    rows.append(row)
        if not slots:
            return np.zeros((len(queries), self.size), dtype=np.float64)
        chosen = np.asarray(slots, dtype=np.int64)
        starts, lengths = self._starts[chosen], self._ends[chosen] - self._starts[chosen]
        # Each term's factor (IDF times its weight, as `accumulate` computes it) repeated over its postings.
        factors = np.repeat(self._idfs[chosen] * np.asarray(weights, dtype=np.float64), lengths)
        # The positions of every chosen posting in the flat arrays, range after range, in the terms' order.
        ends = np.cumsum(lengths)
        at = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)
        cells = self._ids[at]
        if len(queries) > 1:
            cells = cells + np.repeat(np.asarray(rows, dtype=np.int64) * self.size, lengths)
        summed = np.bincount(cells, factors * self._weights[at], minlength=len(queries) * self.size)
        return np.asarray(summed, dtype=np.float64).reshape(len(queries), self.size)

    def share(self, term: str) -> float:
        """The share of the documents that hold `term` (0 for a term none holds)."""
        slot = self._slot.get(term)
        return int(self._ends[slot] - self._starts[slot]) / self.size if slot is not None and self.size else 0.0

    def holds(self, doc: int, term: str) -> bool:
        """Whether document `doc` holds `term` (in some field)."""
        slot = self._slot.get(term)
        if slot is None:
            return False
        start, end = int(self._starts[slot]), int(self._ends[slot])
        at = start + int(self._ids[start:end].searchsorted(doc))  # ids are in document order
        return at < end and int(self._ids[at]) == doc

    def accumulate(self, scores: npt.NDArray[np.float64], term: str, weight: float = 1.0) -> bool:
        """Add `term`'s BM25F contribution (times `weight`) to `scores`; False if no document has it."""
        posting = self._posting(term)
        if posting is None:
            return False
        ids, weights = posting
        scores[ids] += (self.idf[term] * weight) * weights
        return True


def _positive_idf(idf: float, size: int, df: int, epsilon: float) -> float:
    # Okapi floors negative IDFs at epsilon * average IDF, which is itself <= 0 in catalogs of two or three
    # tools: every shared word would then score <= 0. Only there, fall back to a small positive IDF.
    if idf > 0:
        return float(idf)
    return epsilon * math.log(1 + (size - df + 0.5) / (df + 0.5))
