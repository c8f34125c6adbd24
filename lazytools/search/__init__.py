"""Tool search: text analysis, BM25 postings, query expansion, name matching and the index the meta-tools query."""

from .analysis import split_words, stem, tokenize
from .bm25 import BM25Postings
from .index import FIELD_WEIGHTS, Hit, LiveIndex, Results, SearchIndex, build_index, document_terms

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
