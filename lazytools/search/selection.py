"""What a search enables, decided in one place: the matches to enable, the weaker ones and those past the session's
cap listed as suggestions, the tools that produce an input a match requires, and the needs no match answers; all
of it filled into the ranking's own `Results`, which the server renders and whose `enabled` tools it enables.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from ..catalog import Catalog
from ..entry import ToolEntry
from .fit import DEFAULT_FIT, Evidence, FitConfig
from .index import SearchIndex
from .needs import Need, unanswered
from .prior import MAX_COMPANIONS, Prior, reorder
from .results import Hit, Results

__all__ = ["RELEVANCE_FLOOR", "select"]

RELEVANCE_FLOOR = 0.4
"""A match is enabled only if its score is at least this share of the best match's; the others are listed as
suggestions, so what search_tools returns (and R@5 as served) is unchanged while a weak match costs no tool slot.
A higher share starts to drop tools that requests need (figures in docs/search-log.md)."""


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
    prior: Prior | None = None,
    visible: Callable[[str], bool] | None = None,
    enabled_places: int | None = None,
    fit: FitConfig = DEFAULT_FIT,
) -> Results:
    """The tools `named` (exact names) and those matching `query` (within `group`), or without a query the
    first `limit` tools of `group`. At most `enable_at_most` are enabled (pinned tools not counted: they are
    always listed); the rest are suggested, so a result never says more tools were enabled than were.

    With a usage `prior` (learning from use), tools called after similar requests move up among the matches
    that clear the floor (`prior.reorder`: never past it), and tools usually called right after a match are
    suggested; `visible` (a tool name → whether this session may see it) filters those suggestions.

    `enabled_places`: the places whose matches may be enabled, when `limit` holds more (the places a request of
    several needs gets): the matches ranked past them are suggested, so a long request costs a line per extra
    place, not a tool definition (benchmarks/places.py).

    When `fit` says that no tool fits the query, no match is enabled or listed: the result names the catalog's
    groups instead (`nothing_fits`); tools `named` are still enabled."""
    found: list[ToolEntry] = list(named)
    weaker: list[ToolEntry] = []
    hits: list[Hit] = []
    needs: tuple[Need, ...] = ()
    evidence: Evidence | None = None
    unmatched: list[str] = []
    learned: dict[str, str] = {}
    group_size: int | None = None
    if query:
        # Not for a long task: its many words dilute any past request's, and reordering its covering picks cost
        # long tasks a need in both replay directions (docs/search-log.md); the tools called next still apply.
        learnt = (prior is not None and bool(prior)
                  and len(index.analyze(query).needs) < index.config.long_task_clauses)
        boosts = prior.boosts(prior.terms(query)) if learnt and prior is not None else {}
        # With evidence, twice the limit is ranked so that a tool called after such requests can move into it.
        wanted = 2 * limit if boosts else limit
        results = index.find(query, limit=wanted, groups=[group] if group is not None else None)
        if not results.hits or not fit.fits(results.evidence):  # no match at all is said the same way
            groups = tuple(g.name for g in catalog.groups) if group is None else (group,)
            return Results(results.hits, results.needs, results.evidence, enabled=list(named), nothing_fits=groups)
        hits, needs, evidence = results.hits, results.needs, results.evidence
        if boosts:
            hits = _learned_order(hits, boosts, floor, limit)
            learned.update((hit.entry.name, "often used for such requests") for hit in hits
                           if boosts.get(hit.entry.name, 0.0) > 0)
        unmatched = unanswered(needs) if hits else []
        best = hits[0].score if hits else 0.0
        for rank, hit in enumerate(hits):
            strong = best <= 0 or hit.score >= floor * best
            extra = enabled_places is not None and enabled_places <= rank < limit
            (found if strong and not extra else weaker).append(hit.entry)
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
    companions: list[ToolEntry] = []
    if prior and found:
        listed = {entry.name for entry in [*found, *over, *weaker, *producers]}
        for name, after in prior.companions([entry.name for entry in found]):
            # After visibility: a tool this session may not see is never suggested, whatever history says.
            if name in listed or name not in catalog or (visible is not None and not visible(name)):
                continue
            entry = catalog.get(name)
            if group is None or entry.group == group:
                companions.append(entry)
                learned[name] = f"often called after {after}"
            if len(companions) == MAX_COMPANIONS:
                break
    return Results(hits, needs, evidence, enabled=found, over_cap=over, weaker=weaker, producers=producers,
                   unmatched=unmatched, group_size=group_size, companions=companions, learned=learned)


def _learned_order(hits: list[Hit], boosts: dict[str, float], floor: float, limit: int) -> list[Hit]:
    """The first `limit` hits once the usage prior has reordered them (scores unchanged: the floor is decided on
    relevance alone)."""
    order = reorder([(hit.entry.name, hit.score) for hit in hits], boosts, floor=floor)
    kept = [hits[i] for i in order[:limit]]
    best = max((hit.score for hit in hits), default=0.0)
    # The best-scored hit stays first whatever the prior says, so the floor's reference is the first result.
    top = next((hit for hit in hits if hit.score == best), None)
    if top is not None and kept and kept[0] is not top:
        kept = [top, *[hit for hit in kept if hit is not top]][:limit]
    return kept


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
