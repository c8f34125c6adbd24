"""A tool as search reads it: its fields' words and terms for BM25F, the words its name must be named by, and the
text its vector is embedded from. Everything here looks at one tool (and the catalog's known words), never at a
query."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from ..entry import ToolEntry, first_sentence
from .analysis import STOP_WORDS, split_words, stem
from .config import DEFAULT
from .crosslang import english_rendering
from .vocabulary import split_compound

__all__ = [
    "FIELDS", "FIELD_WEIGHTS", "RENDERED_FIELDS", "TextMemo", "catalog_name_terms", "catalog_terms", "catalog_words",
    "embedding_text", "field_terms", "field_words", "index_terms", "known_words", "name_terms",
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
        # A plain dict is checked by its type first: the abstract Mapping check is slower, and schemas are dicts.
        if type(spec) is dict or isinstance(spec, Mapping):
            description = spec.get("description")
            if isinstance(description, str):
                parts.append(description)
    return " ".join(parts)


def _fields(entry: ToolEntry, rendering: Callable[[str], str] = english_rendering) -> dict[str, str]:
    parameters = _parameter_text(entry.input_schema)
    title = entry.title or ""
    texts = (title, entry.description, parameters)
    return {
        "name": entry.upstream_name or entry.name,
        "title": title,
        "description": entry.description,
        "parameters": parameters,
        "group": entry.group,
        # A tool described in Chinese is found by English requests through these words; ASCII text has no
        # Chinese, and most tools' texts are ASCII (no joined copy of them to render).
        "english": "" if all(text.isascii() for text in texts) else rendering(" ".join(texts)),
    }


Words = Mapping[str, tuple[str, ...]]
"""A tool's words, field by field (`field_words`)."""

FIELDS = ("name", "title", "description", "parameters", "group", "english")
"""The fields of a tool's `Words`, in their order."""


class TextMemo:
    """The texts one build has split (`split`: text -> its words) and rendered into English (`rendered`)."""

    __slots__ = ("rendered", "split")

    def __init__(self) -> None:
        self.split: dict[str, tuple[str, ...]] = {}
        self.rendered: dict[str, str] = {}


def field_words(entry: ToolEntry) -> dict[str, tuple[str, ...]]:
    return {field: tuple(split_words(text)) for field, text in _fields(entry).items()}


def catalog_words(entries: Iterable[ToolEntry], memo: TextMemo | None = None) -> list[dict[str, tuple[str, ...]]]:
    """`field_words` of each tool, each distinct text split (and rendered) once: a catalog repeats texts (a server
    configured twice, a tool listed under two names, parameters described alike), and equal texts get one tuple
    of words, which `catalog_terms` and the postings then read once too. `memo`: texts already split in this
    build (its servers' tools are read server by server)."""
    memo = TextMemo() if memo is None else memo
    split, rendered = memo.split, memo.rendered

    def rendering(text: str) -> str:
        return _once(rendered, text, english_rendering)

    def words_of(text: str) -> tuple[str, ...]:
        return tuple(split_words(text))

    return [{field: _once(split, text, words_of) for field, text in _fields(entry, rendering).items()}
            for entry in entries]


Key = TypeVar("Key")
Made = TypeVar("Made")


def _once(made: dict[Key, Made], key: Key, make: Callable[[Key], Made]) -> Made:
    """`make(key)`, made once per key and kept in `made` (a catalog's repeated texts and words)."""
    found = made.get(key)
    if found is None:
        found = made[key] = make(key)
    return found


def known_words(field_words: Iterable[Words]) -> set[str]:
    """Words the catalog's descriptions use: the dictionary that glued-together names are cut with."""
    known: set[str] = set()
    seen: set[tuple[str, ...]] = set()  # a text repeated in the catalog adds no word
    for words in field_words:
        for field in ("title", "description", "parameters"):
            held = words[field]
            if held not in seen:
                seen.add(held)
                known.update(word for word in held if len(word) >= 3)
    return known


def _compound(word: str, known: frozenset[str] | set[str], cut: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """`split_compound(word, known)`, remembered in `cut` (one catalog's names share their words)."""
    return _once(cut, word, lambda glued: tuple(split_compound(glued, known)))


def field_terms(words: Words, known: frozenset[str] | set[str]) -> dict[str, tuple[str, ...]]:
    return catalog_terms([words], known)[0]


def catalog_terms(catalog: Iterable[Words], known: frozenset[str] | set[str]) -> list[dict[str, tuple[str, ...]]]:
    """`field_terms` of each tool's words, the terms of each distinct tuple of words found once (equal texts are
    one tuple in `catalog_words`), so that the postings, keyed by these tuples, read a repeated text once."""
    terms: dict[tuple[str, ...], tuple[str, ...]] = {}
    cut: dict[str, tuple[str, ...]] = {}
    documents: list[dict[str, tuple[str, ...]]] = []
    for words in catalog:
        document: dict[str, tuple[str, ...]] = {}
        for field, held in words.items():
            if field == "name":
                # A name's words, plus the known words glued inside them ("seoanalysis" → seo, analysis).
                glued = [part for word in held if len(word) >= _MIN_COMPOUND for part in _compound(word, known, cut)]
                document[field] = tuple(index_terms([*held, *glued]))
                continue
            # The memo read inline: this runs for every field of every tool.
            found = terms.get(held)
            if found is None:
                found = terms[held] = tuple(index_terms(held))
            document[field] = found
        documents.append(document)
    return documents


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


def name_terms(words: Words, known: frozenset[str] | set[str],
               cut: dict[str, tuple[str, ...]] | None = None) -> frozenset[str]:
    """The stems a query must hold to name this tool in words (create_issue → create, issue), with glued words
    that the descriptions never use cut into words they do ("seoanalysis" → seo, analysis). `cut`: the cuts of
    words already tried in this catalog."""
    cut = {} if cut is None else cut
    parts: list[str] = []
    for word in words["name"]:
        glued = len(word) >= _MIN_COMPOUND and word not in known
        parts.extend((_compound(word, known, cut) if glued else ()) or (word,))
    return frozenset(stem(word) for word in parts if word not in STOP_WORDS and len(word) > 1)


def catalog_name_terms(catalog: Iterable[Words], known: frozenset[str] | set[str]) -> list[frozenset[str]]:
    """`name_terms` of each tool, equal sets one object: tools of many servers share their names' words
    (read_file, search), and the index keeps these sets."""
    cut: dict[str, tuple[str, ...]] = {}
    shared: dict[frozenset[str], frozenset[str]] = {}
    return [shared.setdefault(terms, terms) for terms in (name_terms(words, known, cut) for words in catalog)]


def embedding_text(entry: ToolEntry) -> str:
    """What a tool's vector is the mean of: its name's words, title and the opening of its description."""
    name = " ".join(split_words(entry.upstream_name or entry.name))
    head = entry.description.strip().split("\n\n", 1)[0]
    if len(head) > 400:  # a mean over many words says less and less: keep what the tool is, not every detail
        head = first_sentence(head, limit=400)
    return ": ".join(part for part in (name, entry.title or "", head) if part)
