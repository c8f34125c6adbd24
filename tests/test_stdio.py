"""lazytools as a spawned process over stdio, driven by the SDK's real client (and by hand, byte for byte)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from .conftest import Recorder, text_of
from .helpers import tool_names
from .test_stdio_faults import INIT, LIST, _exchange

pytestmark = pytest.mark.process  # every test here starts lazytools or an upstream as a child process


def _params(tmp_path: Path, **env: str) -> StdioServerParameters:
    # cwd is an empty folder so a developer's own .env cannot change what the test sees.
    return StdioServerParameters(command=sys.executable, args=["-m", "lazytools"], cwd=str(tmp_path),
                                 env={"LAZYTOOLS_FILES_ROOT": str(tmp_path), **env})


def _client(tmp_path: Path, name: str, recorder: Recorder | None = None, mode: str = "legacy", **env: str) -> Client:
    return Client(_params(tmp_path, **env), mode=mode, message_handler=recorder,
                  client_info=types.Implementation(name=name, version="1"))


async def test_dynamic_session_over_stdio(tmp_path: Path) -> None:
    recorder = Recorder()
    async with _client(tmp_path, "Visual Studio Code", recorder) as c:
        assert c.server_capabilities.tools is not None and c.server_capabilities.tools.list_changed is True
        assert await tool_names(c) == ["search_tools", "invoke_tool"]
        result = await c.call_tool("search_tools", {"query": "convert celsius to fahrenheit temperature"})
        recorder.mark("result")
        assert recorder.events[:2] == ["list_changed", "result"]
        found = [name for name in await tool_names(c) if name not in ("search_tools", "invoke_tool")]
        assert found and all(name in text_of(result) for name in found)
        (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
        await c.call_tool("search_tools", {"tool_names": ["read_text_file"]})
        read = await c.call_tool("read_text_file", {"path": "notes.txt"})
        assert not read.is_error and "beta" in text_of(read)


async def test_proxy_and_stateless_sessions_over_stdio(tmp_path: Path) -> None:
    recorder = Recorder()
    async with _client(tmp_path, "claude-ai", recorder) as c:
        result = await c.call_tool("search_tools", {"query": "sha256 hash of text"})
        assert "input_schema:" in text_of(result)
        assert await tool_names(c) == ["search_tools", "invoke_tool"] and recorder.events == []
    async with _client(tmp_path, "Visual Studio Code", mode="2026-07-28") as modern:
        assert await tool_names(modern) == ["search_tools", "invoke_tool"]
        await modern.call_tool("search_tools", {"query": "word count"})
        assert await tool_names(modern) == ["search_tools", "invoke_tool"]


async def test_two_processes_do_not_share_state(tmp_path: Path) -> None:
    async with _client(tmp_path, "Visual Studio Code") as a, _client(tmp_path, "Visual Studio Code") as b:
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.call_tool, "search_tools", {"tool_names": ["read_text_file"]})
            tg.start_soon(b.call_tool, "search_tools", {"query": "base64 encode"})
        assert "read_text_file" in await tool_names(a) and "read_text_file" not in await tool_names(b)


def test_stdout_carries_only_protocol_messages(tmp_path: Path) -> None:
    search = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "search_tools", "arguments": {"query": "uuid"}}})
    messages, stderr = _exchange(tmp_path, [search], frozenset({1, 2, 99}), list_after=2)
    by_id = {m["id"]: m for m in messages if "id" in m}
    assert set(by_id) == {1, 2, 99} and all(m.get("jsonrpc") == "2.0" for m in messages)
    methods = [m.get("method") for m in messages if "method" in m]
    assert methods == ["notifications/tools/list_changed"]
    listed = [t["name"] for t in by_id[99]["result"]["tools"]]  # type: ignore[index]
    assert listed[:2] == ["search_tools", "invoke_tool"] and len(listed) > 2
    assert "session" in stderr  # logs went to stderr


@pytest.mark.parametrize("stdin", ["pipe", "file"])
def test_requests_written_with_end_of_input_are_all_answered(tmp_path: Path, stdin: str) -> None:
    """`printf ... | lazytools` and `lazytools < requests.jsonl`: everything arrives at once, the input ends at
    once, and no answer may be lost (the SDK stops at end of input and cancels what is still running)."""
    search = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "search_tools", "arguments": {"query": "convert celsius to fahrenheit"}}}
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "invoke_tool", "arguments": {"tool_name": "generate_uuid", "arguments": {}}}}
    requests = "".join(json.dumps(m) + "\n" for m in [*INIT, LIST, search, call])
    command = [sys.executable, "-m", "lazytools"]
    if stdin == "pipe":
        proc = subprocess.run(command, input=requests, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              check=False)
    else:
        (tmp_path / "requests.jsonl").write_text(requests)
        with (tmp_path / "requests.jsonl").open() as file:
            proc = subprocess.run(command, stdin=file, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                                  check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    by_id = {m.get("id"): m for m in map(json.loads, proc.stdout.splitlines())}
    assert {1, 2, 3, 99} <= set(by_id), proc.stdout[-2000:]
    assert "convert_temperature" in text_of(types.CallToolResult.model_validate(by_id[2]["result"]))
    assert by_id[3]["result"]["isError"] is False


def test_bad_settings_are_a_clear_error_on_stderr(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "lazytools"], input="", cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False, env={"LAZYTOOLS_ALWAYS_AVAILABLE_TOOLS": "sha256_hexx",
                                                        "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2 and proc.stdout == ""
    assert "unknown tool 'sha256_hexx'" in proc.stderr and "sha256" in proc.stderr
