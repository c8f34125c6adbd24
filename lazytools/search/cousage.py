"""Co-usage: a tool that past sessions used together with a search's top match may take one more place, after the
ranked ones. It never takes a ranked place (a single-need request keeps every tool its ranking chose), never goes
past the session's cap on enabled tools, and only a tool this session may see, not listed already, in the group
asked for, gets it; the result says it is there from past sessions."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace

from ..catalog import Catalog
from .prior import Prior
from .results import Results

__all__ = ["MAX_CO_USED", "with_co_used"]

MAX_CO_USED = 1
"""Places co-usage may add."""


def with_co_used(selection: Results, prior: Prior | None, catalog: Catalog, *, query: str,
                 group: str | None = None, enable_at_most: int | None = None, pinned: Collection[str] = (),
                 visible: Callable[[str], bool] | None = None) -> Results:
    """`selection` with, after its enabled tools, the tool past sessions used most with its top match (if any)."""
    if not query or prior is None or not prior or not selection.enabled:
        return selection
    counted = sum(1 for entry in selection.enabled if entry.name not in pinned)
    if enable_at_most is not None and counted >= enable_at_most:
        return selection  # the cap is full of ranked places: none is given up
    top = next((entry for entry in selection.enabled if entry.name not in pinned), selection.enabled[0])
    enabled = {entry.name for entry in selection.enabled}
    added = []
    for name, used_with in prior.co_used([top.name]):
        if name in enabled or name not in catalog or (visible is not None and not visible(name)):
            continue
        entry = catalog.get(name)
        if group is not None and entry.group != group:
            continue
        added.append((entry, used_with))
        if len(added) == MAX_CO_USED:
            break
    if not added:
        return selection
    names = {entry.name for entry, _ in added}
    learned = {**selection.learned, **{entry.name: f"often used together with {used_with}" for entry, used_with in added}}
    return replace(
        selection, enabled=[*selection.enabled, *(entry for entry, _ in added)],
        over_cap=[e for e in selection.over_cap if e.name not in names],
        weaker=[e for e in selection.weaker if e.name not in names],
        producers=[e for e in selection.producers if e.name not in names],
        companions=[e for e in selection.companions if e.name not in names], learned=learned)
