"""Tool search: text analysis, BM25 postings, query expansion, name matching and the index the meta-tools query."""

from .analysis import split_words, stem, tokenize
from .documents import FIELD_WEIGHTS
from .index import SearchIndex, build_index
from .language import ENGLISH, language_name, language_of
from .live import LiveIndex
from .results import Hit, Results
from .selection import RELEVANCE_FLOOR, select

__all__ = [
    "ENGLISH",
    "FIELD_WEIGHTS",
    "RELEVANCE_FLOOR",
    "Hit",
    "LiveIndex",
    "Results",
    "SearchIndex",
    "build_index",
    "language_name",
    "language_of",
    "select",
    "split_words",
    "stem",
    "tokenize",
]
