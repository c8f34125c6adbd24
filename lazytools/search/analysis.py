"""Text analysis for tool search: a text's words (split and stemmed by `textwords`), without stop words."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from ..textwords import split_words, stem
from .tables import words

__all__ = ["STOP_WORDS", "split_words", "stem", "terms_of", "tokenize"]

# English function words, and the filler of requests to a model ("I want to", "can you please", "hi, could you
# help me"): data/stop_words.json. Capability words stay even when they are vague: "list", "get", "find", "show",
# "data" all name what a tool does in some catalog.
STOP_WORDS = words("stop_words", "function_words") | words("stop_words", "request_filler")


def tokenize(text: str) -> list[str]:
    """Search terms of `text`: split, lower-cased, without stop words, stemmed."""
    return list(_tokenized(text))


@lru_cache(maxsize=256)  # one served search reads its request's terms several times (needs, server terms, usage)
def _tokenized(text: str) -> tuple[str, ...]:
    return tuple(terms_of(split_words(text)))


def terms_of(words: Iterable[str]) -> list[str]:
    """Search terms of words `split_words` gave: without stop words, stemmed."""
    return [stem(word) for word in words if word not in STOP_WORDS]
