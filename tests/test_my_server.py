"""The server-author example (examples/my_server.py) works end to end as a spawned stdio server."""

from __future__ import annotations

import json
import signal
import subprocess
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


def test_my_server_stops_quietly_on_ctrl_c(tmp_path: Path) -> None:
    """Before: Ctrl-C while it served printed a KeyboardInterrupt traceback."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "shell", "version": "1"}}}
    with subprocess.Popen([sys.executable, str(EXAMPLE)], cwd=tmp_path, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps(initialize) + "\n")
            process.stdin.flush()
            answer = json.loads(process.stdout.readline())  # serving: its imports are done, its loop runs
            assert answer["id"] == 1 and "serverInfo" in answer["result"]
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
