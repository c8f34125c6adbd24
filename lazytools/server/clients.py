"""Which known MCP clients act on `notifications/tools/list_changed`: data, overridable by the user.

Seeded from observed behaviour (their code read or issue reports, November 2026); no client capability
announces it, so servers keep a table keyed by `clientInfo.name`. `LAZYTOOLS_CLIENT_SURFACES` (JSON) adds
or replaces entries; clients absent from both get `LAZYTOOLS_DEFAULT_SURFACE`.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..modes import Surface

__all__ = ["KNOWN_CLIENTS", "client_table"]

KNOWN_CLIENTS: Mapping[str, Surface] = {
    "Visual Studio Code": "dynamic",
    "Visual Studio Code - Insiders": "dynamic",
    "claude-code": "dynamic",
    "claude-ai": "proxy",
    "Zed": "dynamic",
    "Cline": "dynamic",
    "continue-client": "proxy",
    "continue-cli-client": "proxy",
    "goose": "dynamic",
    "gemini-cli-mcp-client": "dynamic",
    "fast-agent-mcp": "dynamic",
    "codex-mcp-client": "proxy",
    "mcp-inspector": "dynamic",
    # The Python SDK's default name: the OpenAI Agents SDK re-lists before every model call.
    "mcp": "dynamic",
}


def client_table(overrides: Mapping[str, Surface]) -> dict[str, Surface]:
    """The effective table, keyed by lower-cased client name (names are matched case-insensitively)."""
    table = {name.lower(): surface for name, surface in KNOWN_CLIENTS.items()}
    table.update({name.lower(): surface for name, surface in overrides.items()})
    return table
