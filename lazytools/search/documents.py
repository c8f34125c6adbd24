"""A tool as search reads it: its fields' words and terms for BM25F, the words its name must be named by, and the
text its vector is embedded from. Everything here looks at one tool (and the catalog's known words), never at a
query."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..entry import ToolEntry, first_sentence
from .analysis import STOP_WORDS, split_words, stem
from .config import DEFAULT
from .crosslang import english_rendering
from .vocabulary import split_compound

__all__ = [
    "FIELD_WEIGHTS", "RENDERED_FIELDS", "embedding_text", "field_terms", "field_words", "index_terms", "known_words",
    "name_terms",
]


FIELD_WEIGHTS: Mapping[str, float] = DEFAULT.field_weights
"""The default `RankingConfig.field_weights`: how much each field's terms count in BM25F (each field normalised by its own length, so a long description
does not dilute a short name). Other weights moved the two dev-set halves in opposite directions, so these stay
the plain defaults (docs/search-log.md). `english` is the English rendering of a tool's Chinese text (crosslang.py),
empty for a tool described in English: at 0.3 an English request finds a Chinese-described tool without Chinese
tools crowding English ones out (1.0 found more of them and cost English requests more; docs/search-log.md)."""

RENDERED_FIELDS = frozenset({"english"})
"""Fields that render another field's text (see `BM25FPostings`' `apart`)."""

_MIN_COMPOUND = 6


def _parameter_text(schema: Mapping[str, Any]) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ""
    parts: list[str] = []
    for name, spec in properties.items():
        parts.append(str(name))
        if isinstance(spec, Mapping) and isinstance(spec.get("description"), str):
            parts.append(spec["description"])
    return " ".join(parts)


def _fields(entry: ToolEntry) -> dict[str, str]:
    parameters = _parameter_text(entry.input_schema)
    return {
        "name": entry.upstream_name or entry.name,
        "title": entry.title or "",
        "description": entry.description,
        "parameters": parameters,
        "group": entry.group,
        # A tool described in Chinese is found by English requests through these words.
        "english": english_rendering(" ".join((entry.title or "", entry.description, parameters))),
    }


def field_words(entry: ToolEntry) -> dict[str, list[str]]:
    return {field: split_words(text) for field, text in _fields(entry).items()}


def known_words(field_words: Iterable[Mapping[str, list[str]]]) -> set[str]:
    """Words the catalog's descriptions use: the dictionary that glued-together names are cut with."""
    known: set[str] = set()
    for words in field_words:
        for field in ("title", "description", "parameters"):
            known.update(word for word in words[field] if len(word) >= 3)
    return known


def field_terms(words: Mapping[str, list[str]], known: frozenset[str] | set[str]) -> dict[str, list[str]]:
    terms: dict[str, list[str]] = {}
    for field, field_words in words.items():
        if field == "name":
            # A name's words, plus the known words glued inside them ("seoanalysis" → seo, analysis).
            field_words = field_words + [
                part for word in field_words if len(word) >= _MIN_COMPOUND for part in split_compound(word, known)
            ]
        terms[field] = index_terms(field_words)
    return terms


MAX_CACHED_TERMS = 131_072
"""Distinct words whose index term `index_terms` keeps (a catalog of 100,000 tools uses some tens of thousands);
past it the table starts afresh, so its memory stays bounded whatever descriptions hold."""
_terms: dict[str, str] = {}
"""word -> its stem, or "" for a word that is no term (a stop word, a single character)."""


def index_terms(words: Iterable[str]) -> list[str]:
    """The index terms of a field's words: stop words and single characters dropped, the rest stemmed. Each
    distinct word is looked up once per catalog rather than checked and stemmed again in every tool that uses it
    (a tenth of a build at 10,000 tools)."""
    known = _terms
    terms: list[str] = []
    for word in words:
        term = known.get(word)
        if term is None:
            term = stem(word) if word not in STOP_WORDS and len(word) > 1 else ""
            if len(known) >= MAX_CACHED_TERMS:
                known.clear()
            known[word] = term
        if term:
            terms.append(term)
    return terms


def name_terms(words: Mapping[str, list[str]], known: frozenset[str] | set[str]) -> frozenset[str]:
    """The stems a query must hold to name this tool in words (create_issue → create, issue), with glued words
    that the descriptions never use cut into words they do ("seoanalysis" → seo, analysis)."""
    parts: list[str] = []
    for word in words["name"]:
        glued = len(word) >= _MIN_COMPOUND and word not in known
        parts.extend((split_compound(word, known) if glued else []) or [word])
    return frozenset(stem(word) for word in parts if word not in STOP_WORDS and len(word) > 1)


def embedding_text(entry: ToolEntry) -> str:
    """What a tool's vector is the mean of: its name's words, title and the opening of its description."""
    name = " ".join(split_words(entry.upstream_name or entry.name))
    head = entry.description.strip().split("\n\n", 1)[0]
    if len(head) > 400:  # a mean over many words says less and less: keep what the tool is, not every detail
        head = first_sentence(head, limit=400)
    return ": ".join(part for part in (name, entry.title or "", head) if part)
