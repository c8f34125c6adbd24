"""What an upstream sends for a client reaches only the client that caused it, and what a client sets reaches the
upstreams that serve it (issue #20, items 5 and 9), against the features upstream (tests/upstreams/features.py)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from .conftest import text_of
from .helpers import eventually, running_http
from .upstreams.features import build
from .upstreams.helpers import opened

FEATURES = Path(__file__).resolve().parent / "upstreams" / "features.py"
VSCODE = types.Implementation(name="Visual Studio Code", version="1.0")

pytestmark = pytest.mark.process


@asynccontextmanager
async def entry(upstream: str, **options: Any) -> AsyncIterator[dict[str, Any]]:
    if upstream == "stdio":
        yield {"command": sys.executable, "args": [str(FEATURES), "--name", "feat"], **options}
        return
    async with running_http(build("feat").streamable_http_app()) as base:
        yield {"url": base + "/mcp", **options}


async def _call(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
    await client.call_tool("search_tools", {"tool_names": [tool]})
    return await client.call_tool(tool, arguments or {})


# -- item 9: logging/setLevel reaches a session's own upstream --------------------------------------------------------


@pytest.mark.parametrize("upstream", ["stdio", "http"])
async def test_set_level_reaches_the_sessions_own_upstream(tmp_path: Path, upstream: str) -> None:
    async with entry(upstream, scope="session") as server, opened(tmp_path, {"feat": server}) as o:
        async with Client(o.server, mode="legacy", client_info=VSCODE) as first, \
                Client(o.server, mode="legacy", client_info=VSCODE) as second:
            with pytest.warns(MCPDeprecationWarning):
                await first.set_logging_level("error")
            # Set before its own connection started: that connection gets it when it comes up.
            assert text_of(await _call(first, "feat__level")) == "error meta="
            with pytest.warns(MCPDeprecationWarning):
                await first.set_logging_level("warning")
            # Set while it serves: sent at once.
            assert text_of(await _call(first, "feat__level")) == "warning meta="
            assert text_of(await _call(first, "feat__log", {"level": "notice", "message": "x"})) == "below the level"
            if upstream == "stdio":  # (over HTTP the features server keeps one level for all its sessions)
                # Another session's own connection hears only its own session's level (it set none).
                assert text_of(await _call(second, "feat__level")) == "debug meta="
