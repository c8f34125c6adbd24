"""What each server's tools give the index, read from that server's tools alone: their words, producers, copies
and writers. A live index keeps them from one build to the next, so that when one upstream changes its tools only
that upstream's are read again; what depends on the whole catalog (the postings, the known words that cut glued
names, the name tables) is assembled from them at every build.

Producers and copies are found within a server only (`inputs`, `copies`), so a server's are the same whatever else
the catalog holds; they are kept by position among that server's tools and placed in the catalog on assembly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..entry import ToolEntry
from .copies import first_copies
from .documents import FIELDS, TextMemo, catalog_words
from .inputs import ProducerMemo, input_producers
from .steps import writes

__all__ = ["Assembled", "Segment", "assemble", "catalog_segments", "group_positions"]


@dataclass(frozen=True, slots=True)
class Segment:
    """One group's tools, in catalog order, and what search reads from them alone (by position among them)."""

    group: str
    entries: tuple[ToolEntry, ...]
    rows: tuple[tuple[tuple[str, ...], ...], ...]
    """Each tool's words, field by field in `FIELDS` order: a tuple holds them in far less memory than a dict,
    and a live index keeps every tool's."""
    producers: tuple[tuple[int, ...], ...]
    copies: tuple[int, ...]
    writes: tuple[bool, ...]

    def holds(self, entries: Sequence[ToolEntry]) -> bool:
        """Whether these are the tools this segment was read from: the same objects, or equal ones (an upstream
        that lists its tools again after `list_changed` gives new objects with the same definitions)."""
        return len(entries) == len(self.entries) and all(
            new is old or new == old for new, old in zip(entries, self.entries, strict=True))


@dataclass(frozen=True, slots=True)
class Assembled:
    """The segments' parts in catalog order, positions counted in the whole catalog."""

    words: list[dict[str, tuple[str, ...]]]
    producers: list[tuple[int, ...]]
    copies: list[int]
    writes: list[bool]
    positions: dict[str, list[int]]
    """Each group's tools' positions (`group_positions`)."""


def group_positions(entries: Iterable[ToolEntry]) -> dict[str, list[int]]:
    """Each group's tools' positions, ascending, in one pass (groups in the order they first appear): a mask per
    group would compare every tool with every group (at 100,000 tools of 5,000 servers, half a billion
    comparisons)."""
    positions: dict[str, list[int]] = {}
    for position, entry in enumerate(entries):
        positions.setdefault(entry.group, []).append(position)
    return positions


def catalog_segments(entries: Sequence[ToolEntry], previous: Mapping[str, Segment] | None = None) -> list[Segment]:
    """Each group's segment, in the order the groups first appear: `previous`'s where it holds the same tools,
    else read now (one memo of texts for the whole build, so texts repeated across servers are split once)."""
    texts, producer_memo = TextMemo(), ProducerMemo()
    normalised: dict[str, str] = {}
    segments: list[Segment] = []
    for group, positions in group_positions(entries).items():
        tools = [entries[position] for position in positions]
        kept = previous.get(group) if previous is not None else None
        if kept is not None and kept.holds(tools):
            same = all(new is old for new, old in zip(tools, kept.entries, strict=True))
            segments.append(kept if same else replace(kept, entries=tuple(tools)))  # listed again: read as before
            continue
        words = catalog_words(tools, texts)
        names = [tool_words["name"] for tool_words in words]
        segments.append(Segment(
            group, tuple(tools), tuple(tuple(tool_words.values()) for tool_words in words),
            tuple(input_producers(tools, names, producer_memo)), tuple(first_copies(tools, names, normalised)),
            tuple(writes(tool, name) for tool, name in zip(tools, names, strict=True)),
        ))
    return segments


def assemble(entries: Sequence[ToolEntry], segments: Sequence[Segment]) -> Assembled:
    """The parts of `segments` (those of `entries`' groups) placed at their tools' positions in `entries`."""
    size = len(entries)
    words: list[dict[str, tuple[str, ...]]] = [{}] * size
    producers: list[tuple[int, ...]] = [()] * size
    copies = list(range(size))
    wrote = [False] * size
    by_group = group_positions(entries)
    if len(segments) != len(by_group) or {segment.group for segment in segments} != by_group.keys():
        raise ValueError("the segments are not those of these tools' groups")
    for segment in segments:
        positions = by_group[segment.group]
        if len(positions) != len(segment.entries):
            raise ValueError(f"segment {segment.group!r} holds {len(segment.entries)} tools, not {len(positions)}")
        for own, position in enumerate(positions):
            words[position] = dict(zip(FIELDS, segment.rows[own]))
            found = segment.producers[own]
            if found:
                producers[position] = tuple(positions[other] for other in found)
            copies[position] = positions[segment.copies[own]]
            wrote[position] = segment.writes[own]
    return Assembled(words, producers, copies, wrote, by_group)
