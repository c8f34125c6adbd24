"""The words of a text, and their stems: shared by the catalog (names that share words) and search.

Identifiers split into words; Chinese, Japanese and Korean text has no spaces between words: a run of those
characters becomes its overlapping character bigrams ("天气预报" → 天气, 气预, 预报), the usual dictionary-free way
to index it, so that a query in the language of a server's descriptions finds its tools.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import snowballstemmer

__all__ = ["split_words", "stem"]

# An acronym's plural stays whole ("PRs", "URLs", "IDs"), not "P" + "Rs" as a camelCase boundary would cut it.
_IDENTIFIER_PARTS = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORDS = re.compile(rf"[A-Za-z0-9]+|[{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]")
_stemmer = snowballstemmer.stemmer("english")


def split_words(text: str) -> list[str]:
    """Lower-cased words (compatibility forms normalised, NFKC), with snake_case, kebab-case, dotted and camelCase
    identifiers split apart, and runs of CJK characters cut into overlapping bigrams."""
    return list(_split_words(text))


@lru_cache(maxsize=256)
def _split_words(text: str) -> tuple[str, ...]:
    # Remembered for the last few texts: one served search splits its request five times (its clauses, its terms,
    # the usage prior's hashed terms, the record of it), a sixth of its CPU at 10,000 tools.
    if text.isascii():
        # NFKC leaves plain ASCII as it is, and its runs of letters and digits are what `_WORDS` finds: a byte
        # table turns every other character into a space, in C (a long request holds a thousand characters).
        chunks = text.encode("ascii").translate(_NOT_ALNUM).decode("ascii").split()
    else:
        # Compatibility forms read as plain letters: full-width "ｃｏｎｖｅｒｔ" as "convert", "ﬁle" as "file".
        chunks = _WORDS.findall(unicodedata.normalize("NFKC", text))
    words: list[str] = []
    extend, known = words.extend, _chunks.get
    for chunk in chunks:
        extend(known(chunk) or _chunk_words(chunk))
    return tuple(words)


_NOT_ALNUM = bytes(byte if chr(byte).isascii() and chr(byte).isalnum() else ord(" ") for byte in range(256))
"""A byte table: ASCII letters and digits kept, every other byte a space."""


MAX_CACHED_CHUNKS = 65_536
"""Distinct words (runs of letters and digits) whose split `_chunk_words` keeps; past it the cache starts afresh."""
MAX_CACHED_CHUNK_CHARS = 64
"""Longer runs are split each time: the cache's memory stays bounded whatever requests hold."""
_chunks: dict[str, tuple[str, ...]] = {}


def _chunk_words(chunk: str) -> tuple[str, ...]:
    """The words of one run `_WORDS` found, kept per distinct run: requests repeat the same few thousand words,
    while whole requests rarely repeat (the per-text cache above misses on every new one)."""
    words = _chunks.get(chunk)
    if words is not None:
        return words
    if _CJK_RUN.match(chunk):
        words = (chunk,) if len(chunk) == 1 else tuple(chunk[i : i + 2] for i in range(len(chunk) - 1))
    else:
        words = tuple(_singular(part).lower() for part in _IDENTIFIER_PARTS.findall(chunk))
    if len(chunk) <= MAX_CACHED_CHUNK_CHARS:
        if len(_chunks) >= MAX_CACHED_CHUNKS:
            _chunks.clear()
        _chunks[chunk] = words
    return words


def _singular(part: str) -> str:
    """An acronym's plural as its singular ("PRs" -> "PR"): the stemmer leaves "prs" alone, having no vowel to go by."""
    return part[:-1] if len(part) > 2 and part[-1] == "s" and part[:-1].isupper() else part


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    return str(_stemmer.stemWord(word))
