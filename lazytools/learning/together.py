"""Tools used together: which tools the same source (an OAuth user, or a session) called successfully among its last
few calls, in any order. Search may give one such tool a place after the ranked ones (`search.cousage`): what a
request's top match is usually used with, beyond the tool called right after it."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

__all__ = ["MAX_RECENT", "Together"]

MAX_RECENT = 8
"""A source's last successful calls that count as used together with its next one."""
MAX_RECENT_SOURCES = 10_000
"""Sources whose last calls are kept (the least recently active leave first)."""
MAX_WITH = 32
"""Tools kept per tool (the lightest leaves first)."""


class Together:
    """Per tool, per tool: decayed uses together, each source counted once per pair (`first`), each pair's distinct
    sources noted (`seen`). The prior's lock guards it."""

    def __init__(self) -> None:
        self.with_tool: dict[str, dict[str, float]] = {}
        self._recent: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    def add(self, source: str, tool: str, weight: float, first: Callable[[str, tuple[str, ...]], bool],
            seen: Callable[[tuple[str, str, str], str], None], drop: Callable[[tuple[str, str, str]], None]) -> None:
        recent = self._recent.pop(source, ())
        for other in recent:
            if other == tool:
                continue
            for one, two in ((tool, other), (other, tool)):
                if not first(source, ("c", one, two)):
                    continue
                row = self.with_tool.setdefault(one, {})
                row[two] = row.get(two, 0.0) + weight
                seen(("c", one, two), source)
                if len(row) > MAX_WITH:
                    gone = min(row, key=row.__getitem__)
                    del row[gone]
                    drop(("c", one, gone))
        self._recent[source] = (*(name for name in recent if name != tool), tool)[-MAX_RECENT:]
        while len(self._recent) > MAX_RECENT_SOURCES:
            self._recent.popitem(last=False)

    def merge(self, other: Together) -> None:
        """Add `other`'s counts (the sources' last calls stay this one's: the live ones)."""
        for tool, row in other.with_tool.items():
            mine = self.with_tool.setdefault(tool, {})
            for name, value in row.items():
                mine[name] = mine.get(name, 0.0) + value
