"""What the model holds before and after one search, each surface and each rendering form, beside FastMCP's BM25
search transform on the same catalog and tasks.

    python -m benchmarks.context [--tools N] [--forms 'NAME;...'] [--no-fastmcp] [--tasks N]

The catalog is the dev catalog's whole servers in file order until it holds at least N tools (500 by default: 502
real tools of 39 servers, with their servers' descriptions). The tasks are the requests of the dev sets `queries`,
`confirm`, `everyday` and `crossserver` whose every need has a tool in that catalog (`--tasks N` keeps the first N).
Each task is searched once in a fresh session, with no limit given, as a model asks.

Per surface and form: the initial tools/list; the context after one search (the tools/list then, which on the
dynamic surface holds the tools the search enabled, plus the result text the model reads); both as a share of an
eager tools/list of the whole catalog; R@5 as served (the first five tools the result names); and, on the dynamic
surface, the recall of the tools the search enabled (those the model may call at once). Tokens are counted
as `lazytools.tokens` counts them (cl100k_base over the tools/list JSON, the result as text). A form is a set of
settings (`FORMS`): the manifest's budget is the knob. A cut (`benchmarks.context_cuts.CUTS`, rows "cut: ...") is a
rewriting of what a form served that no setting makes, for what it would save; it changes no recall.

FastMCP (`pip install fastmcp`, in the `bench` extra) is served the same tools with `BM25SearchTransform()` at its
defaults (five results, as tool JSON); its initial list, its list plus the search's text after one search, and its
R@5 are printed in the same run. Without fastmcp installed the report says so.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

from lazytools.app import build_server
from lazytools.evaluate import LabelledQuery, QueryResult, read_queries
from lazytools.modes import Surface
from lazytools.search.results import Results
from lazytools.server.core import LazyServer
from lazytools.server.metatools import search_tools
from lazytools.settings import Settings
from lazytools.sources.jsonl import load_jsonl_catalog, read_servers
from lazytools.state.sessions import SessionState
from lazytools.tokens import count_tokens, tokenizer_name, tools_tokens

from .context_cuts import CUTS, Cut
from .searchsets import DATA

__all__ = ["FORMS", "Figures", "Served", "catalog_lines", "main", "measure", "served", "tasks"]

SETS = ("queries", "confirm", "everyday", "crossserver")
K = 5
FORMS: dict[str, dict[str, Any]] = {
    "manifest 12,060 chars (the old bound, every summary whole)": {"manifest_chars": 12_060},
    "manifest 2,000 chars": {"manifest_chars": 2_000},
    "manifest 1,200 chars (default)": {},
    "manifest 600 chars": {"manifest_chars": 600},
    "no manifest": {"manifest_chars": 0},
    "default, relevance floor .6": {"relevance_floor": 0.6},
    "default, relevance floor .8": {"relevance_floor": 0.8},
    "default, no bridge (dynamic_bridge false)": {"dynamic_bridge": False},
}
"""Each form's settings (the default form is the settings' defaults). The floors enable fewer tools per search (the
others stay suggestions): not a rendering form, shown for what the dynamic surface's list costs. Without the bridge
a dynamic session lists no invoke_tool and its results name the enabled tools alone."""


def catalog_lines(tools: int) -> list[str]:
    """The dev catalog's lines of whole servers, in file order, until at least `tools` lines are kept."""
    kept: list[str] = []
    servers: set[str] = set()
    for line in (DATA / "tools.jsonl").read_text(encoding="utf-8").splitlines():
        server = json.loads(line)["server"]
        if server not in servers:
            if len(kept) >= tools:
                break
            servers.add(server)
        kept.append(line)
    return kept


def tasks(ids: set[str], sets: Sequence[str] = SETS) -> list[LabelledQuery]:
    """The dev requests whose every need has a tool among `ids`."""
    return [query for name in sets for query in read_queries(DATA / f"{name}.jsonl")
            if all(need & ids for need in query.relevant)]


@dataclass(frozen=True, slots=True)
class Figures:
    initial: int
    after: list[int]
    """Tokens after one search, per task."""
    recall: float
    """R@5 as served, mean over the tasks."""
    enabled: float | None = None
    """Recall of the tools the search enabled (dynamic: callable at once), mean over the tasks."""


@dataclass(frozen=True, slots=True)
class Served:
    """What one surface served: its first tools/list, and per task the tools/list after the search with the result
    the model reads and the search's results; the recalls, which no cut changes."""

    surface: Surface
    initial: list[types.Tool]
    after: list[tuple[list[types.Tool], str, Results]]
    recall: float
    enabled: float | None

    def figures(self, cut: Cut = Cut()) -> Figures:
        """The figures of what was served, or of what `cut` makes of it."""
        def listed(tools: list[types.Tool]) -> int:
            if cut.listed is Cut().listed:
                return tools_tokens(tools)
            dumped = (cut.listed(tool.model_dump(by_alias=True, mode="json", exclude_none=True)) for tool in tools)
            return tools_tokens([types.Tool.model_validate(tool) for tool in dumped if tool is not None])

        after = [listed(tools) + count_tokens(cut.text(text, results, self.surface))
                 for tools, text, results in self.after]
        return Figures(listed(self.initial), after, self.recall, self.enabled)


def _text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def _served(server: LazyServer, surface: Surface, queries: Sequence[LabelledQuery],
                  ids: Mapping[str, str]) -> Served:
    initial = server.surface_tools(SessionState(key=f"context-{surface}", surface=surface))
    settings = server.settings
    after: list[tuple[list[types.Tool], str, Results]] = []
    results: list[QueryResult] = []
    enabled: list[QueryResult] = []
    for number, query in enumerate(queries):
        state = SessionState(key=f"context-{surface}-{number}", surface=surface)
        text = _text(await server.call(state, "search_tools", {"query": query.query}))
        # The same meta-tool with the server's settings, for the order in which the result names its tools.
        outcome = search_tools(server.catalog, await server.index.ready(), {"query": query.query}, surface=surface,
                               default_limit=settings.search_limit, max_limit=settings.search_max_limit,
                               bridge=settings.dynamic_bridge, floor=settings.relevance_floor,
                               enable_at_most=settings.max_enabled)
        if outcome.text != text:
            raise AssertionError(f"the served text differs from the meta-tool's for {query.id}")
        after.append((server.surface_tools(state), text, outcome))
        results.append(QueryResult(query, [ids[entry.name] for entry in outcome.returned]))
        enabled.append(QueryResult(query, [ids[entry.name] for entry in outcome.enabled]))
    return Served(surface, initial, after, statistics.mean(r.recall(K) for r in results),
                  statistics.mean(r.recall(len(r.ranked)) for r in enabled) if surface == "dynamic" else None)


def served(tools: Path, queries: Sequence[LabelledQuery], overrides: Mapping[str, Any]) -> dict[Surface, Served]:
    """What each surface serves the tasks with the settings' defaults and `overrides`."""
    loaded = load_jsonl_catalog(tools, servers=read_servers(DATA / "servers.jsonl"))
    settings = Settings(_env_file=None, learn=False, **overrides)  # type: ignore[call-arg]
    server = build_server(loaded.catalog, settings)
    surfaces: tuple[Surface, ...] = ("dynamic", "proxy")
    return {surface: anyio.run(_served, server, surface, queries, loaded.ids) for surface in surfaces}


def measure(tools: Path, queries: Sequence[LabelledQuery], overrides: Mapping[str, Any]) -> dict[Surface, Figures]:
    return {surface: what.figures() for surface, what in served(tools, queries, overrides).items()}


def _fastmcp(tools: Path, queries: Sequence[LabelledQuery]) -> Figures | None:
    """FastMCP's BM25 search transform at its defaults over the same tools, through its in-memory client."""
    try:
        from fastmcp import Client, FastMCP  # type: ignore[import-not-found, unused-ignore]
        from fastmcp.server.transforms.search import BM25SearchTransform  # type: ignore[import-not-found, unused-ignore]
        from fastmcp.tools.base import Tool, ToolResult  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None

    class Described(Tool):  # type: ignore[misc]
        async def run(self, arguments: dict[str, Any]) -> Any:
            return ToolResult(content="not run")

    server = FastMCP("context")
    ids: dict[str, str] = {}
    for line in tools.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        name = record["name"] if record["name"] not in ids else f"{record['server']}_{record['name']}"
        ids[name] = record["id"]
        server.add_tool(Described(name=name, description=record.get("description") or "",
                                  parameters=record.get("input_schema") or {"type": "object"}))
    server.add_transform(BM25SearchTransform())

    def listed(result: Any) -> int:
        return count_tokens(json.dumps({"tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True)
                                                  for t in result]}))

    async def run() -> Figures:
        after: list[int] = []
        results: list[QueryResult] = []
        async with Client(server) as client:
            initial = listed(await client.list_tools())
            for query in queries:
                found = await client.call_tool("search_tools", {"query": query.query})
                text = "".join(getattr(c, "text", "") for c in found.content)
                after.append(initial + count_tokens(text))
                names = [tool["name"] for tool in json.loads(text)] if text.strip().startswith("[") else []
                results.append(QueryResult(query, [ids[name] for name in names if name in ids]))
        return Figures(initial, after, statistics.mean(r.recall(K) for r in results))

    return anyio.run(run)


def _row(label: str, surface: str, figures: Figures, eager: int) -> str:
    mean = statistics.mean(figures.after)
    return (f"| {label} | {surface} | {figures.initial} | {figures.initial / eager:.2%} | {mean:.0f} | "
            f"{mean / eager:.2%} | {max(figures.after)} | {figures.recall:.3f} | "
            f"{'' if figures.enabled is None else f'{figures.enabled:.3f}'} |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=500, help="whole servers until at least this many tools")
    parser.add_argument("--forms", default="",
                        help="form or cut names separated by ';' (a prefix is enough); all by default")
    parser.add_argument("--tasks", type=int, default=0, help="keep the first N tasks (all by default)")
    parser.add_argument("--no-fastmcp", action="store_true", help="leave FastMCP out")
    args = parser.parse_args(argv)
    lines = catalog_lines(args.tools)
    ids = {json.loads(line)["id"] for line in lines}
    queries = tasks(ids)[: args.tasks or None]
    wanted = [name.strip() for name in args.forms.split(";") if name.strip()]
    forms = {label: overrides for label, overrides in FORMS.items()
             if not wanted or any(label.startswith(name) for name in wanted)}
    cuts = {f"cut: {label}": cut for label, cut in CUTS.items()
            if not wanted or any(f"cut: {label}".startswith(name) for name in wanted)}
    with tempfile.TemporaryDirectory() as folder:
        tools = Path(folder) / "tools.jsonl"
        tools.write_text("\n".join(lines) + "\n", encoding="utf-8")
        loaded = load_jsonl_catalog(tools, servers=read_servers(DATA / "servers.jsonl"))
        # Every tool as its server lists it: lazytools' own listing leaves some titles out (lazytools.schematitles).
        eager = tools_tokens([types.Tool(name=entry.name, description=entry.description,
                                         input_schema=dict(entry.input_schema)) for entry in loaded.catalog])
        print(f"Tokens ({tokenizer_name()}); {len(loaded.catalog)} tools of {len(loaded.catalog.groups)} servers of "
              f"the dev catalog (an eager tools/list is {eager:,} tokens); {len(queries)} tasks ({', '.join(SETS)}), "
              "one search each in a fresh session, no limit given.\n")
        print("| form | surface | initial | / eager | after one search: mean | / eager | largest | R@5 as served | "
              "R of the enabled |")
        print("|---|---|---|---|---|---|---|---|---|")
        bases: dict[str, dict[Surface, Served]] = {}

        def base(overrides: Mapping[str, Any]) -> dict[Surface, Served]:
            key = json.dumps(overrides, sort_keys=True)
            if key not in bases:
                bases[key] = served(tools, queries, overrides)
            return bases[key]

        for label, overrides in forms.items():
            for surface, what in base(overrides).items():
                print(_row(label, surface, what.figures(), eager), flush=True)
        for label, cut in cuts.items():
            for surface, what in base(cut.base).items():
                print(_row(label, surface, what.figures(cut), eager), flush=True)
        fast = None if args.no_fastmcp else _fastmcp(tools, queries)
        if fast is not None:
            print(_row("FastMCP BM25SearchTransform (defaults)", "static", fast, eager))
        elif not args.no_fastmcp:
            print("| FastMCP | (not run: fastmcp is not installed; `pip install fastmcp`) | | | | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
