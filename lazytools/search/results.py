"""A search's one result type, from the ranking to the text the model reads.

Each step fills its own part of the same `Results` and hands it on: the index ranks (`hits`, `needs`, `evidence`),
`selection.select` decides what is enabled and what only listed, co-usage may add a place after the ranked ones,
search_tools adds the names it did not know, and rendering writes `text`. What `lazytools eval` scores is the
object whose text was sent, so the figures describe exactly what a model is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..entry import ToolEntry
from .fit import Evidence
from .needs import Need

__all__ = ["Hit", "Results"]


@dataclass(frozen=True, slots=True)
class Hit:
    entry: ToolEntry
    score: float


@dataclass(frozen=True, slots=True)
class Results:
    """One search's answer. The ranking's part first; the selection's lists are in the order the text shows them;
    then the request as searched and the text sent."""

    hits: list[Hit] = field(default_factory=list)
    """The ranking: tools matching the query, best first, with their scores (as learning from use reordered them,
    once selected)."""
    needs: tuple[Need, ...] = ()
    """The query's clauses (a request of several needs), each with how well the hits answer it."""
    evidence: Evidence | None = None
    """How well the best tool can fit the request at all (`fit`): None when no tool matched."""
    enabled: list[ToolEntry] = field(default_factory=list)
    """The matches to enable: named ones, and those that clear the relevance floor, within the cap."""
    over_cap: list[ToolEntry] = field(default_factory=list)
    """Matches that cleared the floor but not the session's cap on enabled tools: listed, not enabled."""
    weaker: list[ToolEntry] = field(default_factory=list)
    """Matches under the relevance floor: listed, not enabled."""
    producers: list[ToolEntry] = field(default_factory=list)
    """Tools that produce an input some match requires (`list_channels` for `post_message`)."""
    unmatched: list[str] = field(default_factory=list)
    """The clauses no match answers: the result asks the model to search for each on its own."""
    group_size: int | None = None
    """The group's tool count, when a group was listed without a query and had more tools than the limit."""
    companions: list[ToolEntry] = field(default_factory=list)
    """Tools usually called right after a match in past sessions (learning from use)."""
    learned: dict[str, str] = field(default_factory=dict)
    """Per tool placed by learning from use, why: "often called after X" or "often used for such requests", so a
    result never presents past use as relevance."""
    nothing_fits: tuple[str, ...] | None = None
    """When no tool fits the request (`fit`): the catalog's groups, which the result names instead of matches."""
    unknown: tuple[str, ...] = ()
    """The errors of the names asked for (`tool_names`) that no tool has, each with the closest names."""
    query: str = ""
    """The request's text as searched (stripped); empty for tool names or a group alone."""
    group: str | None = None
    """The group the search was limited to, if any."""
    text: str = ""
    """The result as sent to the model (`server.rendering.search_text`); empty until rendered."""

    @property
    def suggested(self) -> list[ToolEntry]:
        """Listed but not enabled: the matches past the cap, the weaker matches, the producers, then the tools
        usually called next."""
        return [*self.over_cap, *self.weaker, *self.producers, *self.companions]

    @property
    def returned(self) -> list[ToolEntry]:
        """Every tool the result names, in its order: what `lazytools eval` scores."""
        return [*self.enabled, *self.suggested]
