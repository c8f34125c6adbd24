"""What the places a search gives cost in context: after one search, against an eager tools/list.

    python -m benchmarks.places [--tools N]

A catalog of the dev set's first N tools (500 by default: real tools of the multi-server dev catalog, with their
servers' descriptions) is served; each request of the dev sets (`queries`, `deliverables`, `prereqs`) is searched
once in a fresh session with no limit given, as a model asks. The context after that search is what the client
then holds: its tools/list (dynamic: the meta-tools and the tools the search enabled; proxy: search_tools and
invoke_tool) and the search's result text. Printed per surface, with the places per need on (the default) and off
(`{"off": ["places"]}`): mean and largest context as a share of an eager tools/list of the whole catalog, and the
mean number of tools a result names. Tokens are counted as `lazytools.tokens` counts them (tools/list JSON).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import anyio
import mcp_types as types

from lazytools.app import build_server
from lazytools.evaluate import read_queries
from lazytools.modes import Surface
from lazytools.server.core import LazyServer
from lazytools.settings import Settings
from lazytools.sources.jsonl import load_jsonl_catalog, read_servers
from lazytools.state.sessions import SessionState
from lazytools.tokens import count_tokens, tokenizer_name, tools_tokens

from .searchsets import DATA

SETS = ("queries", "deliverables", "prereqs")
BUDGET = 0.02
"""The context after one search should stay within this share of an eager tools/list (issue #32, item 4)."""


def _server(tools: Path, ranking: str) -> LazyServer:
    loaded = load_jsonl_catalog(tools, servers=read_servers(DATA / "servers.jsonl"))
    settings = Settings(_env_file=None, search_ranking=ranking, learn=False)  # type: ignore[call-arg]
    return build_server(loaded.catalog, settings)


async def _context(server: LazyServer, surface: Surface, query: str) -> tuple[int, int]:
    """(tokens the client holds after one search of `query` in a fresh session, tools the result names)."""
    state = SessionState(key=f"places-{surface}", surface=surface)
    result = await server.call(state, "search_tools", {"query": query})
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    listed = server.surface_tools(state)
    named = sum(1 for line in text.splitlines() if line.startswith(("- ", "* ")) or line[:3].strip(".").isdigit())
    return tools_tokens(listed) + count_tokens(text), named


def measure(server: LazyServer, queries: Sequence[str]) -> dict[str, tuple[list[int], list[int]]]:
    found: dict[str, tuple[list[int], list[int]]] = {}
    surfaces: tuple[Surface, ...] = ("dynamic", "proxy")
    for surface in surfaces:
        sizes: list[int] = []
        counts: list[int] = []
        for query in queries:
            size, named = anyio.run(_context, server, surface, query)
            sizes.append(size)
            counts.append(named)
        found[surface] = (sizes, counts)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=500, help="the catalog's size (the dev catalog's first N)")
    args = parser.parse_args(argv)
    lines = (DATA / "tools.jsonl").read_text(encoding="utf-8").splitlines()[: args.tools]
    queries = [q.query for name in SETS for q in read_queries(DATA / f"{name}.jsonl")]
    with tempfile.TemporaryDirectory() as folder:
        tools = Path(folder) / "tools.jsonl"
        tools.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"Tokens ({tokenizer_name()}); {len(lines)} tools of the dev catalog, {len(queries)} requests "
              f"({', '.join(SETS)}), one search each in a fresh session, no limit given.\n")
        print("| places | surface | eager tools/list | context after one search: mean | largest | mean / eager | "
              "largest / eager | tools named (mean) |")
        print("|---|---|---|---|---|---|---|---|")
        for label, ranking in (("per need (default)", ""), ("5 always", '{"off": ["places"]}')):
            server = _server(tools, ranking)
            eager = tools_tokens([entry.to_mcp() for entry in server.catalog])
            for surface, (sizes, counts) in measure(server, queries).items():
                mean = statistics.mean(sizes)
                print(f"| {label} | {surface} | {eager} | {mean:.0f} | {max(sizes)} | {mean / eager:.2%} | "
                      f"{max(sizes) / eager:.2%} | {statistics.mean(counts):.1f} |", flush=True)
    print(f"\nBudget: {BUDGET:.0%} of the eager tools/list.", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
