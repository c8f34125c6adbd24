"""BM25F scoring over precomputed postings: each term's document ids and weights are numpy arrays built once, so a
query costs a few vectorised calls over only the documents that contain its terms.

The formula, parameters and IDF are Okapi BM25's as rank-bm25 computes them; with one field of weight 1 the scores
equal rank-bm25's `BM25Okapi.get_scores` (tests/test_bm25.py keeps rank-bm25 as that reference).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, repeat
from operator import itemgetter
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["BM25FPostings", "TermsRead"]


class TermsRead(NamedTuple):
    """Weighted terms as the postings read them (`BM25FPostings.read`), query after query."""

    slots: npt.NDArray[np.int64]
    """Each term's slot, -1 for a term no document holds."""
    weights: npt.NDArray[np.float64]
    sizes: list[int]
    """Each query's count of terms."""

    def first(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The first query's slots and weights."""
        size = self.sizes[0] if self.sizes else 0
        return self.slots[:size], self.weights[:size]


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
        """Term -> its slot: its postings are `_keys[_starts[slot]:_ends[slot]]` (each `slot * size + document`,
        documents in order) and the same range of `_weights` (each document's saturated pseudo-frequency), all
        terms' in two flat arrays. Keyed by slot, the postings are sorted as a whole: one `searchsorted` finds
        whether each of many terms is in a document (`holding`)."""
        self._keys: npt.NDArray[np.int32] | npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._weights: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        self._starts: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._ends: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._idfs: npt.NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        self.rendered_only: frozenset[str] = frozenset()
        """Terms only an `apart` field holds: a typed word finds them, expansions do not."""
        self.widest = 0.0
        """The largest `share` of any term: no term's is above it."""
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
        terms, keys, pseudo, sizes, counted = _pseudo_frequencies(documents, fields, scale, apart)
        if not terms:
            return
        self.rendered_only = frozenset(t for t, n in zip(terms, counted.tolist(), strict=True) if n == 0)
        frequency = np.where(counted > 0, counted, sizes).tolist()
        idf = [math.log(self.size - n + 0.5) - math.log(n + 0.5) for n in frequency]
        floor = epsilon * (sum(idf) / len(idf))
        self._ends = np.cumsum(sizes)
        self._starts = self._ends - sizes
        self.widest = int(sizes.max()) / self.size
        # A term's slot is its id in `terms`, so each key is `slot * size + document` already.
        self._keys = _narrowest(keys, len(terms) * self.size)
        del keys
        self._weights = pseudo * (k1 + 1) / (pseudo + k1)
        del pseudo
        for slot, (term, raw, n) in enumerate(zip(terms, idf, frequency, strict=True)):
            self._slot[term] = slot
            self.idf[term] = _positive_idf(raw if raw >= 0 else floor, self.size, n, epsilon)
        self._idfs = np.fromiter(self.idf.values(), dtype=np.float64, count=len(self.idf))

    @property
    def vocabulary(self) -> list[str]:
        return list(self._slot)

    def _posting(self, term: str) -> tuple[npt.NDArray[np.int32] | npt.NDArray[np.int64],
                                           npt.NDArray[np.float64]] | None:
        slot = self._slot.get(term)
        if slot is None:
            return None
        start, end = int(self._starts[slot]), int(self._ends[slot])
        return self._keys[start:end] - slot * self.size, self._weights[start:end]

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
        return self.scores_read(self.read(queries))

    def read(self, queries: Sequence[Mapping[str, float]]) -> TermsRead:
        """Every term's slot and weight, query after query."""
        # Read by C loops (`map`, `fromiter`): a long request and its needs hold over a thousand terms, and a Python
        # loop over them cost more than the numpy that scores them.
        sizes = [len(terms) for terms in queries]
        total = sum(sizes)
        found = np.fromiter(chain.from_iterable(map(self._slot.get, terms, repeat(-1)) for terms in queries),
                            dtype=np.int64, count=total)
        given = np.fromiter(chain.from_iterable(terms.values() for terms in queries), dtype=np.float64, count=total)
        return TermsRead(found, given, sizes)

    def scores_read(self, read: TermsRead) -> npt.NDArray[np.float64]:
        """`scores_many` of the queries as `read` gave them (a caller may read their slots again: the fit's evidence
        does)."""
        found, given, sizes = read
        queries = len(sizes)
        known = found >= 0
        if not known.any():
            return np.zeros((queries, self.size), dtype=np.float64)
        chosen, weights = found[known], given[known]
        rows = np.repeat(np.arange(queries, dtype=np.int64), sizes)[known]
        starts, lengths = self._starts[chosen], self._ends[chosen] - self._starts[chosen]
        # Each term's factor (IDF times its weight, as `accumulate` computes it) repeated over its postings.
        factors = np.repeat(self._idfs[chosen] * weights, lengths)
        # The positions of every chosen posting in the flat arrays, range after range, in the terms' order.
        ends = np.cumsum(lengths)
        at = np.arange(int(ends[-1]), dtype=np.int64)
        at += np.repeat(starts - (ends - lengths), lengths)
        # Each posting's document, moved to its query's row: key - slot * size + row * size. In place, and read by
        # `take`: a request's postings are tens of thousands at 10,000 tools, and each new array is another pass.
        cells = np.repeat((rows - chosen) * self.size, lengths)
        cells += self._keys.take(at)
        factors *= self._weights.take(at)
        summed = np.bincount(cells, factors, minlength=queries * self.size)
        return np.asarray(summed, dtype=np.float64).reshape(queries, self.size)

    def share(self, term: str) -> float:
        """The share of the documents that hold `term` (0 for a term none holds)."""
        slot = self._slot.get(term)
        return int(self._ends[slot] - self._starts[slot]) / self.size if slot is not None and self.size else 0.0

    def holds(self, doc: int, term: str) -> bool:
        """Whether document `doc` holds `term` (in some field)."""
        slot = self._slot.get(term)
        return slot is not None and bool(self.holding(doc, np.asarray([slot], dtype=np.int64))[0])

    def slots(self, terms: Iterable[str]) -> npt.NDArray[np.int64]:
        """Each of `terms`' slot, -1 for a term no document holds (read by a C loop: a request has hundreds)."""
        return np.fromiter(map(self._slot.get, terms, repeat(-1)), dtype=np.int64)

    def idfs(self, slots: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """The IDF of each term of `slots` (slots of held terms: `slots`' -1 is not one)."""
        return self._idfs[slots]

    def shares(self, slots: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """`share` of each term of `slots` (held terms')."""
        return (self._ends[slots] - self._starts[slots]) / (self.size or 1)

    def holding(self, doc: int, slots: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Whether document `doc` holds each term of `slots` (held terms'), in one search of the sorted keys."""
        # In the keys' own type: numpy would copy every key to search 32-bit ones for 64-bit values (every key is
        # below the bound `_narrowest` checked, so these fit too).
        wanted = (slots * self.size + doc).astype(self._keys.dtype, copy=False)
        at = np.minimum(self._keys.searchsorted(wanted), max(self._keys.size - 1, 0))
        found: npt.NDArray[np.bool_] = self._keys[at] == wanted if self._keys.size else np.zeros(slots.size, bool)
        return found

    def accumulate(self, scores: npt.NDArray[np.float64], term: str, weight: float = 1.0) -> bool:
        """Add `term`'s BM25F contribution (times `weight`) to `scores`; False if no document has it."""
        posting = self._posting(term)
        if posting is None:
            return False
        ids, weights = posting
        scores[ids] += (self.idf[term] * weight) * weights
        return True


def _narrowest(keys: npt.NDArray[np.int64], bound: int) -> npt.NDArray[np.int32] | npt.NDArray[np.int64]:
    """`keys` (each below `bound`) as 32-bit integers when every key fits: at 100,000 tools a few thousand distinct
    terms do, and the keys are half of the postings' memory."""
    return keys.astype(np.int32) if bound <= np.iinfo(np.int32).max + 1 else keys


def _pseudo_frequencies(
    documents: Sequence[Mapping[str, Sequence[str]]],
    fields: Sequence[str],
    scale: Mapping[str, npt.NDArray[np.float64]],
    apart: frozenset[str],
) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Every term (in the order the documents first use it); each (term, document) pair a document holds, as the key
    `term's position * size + document`, in ascending order (term after term, documents ascending), with its BM25F
    pseudo-frequency (per field, its count times the field's `scale`, summed in field order); each term's number of
    documents; and the number of them that hold it outside the `apart` fields.

    A field's terms are read in Python once per distinct sequence of terms (a catalog repeats descriptions and
    parameters: a server listed twice, tools described alike), then numpy works over every (term, document) pair
    at once. The sums are those of adding each field's `count * scale` in turn, to the last bit (np.bincount adds
    in the order given)."""
    size = len(documents)
    codes: dict[str, int] = {}  # term -> its id, in the order the documents first use each term
    texts, numbers = _sequences(documents, fields)
    text_codes = [codes.setdefault(term, len(codes)) for key in texts for term in key]
    text_sizes = [len(key) for key in texts]
    if not codes:
        empty = np.zeros(0, dtype=np.int64)
        return [], empty, np.zeros(0, dtype=np.float64), empty, empty
    del texts
    # Each distinct sequence's terms with their counts, by sequence then term id.
    held_by = np.repeat(np.arange(len(text_sizes), dtype=np.int64), text_sizes)
    counted_terms, counts = _unique_counts(held_by * len(codes) + np.asarray(text_codes, dtype=np.int64))
    del held_by, text_codes
    term_of = counted_terms % len(codes)
    first = np.searchsorted(counted_terms // len(codes), np.arange(len(text_sizes) + 1, dtype=np.int64))
    # Per field, one key per (term, document) pair it holds: term id * size + document.
    keys: list[npt.NDArray[np.int64]] = []
    contributions: list[npt.NDArray[np.float64]] = []
    for f in fields:
        sequences = np.asarray(numbers.pop(f), dtype=np.int64)
        docs = np.flatnonzero(sequences >= 0)
        sequences = sequences[docs]
        lengths = first[sequences + 1] - first[sequences]
        # Each document's range of its sequence's (term, count) rows, range after range.
        ends = np.cumsum(lengths)
        at = np.arange(int(ends[-1]) if ends.size else 0, dtype=np.int64) + np.repeat(
            first[sequences] - (ends - lengths), lengths)
        holders = np.repeat(docs, lengths)
        keys.append(term_of[at] * size + holders)
        contributions.append(counts[at] * scale[f][holders])
    # (term, document) pairs, by term then document, and where each field's keys are among them.
    pairs, where = _unique_inverse(np.concatenate(keys))
    pseudo = np.bincount(where, np.concatenate(contributions), minlength=pairs.size)
    outside = np.zeros(pairs.size, dtype=bool)
    start = 0
    for f, held_keys in zip(fields, keys, strict=True):
        if f not in apart:
            outside[where[start:start + held_keys.size]] = True
        start += held_keys.size
    terms = pairs // size
    counted = np.bincount(terms[outside], minlength=len(codes))
    sizes = np.bincount(terms, minlength=len(codes))
    return list(codes), pairs, np.asarray(pseudo, dtype=np.float64), sizes, counted


def _sequences(documents: Sequence[Mapping[str, Sequence[str]]], fields: Sequence[str],
               ) -> tuple[list[tuple[str, ...]], dict[str, npt.NDArray[np.int64]]]:
    """Each distinct non-empty sequence of terms the documents hold, in the order first held (document after
    document, field after field), and per field each document's sequence by its number (-1: none).

    Documents that hold every field as a tuple (as the index builds them) are read by C loops (`itemgetter`,
    `dict.fromkeys`) rather than a Python loop over every field of every tool."""
    if len(fields) > 1:
        try:
            rows = list(map(itemgetter(*fields), documents))
            held = list(chain.from_iterable(rows))
            distinct = dict.fromkeys(held)
        except (KeyError, TypeError):  # a field missing, or held as a list (unhashable)
            pass
        else:
            distinct.pop((), None)
            texts = list(distinct)
            positions = dict(zip(texts, range(len(texts))))
            table = np.fromiter(map(positions.get, held, repeat(-1)), dtype=np.int64, count=len(held))
            table = table.reshape(len(documents), len(fields))
            return texts, {f: table[:, column] for column, f in enumerate(fields)}
    numbered: dict[tuple[str, ...], int] = {}
    numbers: dict[str, list[int]] = {f: [] for f in fields}
    for doc in documents:
        for f in fields:
            sequence = doc.get(f, ())
            if not sequence:
                numbers[f].append(-1)
                continue
            key = sequence if isinstance(sequence, tuple) else tuple(sequence)
            numbers[f].append(numbered.setdefault(key, len(numbered)))
    return list(numbered), {f: np.asarray(column, dtype=np.int64) for f, column in numbers.items()}


def _unique_inverse(values: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """`np.unique(values, return_inverse=True)`, by one sort: finding each value's place among the distinct
    values by `np.searchsorted` took four times as long at 100,000 tools (a binary search per value)."""
    order = _sorting_order(values)
    ordered = values[order]
    first = np.ones(values.size, dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    inverse = np.empty(values.size, dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def _sorting_order(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The order that sorts `values` (non-negative), equal values by position. When each value and its position fit
    in one 64-bit integer together, that is a plain sort of `value << bits | position`: numpy sorts values in
    vectorised code, but `argsort` moves positions one comparison at a time, two to three times slower."""
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    bits = int(values.size - 1).bit_length()
    if int(values.min()) < 0 or int(values.max()).bit_length() + bits > 63:
        return np.argsort(values, kind="stable")
    packed = (values.astype(np.int64) << bits) | np.arange(values.size, dtype=np.int64)
    packed.sort()
    packed &= (1 << bits) - 1
    return packed


def _unique_counts(values: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """`np.unique(values, return_counts=True)` by a sort: numpy 2's `unique` hashes, which over the build's large
    integer arrays costs many times a sort (docs/benchmarks.md)."""
    ordered = np.sort(values)
    first = np.ones(values.size, dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    starts = np.flatnonzero(first)
    return ordered[starts], np.diff(np.append(starts, ordered.size))


def _positive_idf(idf: float, size: int, df: int, epsilon: float) -> float:
    # Okapi floors negative IDFs at epsilon * average IDF, which is itself <= 0 in catalogs of two or three
    # tools: every shared word would then score <= 0. Only there, fall back to a small positive IDF.
    if idf > 0:
        return float(idf)
    return epsilon * math.log(1 + (size - df + 0.5) / (df + 0.5))
