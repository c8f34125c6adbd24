"""Search that learns from use: a prior built from what sessions searched for and which tools they then called.

From the records (`records.py`) `UsagePrior` keeps, decayed by age (half-life `HALF_LIFE_DAYS`):
- for each query term (a keyed hash of its stem: the store never needs the words), how often each tool was called
  after a search holding it, against how many searches held it;
- for each tool, which tools were called right after it.
Search uses the first as a bounded boost among tools that already clear the relevance floor
(`search.prior.reorder`), and the second to suggest a tool usually called next. It reads them through a view for
one source (`seen_by`): what other sources showed reaches it only once enough distinct ones did (a k-anonymity
floor), so a suggestion never tells a user what someone else searched.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from .counted import MAX_COUNTED, MAX_PER_SOURCE, Counted, Sources
from .keys import TEST_KEY, hashed_terms
from .records import CallRecord, Decay, Record, SearchRecord, plausible
from .together import Together
from .view import PriorView

__all__ = ["HALF_LIFE_DAYS", "MIN_SESSIONS", "UsagePrior"]

HALF_LIFE_DAYS = 30.0
"""A record counts half as much after this many days: what a team used last month still helps, last year's less."""

MIN_EVIDENCE = 0.5
"""A query term informs the prior once searches holding it add up to this much (decayed): one search of the last
half-life."""

COMPANION_MIN = 1.5
"""A tool is suggested after another once it was called right after it this much (decayed: two recent calls)..."""
COMPANION_SHARE = 0.25
"""...and in at least this share of the calls that followed the other one."""
MIN_SESSIONS = 3
"""Distinct sources that must show a pattern (a tool called after such requests, or right after another tool)
before it moves a tool up or suggests one: one session repeating itself teaches nothing to the others. A record's
`session` is who it counts for: an OAuth user's records all carry one (server/learning.py), so it takes three
users, not three sessions of one."""
MIN_OTHERS = 3
"""Distinct sources besides the one asking that must show a pattern before it shows to them
(`LAZYTOOLS_LEARN_MIN_PRINCIPALS`): a suggestion then says only that several others did this, never who."""

MAX_TERMS = 50_000
"""Query terms the prior keeps (the least used leave first): bounds its memory whatever the store holds."""
MAX_TOOLS_PER_TERM = 32


@dataclass(slots=True)
class UsagePrior:
    """Decayed evidence of which tools followed which requests and which tools, built from records."""

    half_life: float = HALF_LIFE_DAYS * 86_400.0
    origin: float = field(default_factory=time.time)
    searches_with: dict[str, float] = field(default_factory=dict)
    """Per term hash: searches that held it."""
    called_after: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per term hash: per tool, successful calls after a search that held it."""
    followed_by: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per tool: per tool, calls right after it in the same session."""
    called: dict[str, float] = field(default_factory=dict)
    """Per tool: successful calls."""
    failed: dict[str, float] = field(default_factory=dict)
    """Per tool: failed calls."""
    search_count: float = 0.0
    key: bytes = TEST_KEY
    """The key `terms` hashes with (this install's, see `keys.install_key`)."""
    min_others: int = MIN_OTHERS
    max_counted: int = MAX_COUNTED
    max_per_source: int = MAX_PER_SOURCE
    counted: Counted = field(init=False, repr=False)
    """Per source, the patterns it was counted for (each counts once)."""
    together: Together = field(default_factory=Together, repr=False)
    """Per tool: the tools the same sources used among their last few calls (co-usage)."""
    sources: Sources = field(init=False, repr=False)
    """Per ("t", term, tool) and ("f", tool, next tool): the distinct sources that showed it (up to a few)."""
    _eligible: dict[str, list[tuple[str, float]]] = field(default_factory=dict, repr=False)
    """Per term hash: the tools of `called_after` that enough sources showed, as `boosts` reads them; dropped when
    the term's counts change (most of the prior's lookup time was re-checking every tool's sources)."""
    _next: dict[str, tuple[float, tuple[tuple[str, float], ...]]] = field(default_factory=dict, repr=False)
    """Per tool: `_following`'s answer, dropped when its counts change."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.counted = Counted(limit=self.max_counted, per_source=self.max_per_source)
        self.sources = Sources(max(MIN_SESSIONS, self.min_others + 1))

    def empty_like(self) -> UsagePrior:
        """A prior without counts, of this one's origin, half-life, key and bounds (to be merged into it)."""
        return UsagePrior(half_life=self.half_life, origin=self.origin, key=self.key, min_others=self.min_others,
                          max_counted=self.max_counted, max_per_source=self.max_per_source)

    def terms(self, query: str) -> tuple[str, ...]:
        """`query`'s hashed terms under this prior's key: what its records hold and `boosts` takes."""
        return hashed_terms(query, self.key)

    def _w(self, at: float) -> float:
        return Decay(self.origin, self.half_life).weight(at)

    def add(self, record: Record) -> None:
        """Count one record (the usage log calls it on its writer thread: never on the event loop). A record dated
        implausibly (`plausible`: a store written by something else) is skipped."""
        if not plausible(record.at):
            return
        w = self._w(record.at)
        source = record.session
        with self._lock:
            if isinstance(record, SearchRecord):
                self.search_count += w
                for term in record.terms:
                    if self.counted.first(source, ("s", term)):
                        self.searches_with[term] = self.searches_with.get(term, 0.0) + w
                if len(self.searches_with) > MAX_TERMS:
                    self._prune()
                return
            self._add_call(record, source, w)

    def _add_call(self, record: CallRecord, source: str, w: float) -> None:
        if not record.ok:
            self.failed[record.tool] = self.failed.get(record.tool, 0.0) + w
            return
        self.called[record.tool] = self.called.get(record.tool, 0.0) + w
        # A source counts once per (term, tool) and per (tool, next tool): a pattern one session repeats is not
        # evidence for the others.
        for term in record.terms:
            if self.counted.first(source, ("t", term, record.tool)):
                self._credit("t", self.called_after, term, record.tool, w, source)
        after = record.after
        if after is not None and after != record.tool and self.counted.first(source, ("f", after, record.tool)):
            self._credit("f", self.followed_by, after, record.tool, w, source)
        self.together.add(source, record.tool, w, self.counted.first, self.sources.add, self.sources.drop)

    def _credit(self, kind: str, table: dict[str, dict[str, float]], key: str, tool: str, weight: float,
                source: str) -> None:
        """Add `weight` to `tool` under `key` in `table`; past MAX_TOOLS_PER_TERM tools the lightest leaves."""
        tools = table.setdefault(key, {})
        tools[tool] = tools.get(tool, 0.0) + weight
        if kind == "t":
            self._eligible.pop(key, None)
        else:
            self._next.pop(key, None)
        self.sources.add((kind, key, tool), source)
        if len(tools) > MAX_TOOLS_PER_TERM:
            gone = min(tools, key=tools.__getitem__)
            del tools[gone]
            self.sources.drop((kind, key, gone))

    def _prune(self) -> None:
        keep = sorted(self.searches_with, key=self.searches_with.__getitem__, reverse=True)[: MAX_TERMS * 3 // 4]
        kept = set(keep)
        self.searches_with = {term: self.searches_with[term] for term in keep}
        self.called_after = {term: tools for term, tools in self.called_after.items() if term in kept}
        self.sources.keep_only(kept)
        self._eligible.clear()
        self._next.clear()

    def merge(self, other: UsagePrior) -> None:
        """Add `other`'s counts (of the same origin and half-life; older: the history read at start) to these.
        `other` is used up: the smaller side's counts are added to the larger's tables, which this prior then
        keeps. The lock, which searches take to read the prior, is held only for that smaller side: a history of
        200,000 records merged at start costs them no wait, only the few records made meanwhile are added."""
        with self._lock:
            if self._size() <= other._size():
                _add_counts(other, self)
                self.searches_with, self.called_after, self.followed_by = (other.searches_with, other.called_after,
                                                                           other.followed_by)
                self.called, self.failed, self.search_count = other.called, other.failed, other.search_count
            else:
                _add_counts(self, other)
            self.sources.merge(other.sources)
            self.counted.merge(other.counted, other_older=True)
            self.together.merge(other.together)
            self._eligible.clear()
            self._next.clear()
            if len(self.searches_with) > MAX_TERMS:
                self._prune()

    def _size(self) -> int:
        return len(self.called_after) + len(self.followed_by) + len(self.searches_with)

    def __bool__(self) -> bool:
        return bool(self.called)

    def seen_by(self, source: str | None) -> PriorView:
        """The prior as `source` may read it: a pattern shows once `min_others` distinct sources besides it showed
        it (and `MIN_SESSIONS` in all)."""
        return PriorView(self, source)

    def boosts(self, terms: Sequence[str], *, at: float | None = None, viewer: str | None = None
               ) -> dict[str, float]:
        """Per tool, in [0, 1]: how often it was called after searches holding these terms, each term weighted by
        how specific it is to few searches, averaged over all the query's terms (a request that shares one word of
        six with past ones gets a sixth of the evidence). Only patterns `viewer` may be shown count."""
        if not terms or not self.called:
            return {}
        now = time.time() if at is None else at
        scale = Decay(self.origin, self.half_life).now(now)
        with self._lock:
            total = self.search_count * scale
            sums: dict[str, float] = {}
            weight_sum = 0.0
            for term in terms:
                seen = self.searches_with.get(term, 0.0) * scale
                weight = math.log1p(max(total, 1.0) / max(seen, 1.0))
                weight_sum += weight
                if seen < MIN_EVIDENCE:
                    continue
                eligible = self._eligible.get(term)
                if eligible is None:
                    eligible = self._eligible[term] = [
                        (tool, count) for tool, count in self.called_after.get(term, {}).items()
                        if self._shows(("t", term, tool), None)]
                for tool, count in eligible:
                    if viewer is not None and not self._shows(("t", term, tool), viewer):
                        continue
                    # +1: one search is weak evidence; the share nears the plain share as searches add up
                    sums[tool] = sums.get(tool, 0.0) + weight * min(1.0, count * scale / (seen + 1.0))
        if weight_sum <= 0:
            return {}
        return {tool: value / weight_sum for tool, value in sums.items() if value > 0}

    def _shows(self, pattern: tuple[str, str, str], viewer: str | None) -> bool:
        """Whether enough distinct sources showed `pattern`: MIN_SESSIONS in all and, for `viewer`, `min_others`
        besides it."""
        if self.sources.count(pattern) < MIN_SESSIONS:
            return False
        return self.sources.count(pattern, besides=viewer) >= self.min_others

    def companions(self, found: Sequence[str], *, at: float | None = None, viewer: str | None = None
                   ) -> list[tuple[str, str]]:
        """(tool, the tool of `found` it is usually called right after), strongest first (not those of `found`)."""
        now = time.time() if at is None else at
        scale = Decay(self.origin, self.half_life).now(now)
        shown = set(found)
        picked: dict[str, tuple[float, str]] = {}
        with self._lock:
            for name in found:
                following = self._next.get(name)
                if following is None:
                    following = self._next[name] = self._following(name)
                summed, eligible = following
                if not eligible:
                    continue
                total = summed * scale
                for tool, count in eligible:
                    value = count * scale
                    if tool in shown or value < COMPANION_MIN or value < COMPANION_SHARE * total:
                        continue
                    if viewer is not None and not self._shows(("f", name, tool), viewer):
                        continue
                    if value > picked.get(tool, (0.0, ""))[0]:
                        picked[tool] = (value, name)
        return [(tool, picked[tool][1]) for tool in sorted(picked, key=lambda tool: -picked[tool][0])]

    def co_used(self, found: Sequence[str], *, at: float | None = None, viewer: str | None = None
                ) -> list[tuple[str, str]]:
        """(tool, the tool of `found` it was used together with), strongest first (not those of `found`): uses
        together that enough sources (besides `viewer`) showed, as often as a companion's."""
        scale = Decay(self.origin, self.half_life).now(time.time() if at is None else at)
        shown = set(found)
        picked: dict[str, tuple[float, str]] = {}
        with self._lock:
            for name in found:
                row = self.together.with_tool.get(name)
                if not row:
                    continue
                total = sum(row.values()) * scale
                for tool, count in row.items():
                    value = count * scale
                    if tool in shown or value < COMPANION_MIN or value < COMPANION_SHARE * total:
                        continue
                    if self._shows(("c", name, tool), viewer) and value > picked.get(tool, (0.0, ""))[0]:
                        picked[tool] = (value, name)
        return [(tool, picked[tool][1]) for tool in sorted(picked, key=lambda tool: -picked[tool][0])]

    def _following(self, name: str) -> tuple[float, tuple[tuple[str, float], ...]]:
        """(the calls right after `name`, summed; those of the tools enough sources showed): what `companions`
        reads, kept per tool until its counts change (the lock is held)."""
        nexts = self.followed_by.get(name)
        if not nexts:
            return 0.0, ()
        eligible = tuple((tool, count) for tool, count in nexts.items() if self._shows(("f", name, tool), None))
        return sum(nexts.values()), eligible

    def ranked_calls(self, *, at: float | None = None) -> list[tuple[str, float, float]]:
        """(tool, decayed successful calls, decayed failed calls), most called first."""
        scale = Decay(self.origin, self.half_life).now(time.time() if at is None else at)
        with self._lock:
            tools = set(self.called) | set(self.failed)
            rows = [(tool, self.called.get(tool, 0.0) * scale, self.failed.get(tool, 0.0) * scale) for tool in tools]
        return sorted(rows, key=lambda row: (-row[1], row[0]))


def _add_counts(into: UsagePrior, source: UsagePrior) -> None:
    """Add `source`'s decayed counts to `into`'s tables (the caller holds what locks it needs)."""
    for mine, theirs in ((into.searches_with, source.searches_with), (into.called, source.called),
                         (into.failed, source.failed)):
        for key, value in theirs.items():
            mine[key] = mine.get(key, 0.0) + value
    for nested, other_nested in ((into.called_after, source.called_after), (into.followed_by, source.followed_by)):
        for key, inner in other_nested.items():
            row = nested.setdefault(key, {})
            for tool, value in inner.items():
                row[tool] = row.get(tool, 0.0) + value
    into.search_count += source.search_count
