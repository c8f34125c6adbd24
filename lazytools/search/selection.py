"""What a search returns, decided in one place: the matches to enable, the weaker ones and those past the session's
cap listed as suggestions, the tools that produce an input a match requires, and the needs no match answers.

The server only renders a `Selection` and enables its `enabled` tools; `lazytools eval` scores the same object, so
the figures describe exactly what a model is given.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ..catalog import Catalog
from ..entry import ToolEntry
from .index import SearchIndex
from .needs import Need, unanswered

__all__ = ["RELEVANCE_FLOOR", "Selection", "select"]

RELEVANCE_FLOOR = 0.4
"""A match is enabled only if its score is at least this share of the best match's; the others are listed as
suggestions, so what search_tools returns (and R@5 as served) is unchanged. Measured at limit 5 (docs/search.md):
enabled tools per search 5.0 -> 4.4 on MetaTool and 4.8 -> 4.2 on the multi-server dev set, R@5 of the enabled
tools alone level on the dev set (.792 / .848) and -.006 / -.007 on MetaTool; .5 costs .03 on the dev set."""


@dataclass(frozen=True, slots=True)
class Selection:
    """One search's answer, in the order the result shows it."""

    enabled: list[ToolEntry]
    """The matches to enable: named ones, and those that clear the relevance floor, within the cap."""
    over_cap: list[ToolEntry] = field(default_factory=list)
    """Matches that cleared the floor but not the session's cap on enabled tools: listed, not enabled."""
    weaker: list[ToolEntry] = field(default_factory=list)
    """Matches under the relevance floor: listed, not enabled."""
    producers: list[ToolEntry] = field(default_factory=list)
    """Tools that produce an input some match requires (`list_channels` for `post_message`)."""
    needs: tuple[Need, ...] = ()
    """The query's clauses (a request of several needs), each with how well the matches answer it."""
    unmatched: list[str] = field(default_factory=list)
    """The clauses no match answers: the result asks the model to search for each on its own."""
    group_size: int | None = None
    """The group's tool count, when a group was listed without a query and had more tools than the limit."""

    @property
    def suggested(self) -> list[ToolEntry]:
        """Listed but not enabled: the matches past the cap, the weaker matches, then the producers."""
        return [*self.over_cap, *self.weaker, *self.producers]

    @property
    def returned(self) -> list[ToolEntry]:
        """Every tool the result names, in its order: what `lazytools eval` scores."""
        return [*self.enabled, *self.suggested]


def select(
    catalog: Catalog,
    index: SearchIndex,
    *,
    query: str,
    named: Sequence[ToolEntry] = (),
    group: str | None = None,
    limit: int,
    floor: float = RELEVANCE_FLOOR,
    enable_at_most: int | None = None,
    pinned: Collection[str] = (),
) -> Selection:
    """The tools `named` (exact names) and those matching `query` (within `group`), or without a query the
    first `limit` tools of `group`. At most `enable_at_most` are enabled (pinned tools not counted: they are
    always listed); the rest are suggested, so a result never says more tools were enabled than were."""
    found: list[ToolEntry] = list(named)
    weaker: list[ToolEntry] = []
    needs: tuple[Need, ...] = ()
    unmatched: list[str] = []
    group_size: int | None = None
    if query:
        results = index.find(query, limit=limit, groups=[group] if group is not None else None)
        hits, needs = results.hits, results.needs
        unmatched = unanswered(needs) if hits else []
        best = hits[0].score if hits else 0.0
        for hit in hits:
            strong = best <= 0 or hit.score >= floor * best
            (found if strong else weaker).append(hit.entry)
    elif group is not None:
        members = catalog.in_group(group)
        found += members[:limit]
        if len(members) > limit:
            group_size = len(members)
    found = list({entry.name: entry for entry in found}.values())
    shown = {entry.name for entry in found}
    weaker = [entry for entry in {e.name: e for e in weaker}.values() if entry.name not in shown]
    producers = index.producers([*found, *weaker])
    over: list[ToolEntry] = []
    if enable_at_most is not None:
        found, over = _split_at_cap(found, enable_at_most, pinned)
    return Selection(found, over, weaker, producers, needs, unmatched, group_size)


def _split_at_cap(found: list[ToolEntry], cap: int, pinned: Collection[str]) -> tuple[list[ToolEntry], list[ToolEntry]]:
    """(the matches to enable: pinned ones and the first `cap` others, in order; the rest)."""
    kept: list[ToolEntry] = []
    over: list[ToolEntry] = []
    counted = 0
    for entry in found:
        if entry.name in pinned:
            kept.append(entry)
        elif counted < cap:
            kept.append(entry)
            counted += 1
        else:
            over.append(entry)
    return kept, over
