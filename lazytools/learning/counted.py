"""Who showed what, for learning from use: each pattern (a tool called after a search holding a term, a tool
called right after another) counts once per source, and takes a few distinct sources before it informs anyone.

Two structures, each bounded, neither costing more per record as it fills:
- `Counted`, per source, the patterns it was already counted for. A source may add at most `per_source` of them:
  past its share its new patterns are not counted, so a flood of made-up words uses up that source's own share and
  never makes it forget what it showed before (forgotten, it would count again). Past `limit` in all, the source
  active least recently is forgotten whole (`OrderedDict.popitem`, O(1); freeing its keys is paid once per key).
- `Sources`, per pattern, the distinct sources that showed it, kept up to `cap` (the most any reader asks for):
  adding a source twice changes nothing, so the count never depends on what `Counted` forgot.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

__all__ = ["MAX_COUNTED", "MAX_PER_SOURCE", "Counted", "Sources"]

MAX_COUNTED = 1_000_000
"""Patterns remembered per source in all (`LAZYTOOLS_LEARN_MAX_COUNTED`), so that a source counts once each."""
MAX_PER_SOURCE = 20_000
"""Patterns one source may be counted for (`LAZYTOOLS_LEARN_MAX_PER_SOURCE`): a few thousand searches and calls,
far more than a person makes while the others' patterns form; a flood stops counting there."""

Key = tuple[str, ...]


class Counted:
    """Per source, the patterns it was counted for; see the module's docstring. Not thread-safe: the prior's lock
    guards it."""

    def __init__(self, *, limit: int = MAX_COUNTED, per_source: int = MAX_PER_SOURCE) -> None:
        self.limit = limit
        self.per_source = per_source
        self._by_source: OrderedDict[str, set[Key]] = OrderedDict()
        self._size = 0
        self.forgotten = 0
        """Sources forgotten whole to stay within `limit` (tests, the command line)."""
        self.refused = 0
        """Patterns not counted because their source had used its share."""

    def first(self, source: str, pattern: Key) -> bool:
        """Whether `source` was not counted for `pattern` yet (then it is, now), within its share."""
        keys = self._by_source.get(source)
        if keys is None:
            keys = self._by_source[source] = set()
        else:
            self._by_source.move_to_end(source)
        if pattern in keys:
            return False
        if len(keys) >= self.per_source:
            self.refused += 1
            return False
        keys.add(pattern)
        self._size += 1
        while self._size > self.limit and len(self._by_source) > 1:
            _, gone = self._by_source.popitem(last=False)
            self._size -= len(gone)
            self.forgotten += 1
        return True

    def showed(self, source: str, pattern: Key) -> bool:
        keys = self._by_source.get(source)
        return keys is not None and pattern in keys

    def sources(self) -> Iterator[str]:
        """The sources remembered, least recently active first."""
        return iter(self._by_source)

    def __len__(self) -> int:
        return self._size

    def merge(self, other: Counted, *, other_older: bool) -> None:
        """Add `other`'s memory to this one (its sources before this one's if `other_older`), passing over the
        smaller of the two: the larger's structure is kept as it is."""
        if len(other._by_source) > len(self._by_source):
            self._by_source, other._by_source = other._by_source, self._by_source
            self._size, other._size = other._size, self._size
            other_older = not other_older
        for source, keys in other._by_source.items():
            into = self._by_source.get(source)
            if into is None:
                into = self._by_source[source] = set()
                if other_older:
                    self._by_source.move_to_end(source, last=False)
            elif not other_older:
                self._by_source.move_to_end(source)
            for key in keys:
                if len(into) >= self.per_source:
                    break
                if key not in into:
                    into.add(key)
                    self._size += 1
        while self._size > self.limit and len(self._by_source) > 1:
            _, gone = self._by_source.popitem(last=False)
            self._size -= len(gone)
            self.forgotten += 1


class Sources:
    """Per pattern, up to `cap` distinct sources that showed it (a tuple each: most patterns have one or two)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.by_pattern: dict[tuple[str, str, str], tuple[str, ...]] = {}

    def add(self, pattern: tuple[str, str, str], source: str) -> None:
        seen = self.by_pattern.get(pattern, ())
        if len(seen) < self.cap and source not in seen:
            self.by_pattern[pattern] = (*seen, source)

    def count(self, pattern: tuple[str, str, str], *, besides: str | None = None) -> int:
        """Distinct sources that showed `pattern` (up to `cap`), not counting `besides`."""
        seen = self.by_pattern.get(pattern, ())
        return len(seen) - (besides is not None and besides in seen)

    def drop(self, pattern: tuple[str, str, str]) -> None:
        self.by_pattern.pop(pattern, None)

    def keep_only(self, keep: set[str]) -> None:
        """Drop the term patterns of terms not in `keep` (the prior pruned them)."""
        self.by_pattern = {key: seen for key, seen in self.by_pattern.items() if key[0] != "t" or key[1] in keep}

    def merge(self, other: Sources) -> None:
        """Add `other`'s sources to these, passing over the smaller of the two."""
        if len(other.by_pattern) > len(self.by_pattern):
            self.by_pattern, other.by_pattern = other.by_pattern, self.by_pattern
        for pattern, seen in other.by_pattern.items():
            for source in seen:
                self.add(pattern, source)

    def __len__(self) -> int:
        return len(self.by_pattern)
