"""Text reports for the shell: search the catalog, and what a fresh session sees and costs in tokens."""

from __future__ import annotations

from dataclasses import dataclass

from .catalog import Catalog
from .modes import Surface
from .safetext import clip
from .search import build_index
from .search.embedders import DEFAULT_EMBEDDER
from .server.core import LazyServer
from .server.metatools import check_group, signature
from .server.sessions import SessionState
from .tokens import tokenizer_name, tools_tokens

__all__ = ["SurfaceCost", "search_report", "surface_cost", "surface_report"]


def search_report(catalog: Catalog, query: str, *, limit: int, group: str | None = None,
                  semantic: bool = False, embedder: str = DEFAULT_EMBEDDER) -> str:
    if group is not None:
        check_group(catalog, group)
    index = build_index(catalog, semantic=semantic, embedder=embedder)
    hits = index.search(query, limit=limit, groups=[group] if group else None)
    if not hits:
        return f"No tools match '{clip(query)}'."
    width = max(len(str(rank)) for rank in range(1, len(hits) + 1))
    lines = []
    for rank, hit in enumerate(hits, 1):
        lines.append(f"{rank:>{width}}. {hit.score:6.2f}  {signature(hit.entry)} [{hit.entry.group}]")
        lines.append(f"{'':>{width}}  {'':6}  {hit.entry.summary}")
    return "\n".join(lines)


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
    lines = [f"Catalog: {len(server.catalog)} tools in {len(server.catalog.groups)} groups. Tokens counted with "
             f"{tokenizer_name()} over the tools/list JSON."]
    for surface in ("dynamic", "proxy"):
        cost = surface_cost(server, surface)
        lines.append(f"{surface:>8}: {', '.join(cost.tools)}")
        lines.append(f"{'':>8}  {cost.tokens} tokens vs {cost.full_tokens} for every tool ({cost.share:.1%})")
    return "\n".join(lines)
