"""The search index over a catalog snapshot: which tools answer a query, best first."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..catalog import Catalog
from ..entry import ToolEntry
from .analysis import tokenize
from .bm25 import BM25Postings

__all__ = ["FIELD_WEIGHTS", "Hit", "LiveIndex", "SearchIndex", "document_terms"]

FIELD_WEIGHTS: Mapping[str, int] = {"name": 3, "title": 2, "description": 1, "parameters": 1, "group": 1}
"""How many times each field's terms count in a tool's document (a simple BM25F: repetition)."""


@dataclass(frozen=True, slots=True)
class Hit:
    entry: ToolEntry
    score: float


def _parameter_names(schema: Mapping[str, Any]) -> list[str]:
    properties = schema.get("properties")
    return list(properties) if isinstance(properties, Mapping) else []


def document_terms(entry: ToolEntry) -> list[str]:
    """The terms one tool is indexed under, each field repeated by its weight."""
    fields = {
        "name": entry.source_name or entry.name,
        "title": entry.title or "",
        "description": entry.description,
        "parameters": " ".join(_parameter_names(entry.input_schema)),
        "group": entry.group,
    }
    terms: list[str] = []
    for field, text in fields.items():
        terms.extend(tokenize(text) * FIELD_WEIGHTS[field])
    return terms


class SearchIndex:
    """BM25 over name, title, description, parameter names and group of every entry."""

    def __init__(self, entries: Iterable[ToolEntry]) -> None:
        self.entries: list[ToolEntry] = list(entries)
        self._bm25 = BM25Postings([document_terms(entry) for entry in self.entries])
        self._groups = np.array([entry.group for entry in self.entries], dtype=object)
        self._by_lower_name = {entry.name.lower(): i for i, entry in enumerate(self.entries)}

    def __len__(self) -> int:
        return len(self.entries)

    def search(self, query: str, *, limit: int = 5, groups: Sequence[str] | None = None) -> list[Hit]:
        """Tools matching `query`, best first; `groups` restricts them to those groups."""
        if not self.entries or limit <= 0:
            return []
        scores = self._bm25.scores(tokenize(query))
        # A query that is a tool's exact name (any case) puts that tool first: models often know the name.
        exact = self._by_lower_name.get(" ".join(query.split()).lower())
        if exact is not None:
            scores[exact] = (scores.max() if scores.size else 0.0) + 1.0
        if groups is not None:
            scores[~np.isin(self._groups, list(groups))] = 0.0
        return self._top(scores, limit)

    def _top(self, scores: np.ndarray[Any, np.dtype[np.float64]], limit: int) -> list[Hit]:
        matched = np.flatnonzero(scores > 0)
        if matched.size > limit:
            matched = matched[np.argpartition(-scores[matched], limit - 1)[:limit]]
        # Sorting by (-score, position) keeps equal scores in catalog order: results are deterministic.
        order = sorted(matched.tolist(), key=lambda i: (-scores[i], i))
        return [Hit(self.entries[i], float(scores[i])) for i in order]


class LiveIndex:
    """The index of a catalog, rebuilt on first use after the catalog changed."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._index: SearchIndex | None = None
        self._version = -1

    @property
    def current(self) -> SearchIndex:
        if self._index is None or self._version != self._catalog.version:
            self._index = SearchIndex(self._catalog)
            self._version = self._catalog.version
        return self._index
