"""Acronyms and the words they stand for, both ways: a request says "open a PR" where the tool says "create a pull
request", or "search engine optimization" where the tool says "SEO".

Only general vocabulary lives here, as in `synonyms`: the short forms people type to a model about code, chat,
documents and business, each with the words tools spell out. Acronyms whose tools use the acronym itself (API, SQL,
PDF, URL, SSH) need nothing; ambiguous ones ("cd" change directory or continuous deployment, "qa", "temp") are left
out, and "MR" and "ML" count only in capitals.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from .analysis import tokenize
from .tables import table

__all__ = ["ACRONYMS", "acronym_terms"]

ACRONYMS: Mapping[str, str] = table("acronyms")["acronyms"]
"""data/acronyms.json: short form -> the words it stands for."""


_WRITTEN_AS_ACRONYM = {"mr": re.compile(r"\bMRs?\b"), "ml": re.compile(r"\bML\b")}
"""Short forms that are also everyday words count only when written in capitals: "Mr. Smith" is no merge request,
"250 ml" no machine learning."""


def _build() -> tuple[dict[str, tuple[str, ...]], dict[str, list[tuple[tuple[str, ...], str]]]]:
    expansions: dict[str, tuple[str, ...]] = {}
    phrases: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for short, words in ACRONYMS.items():
        key, long = tokenize(short), tuple(tokenize(words))
        if len(key) != 1 or not long:
            continue
        expansions[key[0]] = long
        if len(long) > 1:
            phrases.setdefault(long[0], []).append((long, key[0]))
    return expansions, phrases


_EXPANSIONS, _PHRASES = _build()


def acronym_terms(terms: Sequence[str], text: str = "") -> list[str]:
    """Stems that `terms` (the stems of `text`, in order) stand for or abbreviate: the words of each acronym among
    them, and the acronym of each spelled-out phrase they hold (its words one after another)."""
    found: list[str] = []
    for term in terms:
        cased = _WRITTEN_AS_ACRONYM.get(term)
        if cased is None or cased.search(text):
            found.extend(_EXPANSIONS.get(term, ()))
    for start, term in enumerate(terms):
        for phrase, short in _PHRASES.get(term, ()):
            if tuple(terms[start : start + len(phrase)]) == phrase:
                found.append(short)
    return found
