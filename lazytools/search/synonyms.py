"""Small sets of interchangeable words for what tools do: the verbs and nouns every catalog words its own way.

Only general vocabulary lives here (create/add/new, delete/remove, find/search/list/get, …): a query says
"remove" where the tool says "delete". Matching a synonym counts less than matching the word itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from .analysis import stem

__all__ = ["SYNONYM_SETS", "synonyms_of"]

SYNONYM_SETS: tuple[frozenset[str], ...] = tuple(
    frozenset(words.split())
    for words in (
        "create add new make insert",
        "delete remove erase destroy drop",
        "find search lookup query look seek",
        "get fetch retrieve obtain read",
        "list enumerate browse",
        "update edit modify change",
        "send post submit",
        "run execute invoke launch",
        "start begin launch open",
        "stop end close terminate cancel kill",
        "write save store",
        "show display view",
        "download fetch",
        "upload publish",
        "convert transform",
        "image picture photo",
        "message chat",
        "summary summarize summarise",
        "analyze analyse analysis",
        "email mail",
        "file document",
        "directory folder",
        "user account",
        "task todo",
        "issue ticket bug",
        "repo repository",
        # Developer tools: the same thing under its short and long names.
        "database db",
        "url link uri",
        "error exception failure",
        "config configuration",
        "login signin logon",
        "deploy rollout",
        "website site webpage homepage",
        "spreadsheet sheet",
        "compare comparison diff difference",
        "calculate calculator compute",
        "check verify validate",
        "recommend recommendation suggest suggestion",
        "notification notify alert",
        # The subjects of the usual public API categories (money, travel, media, jobs, health, ...). Words with a
        # second, technical sense are left out ("share", "class", "book", "review", "property", "deal", "home"),
        # so a developer catalog's words are not pulled towards these.
        "calendar agenda",
        "meeting appointment",
        "note memo",
        "weather forecast",
        "price cost fee pricing",
        "buy purchase shop shopping",
        "product goods merchandise",
        "payment pay",
        "invoice billing",
        "money finance financial",
        "stock equity ticker",
        "crypto cryptocurrency",
        "news headline",
        "movie film cinema",
        "video clip",
        "music song",
        "audio sound",
        "job career employment",
        "house housing apartment",
        "rent rental lease",
        "travel trip vacation holiday",
        "hotel lodging accommodation",
        "flight airline airfare",
        "car vehicle automobile",
        "restaurant dining eatery",
        "food meal dish cuisine",
        "doctor physician",
        "medical healthcare medicine",
        "law legal lawyer attorney",
        "course lesson tutorial",
        "company business firm enterprise",
        "discount coupon promo",
    )
)


def _build() -> Mapping[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for words in SYNONYM_SETS:
        stems = {stem(word) for word in words}
        for s in stems:
            table.setdefault(s, set()).update(stems - {s})
    return {key: frozenset(value) for key, value in table.items()}


_TABLE = _build()


def synonyms_of(term: str) -> frozenset[str]:
    """Stems interchangeable with the stem `term` (not including it)."""
    return _TABLE.get(term, frozenset())
