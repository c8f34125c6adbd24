"""The catalog: every tool lazytools can serve, by unique public name, in groups (upstream servers, categories)."""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from .entry import ToolEntry
from .errors import ConfigError, UnknownGroupError, UnknownToolError
from .safetext import clip
from .textwords import split_words, stem
from .toolnames import check_tool_name

__all__ = ["GROUPS_CHARS", "Catalog", "Group", "ToolGroup", "suggest"]


@dataclass(frozen=True, slots=True)
class Group:
    """A group of tools: an upstream server or an in-process category."""

    name: str
    summary: str = ""
    about: str = ""
    """What is said of the source (an upstream's configured description, else, when its config lets them be read,
    its own title, description and instructions), which search reads to tell which server a request is about;
    `summary` is its one line."""


GROUPS_CHARS = 2_000
"""Characters of group names an unknown group's error (or a "nothing fits" line) lists: every group of a real catalog
(the manifest shows at most 60), not a hostile catalog's thousands."""
NAME_CHARS = 200
"""Characters of a name `suggest` reads: a client may send megabytes of one, and each read costs per candidate."""

_RATIOS = 64
"""Candidates sharing as many words whose full spelling ratio is computed at most (each costs the product of the
two names' lengths)."""


def suggest(name: str, candidates: Iterable[str], limit: int = 3) -> list[str]:
    """Closest names to `name`: case-insensitive exact match first, then suffix and fuzzy matches; when those give
    fewer than `limit`, the names sharing most words with it ("count_words" for "word_count"), ties by spelling."""
    name = name[:NAME_CHARS]
    # Callers may join several lists that share names (a session's listed tools and the whole catalog): each is
    # suggested once, where it first appears. A name refused as unknown is never its own correction.
    pool = [c for c in dict.fromkeys(candidates) if c != name]
    lowered = {c.lower(): c for c in pool}
    found: list[str] = []
    if name.lower() in lowered:
        found.append(lowered[name.lower()])
    # A model often drops or guesses the namespace prefix ("read_file" for "fs__read_file").
    tail = name.lower().rsplit("__", 1)[-1]
    found += [c for c in pool if c.lower().endswith("__" + tail) or c.lower() == tail]
    # A long name sent against a large catalog is compared with the few names of a length near its own.
    found += difflib.get_close_matches(name, _comparable(name, pool), n=limit, cutoff=0.6)
    if name != name.lower() or len(lowered) != len(pool) or any(c not in lowered for c in pool):
        # (Else the lower-cased comparison is the one just made.)
        found += [lowered[m] for m in difflib.get_close_matches(name.lower(), _comparable(name.lower(), lowered),
                                                                 n=limit, cutoff=0.6)]
    found = list(dict.fromkeys(found))[:limit]
    if len(found) < limit:
        found += _by_words(name, [c for c in pool if c not in found], limit - len(found))
    return found


_SPELLED = 256
"""Names whose full spelling ratio `suggest` computes at most: those sharing most letter pairs with the name sent
(the ratio is quadratic in the names' lengths, and a catalog of 10,000 names alike would take a second)."""


def _comparable(name: str, pool: Iterable[str]) -> list[str]:
    """The names of `pool` whose length allows a spelling ratio of 0.6 with `name` (twice the shorter length over
    both at least 0.6: difflib's first check, made at the cost of a length), at most `_SPELLED` of them, those
    sharing the most letter pairs with `name` (in `pool`'s order among equals)."""
    near = [c for c in pool if 3 * (len(c) + len(name)) <= 10 * min(len(c), len(name))]
    if len(near) <= _SPELLED:
        return near
    pairs = _pairs(name)
    return heapq.nlargest(_SPELLED, near, key=lambda c: (pairs & _pairs(c)).bit_count())


@lru_cache(maxsize=16_384)
def _pairs(name: str) -> int:
    """The letter pairs of `name` as bits of one integer (pairs that share a bit count once: a shortlist's score
    need not be exact), which a cache holds in a few dozen bytes whatever the name's length."""
    mask = 0
    for first, second in zip(name, name[1:]):
        mask |= 1 << ((ord(first) * 31 + ord(second)) % 509)
    return mask


def _by_words(name: str, pool: list[str], limit: int) -> list[str]:
    """The `limit` names of `pool` sharing most words with `name` (at least one), ties by spelling ratio: computed
    only in the tiers of shared words that fill `limit`, against `name` read once (a hostile name can share a
    word with each of ten thousand tools)."""
    wanted = _words(name)
    if not wanted:
        return []
    tiers: dict[int, list[str]] = {}
    for candidate in pool:
        shared = len(wanted & _words(candidate[:NAME_CHARS]))
        if shared:
            tiers.setdefault(shared, []).append(candidate)
    spelling = difflib.SequenceMatcher(autojunk=False)
    spelling.set_seq2(name.lower())  # the matcher keeps what it learns of the second sequence
    found: list[str] = []
    for shared in sorted(tiers, reverse=True):
        tier = tiers[shared]
        if len(tier) > _RATIOS:  # the full ratio is quadratic: first the cheap bound on it picks the few to compute
            tier = heapq.nlargest(_RATIOS, tier, key=lambda c: _quick(spelling, c))
        ranked: list[tuple[float, str]] = []
        for candidate in tier:
            spelling.set_seq1(candidate[:NAME_CHARS].lower())
            ranked.append((-spelling.ratio(), candidate))
        found += [candidate for _, candidate in sorted(ranked)[: limit - len(found)]]
        if len(found) >= limit:
            break
    return found


def _quick(spelling: difflib.SequenceMatcher[str], candidate: str) -> float:
    spelling.set_seq1(candidate[:NAME_CHARS].lower())
    return spelling.quick_ratio()


@lru_cache(maxsize=16_384)  # a large gateway's names, each read once rather than on every unknown name
def _words(name: str) -> frozenset[str]:
    """The stems of a name's words ("list_files" and "fileList" share "file" and "list")."""
    return frozenset(stem(word) for word in split_words(name))


class ToolGroup(Protocol):
    """Anything that holds one group's entries, such as `FunctionGroup`."""

    group: str
    summary: str
    entries: list[ToolEntry]


class Catalog:
    """Entries by name, replaced a whole group at a time; listeners hear of every change."""

    def __init__(self) -> None:
        self._entries: dict[str, ToolEntry] = {}
        self._groups: dict[str, Group] = {}
        self._by_group: dict[str, list[ToolEntry]] = {}
        self._listeners: list[Callable[[Catalog], None]] = []
        self._announce_listeners: list[Callable[[], Awaitable[None]]] = []
        self._down: dict[str, tuple[str, str]] = {}
        """Group -> (why its source is not serving now, how its tools' names start): `set_not_serving`."""
        self.version = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[ToolEntry]:
        return iter(self._entries.values())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    @property
    def groups(self) -> list[Group]:
        return list(self._groups.values())

    def about(self) -> dict[str, str]:
        """Each group's name → what it says of itself (`Group.about`, else its summary): what search reads."""
        return {name: group.about or group.summary for name, group in self._groups.items()}

    def names(self) -> list[str]:
        return list(self._entries)

    def in_group(self, group: str) -> list[ToolEntry]:
        return list(self._by_group.get(group, ()))

    def get(self, name: str, *, suggesting: bool = True) -> ToolEntry:
        """The entry named `name`; an unknown name raises `UnknownToolError` with the closest names, or (not
        `suggesting`) with the names to find them among (`UnknownToolError.candidates`)."""
        try:
            return self._entries[name]
        except KeyError:
            if not suggesting:
                raise UnknownToolError(name, candidates=list(self._entries)) from None
            raise UnknownToolError(name, suggest(name, self._entries)) from None

    def check_group(self, group: str) -> None:
        """Refuse a group this catalog does not have (`UnknownGroupError`), naming the close ones and all of them."""
        if group in self._groups:
            return
        names = list(self._groups)
        close = [name for name in names if group.lower() in name.lower() or name.lower() in group.lower()]
        hint = f" Did you mean: {clip(', '.join(close), GROUPS_CHARS)}?" if close else ""
        raise UnknownGroupError(f"Unknown group '{clip(group)}'.{hint} Groups: {clip(', '.join(names), GROUPS_CHARS)}")

    def only(self, keep: Callable[[ToolEntry], bool]) -> Catalog:
        """A snapshot holding the entries `keep` accepts and the groups that still have one (same `version`, no
        listeners): what one principal may see of this catalog, not even a hidden server's name."""
        view = Catalog()
        view._entries = {name: entry for name, entry in self._entries.items() if keep(entry)}
        for name, entries in self._by_group.items():
            kept = [entry for entry in entries if entry.name in view._entries]
            if kept:
                view._groups[name] = self._groups[name]
                view._by_group[name] = kept
        view.version = self.version
        return view

    def set_not_serving(self, group: str, why: str | None, names: str = "") -> None:
        """Say that `group`'s source is not serving now, and why (None: it serves again); `names`: how its tools'
        names start (a gateway server's prefix and `__`). Read by the answers that find nothing there or do not know
        a name, not by search: no new version, no listener (a server retrying would otherwise re-list every session
        at each attempt). A view (`only`) holds none of it: what a principal may see of a server is its tools."""
        if why is None:
            self._down.pop(group, None)
        else:
            self._down[group] = (why, names)

    def not_serving(self) -> dict[str, tuple[str, str]]:
        """Each group whose source is not serving now: (why, how its tools' names start)."""
        return {group: state for group, state in self._down.items() if group in self._groups}

    def on_change(self, listener: Callable[[Catalog], None]) -> None:
        self._listeners.append(listener)

    def on_announce(self, listener: Callable[[], Awaitable[None]]) -> None:
        """Await `listener` whenever a source announces a change it made while serving (see `announce`)."""
        self._announce_listeners.append(listener)

    async def announce(self) -> None:
        """Await every `on_announce` listener (the server tells connected clients). Sync listeners already ran."""
        for listener in list(self._announce_listeners):
            await listener()

    async def update_group(self, group: Group, entries: Iterable[ToolEntry]) -> None:
        """`set_group` while serving, then `announce`: how a source changes its tools after start-up (an
        upstream's list_changed, a reconnection), in one call so that no change goes unannounced."""
        self.set_group(group, entries)
        await self.announce()

    def set_group(self, group: Group, entries: Iterable[ToolEntry]) -> None:
        """Replace every entry of `group` with `entries` (an empty list keeps the group, with no tools)."""
        new = list(entries)
        seen: set[str] = set()
        for entry in new:
            check_tool_name(entry.name)
            if entry.group != group.name:
                raise ConfigError(f"Tool {entry.name!r} belongs to group {entry.group!r}, not {group.name!r}")
            owner = self._entries.get(entry.name)
            if entry.name in seen or (owner is not None and owner.group != group.name):
                raise ConfigError(f"Tool name {entry.name!r} is used twice (group {group.name!r})")
            seen.add(entry.name)
        kept = {name: e for name, e in self._entries.items() if e.group != group.name}
        kept.update((entry.name, entry) for entry in new)
        self._entries = kept
        self._groups[group.name] = group
        self._by_group[group.name] = new
        self._changed()

    def add(self, group: ToolGroup) -> None:
        """Add (or replace) a group that holds its own entries, such as a `FunctionGroup`."""
        self.set_group(Group(group.group, group.summary), group.entries)

    def _changed(self) -> None:
        self.version += 1
        for listener in self._listeners:
            listener(self)
