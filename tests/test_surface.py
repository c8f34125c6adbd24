"""Which surface a connection gets."""

from __future__ import annotations

import pytest
from mcp.client import Client

from lazytools.server.clients import client_table
from lazytools.server.surface import choose_surface

from .helpers import tool_names

TABLE = client_table({})


@pytest.mark.parametrize(("mode", "version", "has_session", "client", "expected"), [
    ("auto", "2025-11-25", True, "Visual Studio Code", "dynamic"),
    ("auto", "2025-11-25", True, "claude-ai", "proxy"),
    ("auto", "2025-11-25", True, "CLAUDE-AI", "proxy"),
    ("auto", "2025-11-25", True, "someone-new", "dynamic"),
    ("auto", "2025-11-25", True, None, "dynamic"),
    ("auto", "2026-07-28", True, "Visual Studio Code", "proxy"),
    ("dynamic", "2026-07-28", True, "Visual Studio Code", "proxy"),
    ("auto", "2025-11-25", False, "Visual Studio Code", "proxy"),
    ("dynamic", "2025-11-25", True, "claude-ai", "dynamic"),
    ("proxy", "2025-06-18", True, "Visual Studio Code", "proxy"),
])
def test_choose_surface(mode: str, version: str, has_session: bool, client: str | None, expected: str) -> None:
    assert choose_surface(mode=mode, protocol_version=version, has_session=has_session,  # type: ignore[arg-type]
                          client_name=client, table=TABLE, default="dynamic") == expected


def test_default_surface_for_unknown_clients() -> None:
    assert choose_surface(mode="auto", protocol_version="2025-11-25", has_session=True, client_name="x",
                          table=TABLE, default="proxy") == "proxy"


async def test_the_sdk_default_client_gets_proxy_and_legacy_mode_gets_dynamic(server_factory) -> None:
    """What the README's client table says about the installed SDK: `Client(...)` (mode "auto") adopts 2026-07-28,
    a stateless protocol with no per-session list; `Client(..., mode="legacy")` shakes hands as `mcp` → dynamic."""
    async with Client(server_factory()) as auto:
        found = await auto.call_tool("search_tools", {"query": "weather forecast for a city"})
        assert not found.is_error
        assert await tool_names(auto) == ["search_tools", "invoke_tool"]
    async with Client(server_factory(), mode="legacy") as legacy:
        await legacy.call_tool("search_tools", {"query": "weather forecast for a city"})
        assert "get_forecast" in await tool_names(legacy)
