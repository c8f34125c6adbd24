"""The server-author example (examples/my_server.py) works end to end as a spawned stdio server."""

from __future__ import annotations

import sys
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from .conftest import text_of

pytestmark = pytest.mark.process  # every test here starts lazytools or an upstream as a child process

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "my_server.py"


async def test_my_server_example(tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(EXAMPLE)], cwd=str(tmp_path))
    async with Client(params, mode="legacy", client_info=types.Implementation(name="claude-ai", version="1")) as c:
        found = await c.call_tool("search_tools", {"query": "how many widgets are in stock"})
        assert text_of(found).startswith("Found: check_stock")
        ok = await c.call_tool("invoke_tool", {"tool_name": "check_stock", "arguments": {"item": "widget"}})
        assert ok.structured_content == {"item": "widget", "units": 12}
        bad = await c.call_tool("invoke_tool", {"tool_name": "reorder_item", "arguments": {"item": "w", "units": 0}})
        assert bad.is_error and "units: 0 is less than or equal to the minimum of 0" in text_of(bad)
        missing = await c.call_tool("invoke_tool", {"tool_name": "check_stock", "arguments": {"item": "nope"}})
        assert missing.is_error and "unknown item 'nope'" in text_of(missing)
