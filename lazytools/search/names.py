"""Tool names in a query: a named tool comes first whatever BM25 says; one whose name's words it holds is lifted."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["EXACT", "MENTION", "MIN_NAME_WORDS", "PREFIX", "NameMatcher", "NameWords"]

EXACT = 3
"""The whole query is the tool's name, in any case and with any separators ("create issue" = create_issue)."""
MENTION = 2
"""The query contains the name as an identifier ("then call github__create_issue")."""
PREFIX = 1
"""The query is one identifier that starts a name ("create_iss")."""

MIN_PREFIX = 3
MIN_NAME_WORDS = 2
"""A one-word name ("search", "fetch") spelled in a query is just that word, which BM25 already counts."""
MAX_PREFIX_MATCHES = 50
"""A prefix shared by more names than this ("get") says nothing about which tool is meant."""

_IDENTIFIER = re.compile(r"[A-Za-z0-9_.\-]+")
_SEPARATORS = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"[a-z][A-Z]")


def _compact(text: str) -> str:
    """`text` lower-cased, every character but a-z and 0-9 dropped."""
    return _compact_lower(text.lower())


def _compact_lower(lower: str) -> str:
    """`_compact` of a text already lower-cased."""
    # Most names are ASCII words joined by "_", "-" or ".": three replacements are cheaper than the expression.
    plain = lower.replace("_", "").replace("-", "").replace(".", "")
    return plain if plain.isascii() and plain.isalnum() else _SEPARATORS.sub("", lower)


def _looks_like_identifier(token: str) -> bool:
    """Plain words ("search") are left to BM25; snake, kebab, dotted and camelCase names are names."""
    return any(sep in token.strip("_.-") for sep in "_.-") or _CAMEL.search(token) is not None


class NameMatcher:
    """Looks up names (public and upstream names of each tool, by position) in a query."""

    def __init__(self, names: Sequence[Sequence[str]]) -> None:
        # Each name's positions as a tuple (ascending, each once): a tuple holds a few positions in far less memory
        # than a set, and a catalog has as many names as tools. A key equal to its name is that string, not a copy.
        lower: dict[str, list[int]] = {}
        compacted: dict[str, list[int]] = {}
        for position, aliases in enumerate(names):
            # A tool's two names are most often one (an in-process tool) or share their lower-cased form.
            for name in aliases if len(aliases) != 2 or aliases[0] != aliases[1] else aliases[:1]:
                key = name.lower()
                if key == name:
                    key = name
                _add(lower, key, position)
                if compact := _compact_lower(key):
                    _add(compacted, key if compact == key else compact, position)
        self._lower: dict[str, tuple[int, ...]] = {key: tuple(held) for key, held in lower.items()}
        self._compact: dict[str, tuple[int, ...]] = {key: tuple(held) for key, held in compacted.items()}
        self._sorted = sorted(self._compact)
        self._longest = max(map(len, self._compact), default=0)

    def matches(self, query: str) -> dict[int, int]:
        """Tool position → how surely the query names it (EXACT, MENTION or PREFIX)."""
        found: dict[int, int] = {}

        def mark(positions: Iterable[int], tier: int) -> None:
            for position in positions:
                found[position] = max(found.get(position, 0), tier)

        text = " ".join(query.split()).strip("'\"`")
        compact = self._compacted(text)
        mark(self._lower.get(text.lower(), ()), EXACT)
        mark(self._compact.get(compact, ()), EXACT)
        for token in _IDENTIFIER.findall(text):
            token = token.strip(".-")
            # A name first (a dict lookup), then whether it is written as one: most words of a request are neither.
            named = self._lower.get(token.lower())
            if named is not None and _looks_like_identifier(token):
                mark(named, MENTION)
        if " " not in text and len(compact) >= MIN_PREFIX:
            mark(self._prefixed(compact), PREFIX)
        return found

    def _compacted(self, text: str) -> str:
        """`_compact(text)`, or "" when that is longer than every name's: it is only compared with names, and the
        first characters of a long request already show it is (`_compact` of a text begins with its head's)."""
        head = text[: 2 * self._longest + 2]
        if len(head) < len(text) and len(_compact(head)) > self._longest:
            return ""
        return _compact(text)

    def _prefixed(self, prefix: str) -> set[int]:
        start = bisect.bisect_left(self._sorted, prefix)
        positions: set[int] = set()
        for key in self._sorted[start : start + MAX_PREFIX_MATCHES + 1]:
            if not key.startswith(prefix):
                break
            positions.update(self._compact[key])
        return positions if len(positions) <= MAX_PREFIX_MATCHES else set()


def _add(positions: dict[str, list[int]], key: str, position: int) -> None:
    """`position` among `key`'s, which come in ascending order: once, though a tool's two names share the key."""
    held = positions.get(key)
    if held is None:
        positions[key] = [position]
    elif held[-1] != position:
        held.append(position)


class NameWords:
    """Which tools have every word of their name among a query's terms ("create an issue" → create_issue).

    A model that describes a tool by its name's words, spread through a sentence, is naming it as surely as
    one that types the identifier, but no identifier match sees it. Counted through a small inverted index
    (term → tools whose name has it), so a query costs one add per query term, not a loop over the tools.
    """

    def __init__(self, name_terms: Sequence[frozenset[str]]) -> None:
        self._size = len(name_terms)
        self._needed = np.array([len(terms) for terms in name_terms], dtype=np.int64)
        postings: dict[str, list[int]] = {}
        for position, terms in enumerate(name_terms):
            for term in terms:
                postings.setdefault(term, []).append(position)
        self._postings = {term: np.asarray(ids, dtype=np.int64) for term, ids in postings.items()}
        # Each tool's word count where it has enough words to be named so, else -1 (no count of found words is).
        self._wanted = np.where(self._needed >= MIN_NAME_WORDS, self._needed, -1)

    def covered(self, terms: Iterable[str]) -> npt.NDArray[np.bool_]:
        """True for each tool whose name has at least MIN_NAME_WORDS terms, all of them in `terms`."""
        covered = np.zeros(self._size, dtype=bool)
        covered[self.covering(terms)] = True
        return covered

    def covering(self, terms: Iterable[str]) -> npt.NDArray[np.intp]:
        """The positions `covered` marks, in order."""
        reached = [ids for term in set(terms) if (ids := self._postings.get(term)) is not None]
        if not reached:
            return np.zeros(0, dtype=np.intp)
        # Each tool's count of found name words, in one call (a long request reaches dozens of terms' postings; each
        # lists a tool once).
        found = np.bincount(np.concatenate(reached), minlength=self._size)
        return np.flatnonzero(found == self._wanted)
