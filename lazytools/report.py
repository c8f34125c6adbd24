"""Text reports for the shell: search the catalog, and what a fresh session sees and costs in tokens."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from .catalog import Catalog
from .learning.sqlite import SqliteUsageStore
from .learning.summary import UsageSummary, summarize
from .modes import Surface
from .safetext import clip
from .search import build_index
from .search.config import configured_ranking
from .search.embedders import DEFAULT_EMBEDDER
from .search.fit import DEFAULT_FIT
from .server.core import LazyServer
from .server.rendering import language_line, nothing_fits_line, other_language, ranking_text
from .state.sessions import SessionState
from .tokens import tokenizer_name, tools_tokens

__all__ = ["SurfaceCost", "UsageUnreadable", "down_report", "search_report", "shared_usage_report", "surface_cost",
           "surface_report", "usage_report"]


class UsageUnreadable(Exception):
    """`lazytools usage` could not read the store (damaged, a symbolic link, not readable)."""


def search_report(catalog: Catalog, query: str, *, limit: int, group: str | None = None,
                  semantic: bool = False, embedder: str = DEFAULT_EMBEDDER, ranking: str = "",
                  cache_dir: Path | None = None) -> str:
    """The ranked matches of `query`, as the server ranks them (`ranking`: LAZYTOOLS_SEARCH_RANKING; the vectors
    through the server's vector cache in `cache_dir`)."""
    if group is not None:
        catalog.check_group(group)
    index = build_index(catalog, semantic=semantic, embedder=embedder, cache_dir=cache_dir,
                        config=configured_ranking(ranking))
    results = index.find(query, limit=limit, groups=[group] if group else None)
    groups = [group] if group else [g.name for g in catalog.groups]
    language = other_language(results, query)  # as search_tools says it
    if not results.hits:
        return nothing_fits_line(query, groups, language=language)
    if not DEFAULT_FIT.fits(results.evidence):  # what search_tools says; the closest tools still shown, as a ranking
        return (nothing_fits_line(query, groups) + "\nClosest, not enabled by search_tools:\n"
                + ranking_text(results.hits))
    ranked = ranking_text(results.hits)
    return ranked if language is None else f"{language_line(language)}\n{ranked}"


@dataclass(frozen=True, slots=True)
class SurfaceCost:
    surface: Surface
    tools: list[str]
    tokens: int
    full_tokens: int
    catalog_size: int

    @property
    def share(self) -> float:
        return self.tokens / self.full_tokens if self.full_tokens else 0.0


def surface_cost(server: LazyServer, surface: Surface) -> SurfaceCost:
    """The first tools/list of a fresh session with this surface, against listing the whole catalog."""
    tools = server.surface_tools(SessionState(key="report", surface=surface))
    everything = [entry.to_mcp() for entry in server.catalog]
    return SurfaceCost(surface, [t.name for t in tools], tools_tokens(tools), tools_tokens(everything),
                       len(server.catalog))


def surface_report(server: LazyServer) -> str:
    serving = sum(1 for group in server.catalog.groups if server.catalog.in_group(group.name))
    lines = [f"Catalog: {len(server.catalog)} tools in {serving} groups. Tokens counted with "
             f"{tokenizer_name()} over the tools/list JSON."]
    for surface in ("dynamic", "proxy"):
        cost = surface_cost(server, surface)
        lines.append(f"{surface:>8}: {', '.join(cost.tools)}")
        if cost.catalog_size:
            lines.append(f"{'':>8}  {cost.tokens} tokens vs {cost.full_tokens} for every tool ({cost.share:.1%})")
        else:  # nothing to compare with (every upstream failed, an empty JSONL): a share would be nonsense
            lines.append(f"{'':>8}  {cost.tokens} tokens; the catalog has no tools to compare with")
    return "\n".join(lines)


def down_report(down: list[str]) -> str:
    """The line a one-shot command adds when configured upstream servers are not serving: their tools are missing
    from what it printed."""
    return (f"Not serving: {'; '.join(clip(item, 300) for item in down)}. Their tools are missing from this answer "
            "(stderr says more); exit status 1.")


def usage_report(directory: Path, *, limit: int) -> str:
    """The most called tools in the usage store of `directory` and the ALWAYS_AVAILABLE_TOOLS line they suggest."""
    path = directory / "usage.sqlite3"
    if not path.exists() and not path.is_symlink():
        return f"No usage recorded yet ({path} does not exist; LAZYTOOLS_LEARN=true records it while serving)."
    if path.is_symlink():  # the server does not follow it, nor does the report (sqlite3 would)
        raise UsageUnreadable(f"Cannot read {path}: it is a symbolic link: not followed")
    if not path.is_file():  # a FIFO or a folder: the server records nothing there either
        raise UsageUnreadable(f"Cannot read {path}: it is not a regular file")
    try:
        store = SqliteUsageStore(path, repair=False)  # a report never moves the server's file aside
        try:
            summary = summarize(store)
        finally:
            store.close()
    except (OSError, sqlite3.Error) as exc:
        raise UsageUnreadable(f"Cannot read {path}: {exc}") from None
    return _usage_text(summary, str(path), limit=limit)


def shared_usage_report(url: str, *, prefix: str, timeout: float, limit: int) -> str:
    """`usage_report` of the usage replicas keep in Redis (a state URL is set)."""
    from .learning.redis_store import RedisUsageStore

    store = RedisUsageStore(url, prefix=prefix, timeout=timeout)
    try:
        summary = summarize(store)
    except OSError as exc:
        raise UsageUnreadable(f"Cannot read the usage kept in Redis (LAZYTOOLS_STATE_URL): {exc}") from None
    finally:
        store.close()
    return _usage_text(summary, f"Redis, {prefix}usage:*", limit=limit)


def _usage_text(summary: UsageSummary, where: str, *, limit: int) -> str:
    lines = [f"{summary.searches} searches, {summary.calls} tool calls in {summary.sessions} sessions that searched or "
             f"called, {summary.calling} of which called a tool ({where}).",
             "Calls decay by half every 30 days.", "",
             f"{'calls':>8} {'failed':>7} {'sessions':>8}  tool"]
    for tool in summary.tools[:limit]:
        lines.append(f"{tool.calls:8.1f} {tool.failed:7.1f} {tool.session_share:8.0%}  {clip(tool.tool, 120)}")
    pins = summary.always_available()
    lines.append("")
    if pins:
        lines.append("Called in at least a quarter of the sessions; to list them from the start:")
        lines.append("LAZYTOOLS_ALWAYS_AVAILABLE_TOOLS=" + ",".join(pins))
    else:
        lines.append("No tool is called in a quarter of the sessions yet: no LAZYTOOLS_ALWAYS_AVAILABLE_TOOLS to suggest.")
    return "\n".join(lines)
