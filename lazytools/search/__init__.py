"""Tool search: text analysis, BM25 postings, query expansion, name matching and the index the meta-tools query."""

from .analysis import split_words, stem, tokenize
from .bm25 import BM25Postings
from .documents import FIELD_WEIGHTS, document_terms
from .index import Hit, Results, SearchIndex, build_index
from .live import LiveIndex

__all__ = [
    "FIELD_WEIGHTS",
    "BM25Postings",
    "Hit",
    "LiveIndex",
    "Results",
    "SearchIndex",
    "build_index",
    "document_terms",
    "split_words",
    "stem",
    "tokenize",
]
