"""Small sets of interchangeable words for what tools do: the verbs and nouns every catalog words its own way.

Only general vocabulary lives here (create/add/new, delete/remove, find/search/list/get, …): a query says
"remove" where the tool says "delete". Matching a synonym counts less than matching the word itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from .analysis import stem
from .tables import table

__all__ = ["SYNONYM_SETS", "synonyms_of"]

SYNONYM_SETS: tuple[frozenset[str], ...] = tuple(frozenset(str(words).split()) for words in table("synonyms")["sets"])
"""data/synonyms.json."""


def _build() -> Mapping[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for words in SYNONYM_SETS:
        stems = {stem(word) for word in words}
        for s in stems:
            table.setdefault(s, set()).update(stems - {s})
    return {key: frozenset(value) for key, value in table.items()}


_TABLE = _build()


def synonyms_of(term: str) -> frozenset[str]:
    """Stems interchangeable with the stem `term` (not including it)."""
    return _TABLE.get(term, frozenset())
