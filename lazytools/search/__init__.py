"""Tool search: text analysis, BM25 postings and the index the meta-tools query."""

from .analysis import split_words, stem, tokenize
from .bm25 import BM25Postings
from .index import FIELD_WEIGHTS, Hit, LiveIndex, SearchIndex, document_terms

__all__ = [
    "FIELD_WEIGHTS",
    "BM25Postings",
    "Hit",
    "LiveIndex",
    "SearchIndex",
    "document_terms",
    "split_words",
    "stem",
    "tokenize",
]
