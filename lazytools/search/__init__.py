"""Tool search: text analysis, BM25 postings, query expansion, name matching and the index the meta-tools query."""

from .analysis import split_words, stem, tokenize
from .bm25 import BM25Postings
from .documents import FIELD_WEIGHTS, document_terms
from .index import Hit, Results, SearchIndex, build_index
from .live import LiveIndex
from .selection import RELEVANCE_FLOOR, Selection, select

__all__ = [
    "FIELD_WEIGHTS",
    "RELEVANCE_FLOOR",
    "BM25Postings",
    "Hit",
    "LiveIndex",
    "Results",
    "SearchIndex",
    "Selection",
    "build_index",
    "document_terms",
    "select",
    "split_words",
    "stem",
    "tokenize",
]
