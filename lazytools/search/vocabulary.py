"""The catalog's own vocabulary as a dictionary: typo correction, prefix completion, compound splitting.

Everything here is derived from the words of the catalog being searched, nothing from a fixed word list, so it
adapts to any catalog: "wether" is corrected to "weather" only because some tool talks about the weather.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

__all__ = ["MAX_COMPOUND", "MAX_PART", "MAX_TYPO_LENGTH", "Vocabulary", "edit_distance", "split_compound", "within_one_edit"]

MIN_TYPO_LENGTH = 4
"""Shorter words have too many neighbours one edit away ("cat": car, cut, chat) to be corrected safely."""

MAX_TYPO_LENGTH = 40
"""Longer terms are neither corrected nor corrected to: a term's near-miss entries hold its length squared in
characters, so one long run of letters without a space (a hostile description) would hold gigabytes, and no real
word that long is mistyped into another."""

MIN_PREFIX_LENGTH = 3
MAX_COMPLETIONS = 3


def edit_distance(a: str, b: str, limit: int = 2) -> int:
    """Optimal-string-alignment distance (insert, delete, substitute, swap neighbours), capped at limit + 1."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


def within_one_edit(a: str, b: str) -> bool:
    """`edit_distance(a, b, 1) <= 1` without the table: equal, or one substitution, insertion, deletion or swap of
    neighbours apart. A correction compares a word with every candidate its deletes find, and the table cost tens
    of microseconds a pair."""
    if len(a) < len(b):
        a, b = b, a
    if len(a) - len(b) > 1:
        return False
    # The first place they differ; past it, what is left must be equal once the one edit is undone.
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), len(b))
    if len(a) != len(b):
        return a[first + 1 :] == b[first:]
    if first == len(a):
        return True
    if a[first + 1 :] == b[first + 1 :]:
        return True  # one substitution
    swapped = first + 1 < len(a) and a[first] == b[first + 1] and a[first + 1] == b[first]
    return swapped and a[first + 2 :] == b[first + 2 :]


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


class Vocabulary:
    """Terms of an index with fast lookups of near misses (one edit away) and completions of a prefix."""

    def __init__(self, terms: Iterable[str]) -> None:
        self.terms = frozenset(terms)
        self._sorted = sorted(self.terms)
        self._by_delete: dict[str, list[str]] | None = None

    def __contains__(self, term: object) -> bool:
        return term in self.terms

    @property
    def prepared(self) -> bool:
        """Whether the near-miss table is built: until then the first correction builds it (tens of ms at 500
        tools), which the server must not do on its event loop."""
        return self._by_delete is not None

    def prepare(self) -> None:
        """Build the near-miss table now (the server does, in the thread that builds its index)."""
        self._delete_index()

    def _delete_index(self) -> dict[str, list[str]]:
        # Symmetric deletes (the SymSpell idea): two words one edit apart share a string with one letter
        # removed, so near misses are dictionary look-ups instead of a scan. Built on first use or `prepare`:
        # an index built for one batch of queries may never need it.
        if self._by_delete is None:
            index: dict[str, list[str]] = {}
            for term in self._sorted:
                if MIN_TYPO_LENGTH - 1 <= len(term) <= MAX_TYPO_LENGTH + 1:
                    for variant in _deletes(term) | {term}:
                        index.setdefault(variant, []).append(term)
            self._by_delete = index
        return self._by_delete

    def corrections(self, word: str) -> list[str]:
        """Terms one edit away from `word` (a word not in the vocabulary), closest spelling first."""
        if not MIN_TYPO_LENGTH <= len(word) <= MAX_TYPO_LENGTH or word in self.terms:
            return []
        index = self._delete_index()
        candidates: set[str] = set()
        for variant in _deletes(word) | {word}:
            candidates.update(index.get(variant, ()))
        close = [term for term in candidates if within_one_edit(word, term)]
        return sorted(close, key=lambda term: (abs(len(term) - len(word)), term))

    def completions(self, prefix: str, limit: int = MAX_COMPLETIONS) -> list[str]:
        """Up to `limit` terms that start with `prefix` (and are longer), shortest first."""
        if len(prefix) < MIN_PREFIX_LENGTH:
            return []
        terms = self._sorted
        found: list[str] = []
        # Read in place from the first term after the prefix: a slice from there would copy the rest of the list.
        for at in range(bisect.bisect_right(terms, prefix), len(terms)):
            if not terms[at].startswith(prefix):
                break
            found.append(terms[at])
        return sorted(found, key=len)[:limit]


MAX_COMPOUND = 64
"""Longer glued words are left whole: no real name glues that much, and a hostile one must not cost n² slices."""
MAX_PART = 24
"""The longest piece tried: the work per word is linear in its length times this."""


def split_compound(word: str, known: frozenset[str] | set[str], min_part: int = 3) -> list[str]:
    """`word` cut into known words ("seoanalysis" → seo, analysis), fewest parts; [] when it cannot be cut."""
    n = len(word)
    if n < 2 * min_part or n > MAX_COMPOUND:
        return []
    # best[i]: fewest parts covering word[:i]
    best: list[list[str] | None] = [None] * (n + 1)
    best[0] = []
    for end in range(min_part, n + 1):
        for start in range(max(0, end - MAX_PART), end - min_part + 1):
            head = best[start]
            piece = word[start:end]
            if head is not None and piece in known and (best[end] is None or len(head) + 1 < len(best[end])):  # type: ignore[arg-type]
                best[end] = [*head, piece]
    parts = best[n]
    return parts if parts is not None and len(parts) > 1 else []
