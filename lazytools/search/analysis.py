"""Text analysis for tool search: identifiers split into words, stop words dropped, words stemmed."""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

__all__ = ["STOP_WORDS", "split_words", "stem", "tokenize"]

# Words that carry no capability: English function words and the filler of requests to a model
# ("I want to", "can you please", "help me"). Kept small on purpose: "list", "get", "find" stay.
STOP_WORDS = frozenset(
    """
    a an and are as at be been being but by can could do does did for from had has have he her his how i if in
    into is it its itself just let me might my need needs of on or our ours please shall she should so some such
    than that the their them then there these they this those to too us via was we were what when where which
    while who whom why will with would you your yours want wants wanted like help able also any
    """.split()
)

_IDENTIFIER_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_WORDS = re.compile(r"[A-Za-z0-9]+")
_stemmer = snowballstemmer.stemmer("english")


def split_words(text: str) -> list[str]:
    """Lower-cased words, with snake_case, kebab-case, dotted and camelCase identifiers split apart."""
    words: list[str] = []
    for chunk in _WORDS.findall(text):
        words.extend(part.lower() for part in _IDENTIFIER_PARTS.findall(chunk))
    return words


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def tokenize(text: str) -> list[str]:
    """Search terms of `text`: split, lower-cased, without stop words, stemmed."""
    return [stem(word) for word in split_words(text) if word not in STOP_WORDS]
