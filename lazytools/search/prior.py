"""What ranking needs from learning from use, as a protocol: `lazytools.learning` keeps the usage log and builds
the prior; search reads it only through `Prior`, and never imports the learning package (the assembly root hands
a prior in)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

__all__ = ["LEARN_WEIGHT", "MAX_COMPANIONS", "Prior", "reorder"]

LEARN_WEIGHT = 0.5
"""A tool's score grows by at most this share from the prior (a tool always called after such requests: ×1.5)."""
MAX_COMPANIONS = 2
"""Tools suggested because they are usually called right after a match."""


class Prior(Protocol):
    """Evidence from past sessions, as ranking reads it. Every answer is already limited to what the asking
    principal may be shown of others' use (the learning package decides that)."""

    def __bool__(self) -> bool:
        """Whether it holds any evidence at all (without it, ranking skips every learned step)."""
        ...

    def terms(self, query: str) -> tuple[str, ...]:
        """The query's terms in the form `boosts` takes (keyed hashes: the prior never holds the words)."""
        ...

    def boosts(self, terms: Sequence[str]) -> dict[str, float]:
        """Per tool, in [0, 1]: how much past requests with these terms were followed by a call of it."""
        ...

    def companions(self, found: Sequence[str]) -> list[tuple[str, str]]:
        """(tool, the tool of `found` it is usually called right after), strongest first."""
        ...

    def co_used(self, found: Sequence[str]) -> list[tuple[str, str]]:
        """(tool, the tool of `found` past sessions used it together with), strongest first."""
        ...


def reorder(
    hits: Sequence[tuple[str, float]], boosts: Mapping[str, float], *, floor: float, weight: float = LEARN_WEIGHT
) -> list[int]:
    """Positions of `hits` (name, score; best first) in their order once the prior is applied: a tool's score grows
    by up to `weight` of itself, but a tool below `floor` of the best score stays below it (the prior alone never
    makes a match strong enough to be enabled), and the best-scored tool's place sets the floor as before."""
    if not hits or not boosts:
        return list(range(len(hits)))
    best = max(score for _, score in hits)
    line = floor * best
    below = math.nextafter(line, -math.inf)
    clip = best > 0
    keys: list[float] = []
    for name, score in hits:
        boost = boosts.get(name)
        # A tool without a boost keeps its score (score * 1.0; one below the floor is already below it), so only
        # the few boosted tools are computed.
        if boost and score > 0:
            lifted = score * (1.0 + weight * boost)
            if clip and score < line:
                lifted = min(lifted, below)
            keys.append(-lifted)
        else:
            keys.append(-score)
    # A stable sort by key keeps equal keys in position order: what sorting (key, position) pairs gave.
    return sorted(range(len(keys)), key=keys.__getitem__)

