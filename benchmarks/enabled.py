"""`python -m benchmarks.enabled`: how many tools a dynamic session has listed after each search of a realistic
sequence, on the multi-server dev catalog (314 tools of 26 servers), before and after the relevance floor and
the cap. Each search goes through a real in-memory MCP client; the count is the session's fresh tools/list less
search_tools and invoke_tool.

The sequence is an afternoon of a developer with a gateway of many servers, written before it was measured:
reading a config, a web search for an error, issue and Slack, Kubernetes, the browser, a chart, memory, a pull
request, then the same again for a second incident. It is kept here, unchanged, so the figures can be re-made.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client

from lazytools.app import build_server
from lazytools.settings import Settings
from lazytools.sources.jsonl import load_jsonl_catalog

__all__ = ["SEQUENCE", "enabled_counts", "main"]

CATALOG = Path(__file__).parent / "data" / "multiserver" / "tools.jsonl"
FIRST_SERVERS = 26
"""The sequence was measured on the dev catalog's first 26 servers (314 tools), before 28 more were added for
long tasks; the benchmark keeps to them so its figures in docs/search.md can be re-made."""


def _first_servers(path: Path, count: int = FIRST_SERVERS) -> list[str]:
    """The lines of the catalog's first `count` servers, in file order."""
    kept: list[str] = []
    servers: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        server = json.loads(line)["server"]
        if server not in servers and len(servers) == count:
            continue
        servers.add(server)
        kept.append(line)
    return kept

SEQUENCE = (
    "read the config file settings.yaml",
    "search the web for the error message ECONNRESET in node",
    "open an issue on github about the crash",
    "post a message in the #dev slack channel",
    "show me the pods in the staging namespace",
    "get the logs of the api pod",
    "take a screenshot of the dashboard page",
    "make a line chart of the error rate over the last week",
    "remember that the root cause was a connection pool leak",
    "create a pull request with the fix",
    "what changed in the files of that pull request",
    "scale the api deployment to 5 replicas",
    "search the web for connection pool sizing best practices",
    "write the incident summary to notes/incident.md",
    "reply in the slack thread that it is fixed",
)


async def enabled_counts(settings: Settings, queries: tuple[str, ...] = SEQUENCE) -> list[int]:
    """Tools listed by the session (besides the meta-tools) after each search of `queries`."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tools.jsonl"
        path.write_text("\n".join(_first_servers(CATALOG)) + "\n", encoding="utf-8")
        catalog = load_jsonl_catalog(path).catalog
    server = build_server(catalog, settings)
    counts: list[int] = []
    info = types.Implementation(name="Visual Studio Code", version="1.0")
    async with Client(server, mode="legacy", client_info=info) as client:
        for query in queries:
            await client.call_tool("search_tools", {"query": query})
            listed = (await client.list_tools(cache_mode="bypass")).tools
            counts.append(len([tool for tool in listed if tool.name not in ("search_tools", "invoke_tool")]))
    return counts


async def _report() -> str:
    variants = {
        "before (every match enabled, no cap)": {"relevance_floor": 0.0, "max_enabled": 10_000},
        "floor .4, no cap": {"max_enabled": 10_000},
        "floor .4, cap 20 (the defaults)": {},
        "floor .4, cap 10": {"max_enabled": 10},
    }
    lines = [f"Tools listed after each of {len(SEQUENCE)} searches (dev catalog, 314 tools):"]
    for label, overrides in variants.items():
        counts = await enabled_counts(Settings(_env_file=None, **overrides))  # type: ignore[call-arg, arg-type]
        lines.append(f"- {label}: {' '.join(map(str, counts))} (mean {statistics.mean(counts):.1f})")
    return "\n".join(lines)


def main() -> int:
    print(anyio.run(_report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
