"""Access: a tool the config excludes cannot be reached by any name, and tool arguments never reach the logs."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from lazytools.transports.http import build_app

from .conftest import Recorder, client, text_of
from .helpers import eventually, running_http, tool_names
from .test_http import rpc
from .upstreams.faulty import entry
from .upstreams.helpers import opened

pytestmark = pytest.mark.process  # every test here starts lazytools or an upstream as a child process

EXCLUDED = ["alpha__delete_everything", "beta__read_file", "beta__delete_everything", "alpha__extra"]
"""Public names of tools the config below leaves out (alpha__extra appears upstream only after `grow`)."""

FORGED = [
    "alpha__delete_everything",  # the exact public name
    "ALPHA__DELETE_EVERYTHING", "Alpha__Delete_Everything", "alpha__Delete_everything",  # other case
    "delete_everything", "DELETE_EVERYTHING",  # the upstream's raw name
    "beta__delete_everything", "gamma__delete_everything",  # another server's namespace, or one that does not exist
    "alpha__alpha__delete_everything", "alpha___delete_everything", "alpha.delete_everything",
    "alpha__delete_everything ", " alpha__delete_everything", "alpha__delete_everything\n",
    "alpha__delete_*", "alpha__delete_everythin?", "alpha__delete_everyth\u0456ng",  # patterns, a Cyrillic і
    "beta__read_file", "BETA__READ_FILE", "read_file",  # left out by beta's include list
    "alpha__extra", "extra",  # excluded, and offered by alpha only after grow
]


def servers(pid_dir: Path, **alpha_options: Any) -> dict[str, Any]:
    return {
        "alpha": entry("alpha", "--tools", "echo,add,delete_everything,read_file,grow", pid_dir=pid_dir,
                       exclude=["delete_*", "extra"], **alpha_options),
        "beta": entry("beta", "--tools", "echo,add,read_file,delete_everything", pid_dir=pid_dir,
                      include=["beta__echo", "add"]),
    }


def calls_received(pid_dir: Path) -> list[str]:
    """Every tool name the two upstreams were asked to call, whatever lazytools did with the request."""
    return [line for path in sorted(pid_dir.glob("*.calls")) for line in path.read_text().splitlines()]


def assert_refused(result: Any, name: str) -> None:
    assert result.is_error, name
    message = text_of(result)
    assert "Unknown tool" in message, (name, message)
    assert "deleted everything" not in message and "read " not in message
    for excluded in EXCLUDED:  # a suggestion may only name what is reachable
        assert f"Did you mean: {excluded}" not in message and f", {excluded}" not in message


@pytest.mark.parametrize("surface", ["Visual Studio Code", "claude-ai", "2026-07-28"])
async def test_excluded_tools_cannot_be_found_listed_or_called_by_any_name(tmp_path: Path, surface: str) -> None:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    async with opened(tmp_path, servers(pid_dir)) as o:
        assert sorted(o.catalog.names()) == ["alpha__add", "alpha__echo", "alpha__grow", "alpha__read_file",
                                             "beta__add", "beta__echo"]
        mode = "2026-07-28" if surface == "2026-07-28" else "legacy"
        async with client(o.server, surface, mode=mode) as c:
            # The upstream adds `extra` while serving; lazytools re-lists, and the exclude still holds.
            assert text_of(await c.call_tool("invoke_tool", {"tool_name": "alpha__grow"})) == "grown"
            await eventually(lambda: calls_received(pid_dir).count("tools/list") == 3)  # alpha twice, beta once
            for query in ("delete every record in the store", "read a file from the store",
                          "increment an integer", "delete_everything", "extra"):
                found = text_of(await c.call_tool("search_tools", {"query": query, "limit": 20}))
                assert not any(name in found for name in EXCLUDED), (query, found)
            for group in ("alpha", "beta"):
                found = text_of(await c.call_tool("search_tools", {"group": group, "limit": 20}))
                assert not any(name in found for name in EXCLUDED), found
            for name in FORGED:
                by_name = text_of(await c.call_tool("search_tools", {"tool_names": [name]}))
                assert "Unknown tool" in by_name, (name, by_name)
                assert_refused(await c.call_tool("invoke_tool", {"tool_name": name, "arguments": {"path": "p"}}),
                               name)
                assert_refused(await c.call_tool(name, {"path": "p"}), name)
            assert not set(EXCLUDED) & set(await tool_names(c))
        assert text_of(await o.catalog.get("alpha__echo").call({"text": "still here"})) == "still here"
    received = calls_received(pid_dir)
    assert "grow" in received and "echo" in received  # the log works...
    assert not {"delete_everything", "read_file", "extra"} & set(received)  # ...and nothing excluded got through


async def test_a_pinned_server_lists_only_what_its_filters_allow(tmp_path: Path) -> None:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    async with opened(tmp_path, servers(pid_dir, defer_loading=False)) as o:
        for name in ("Visual Studio Code", "claude-ai"):
            async with client(o.server, name) as c:
                names = await tool_names(c)
                assert {"alpha__echo", "alpha__add", "alpha__read_file"} <= set(names)
                assert not set(EXCLUDED) & set(names)
                assert_refused(await c.call_tool("alpha__delete_everything", {}), "pinned")
    assert "delete_everything" not in calls_received(pid_dir)


async def test_forged_names_in_raw_http_tools_call_are_refused(tmp_path: Path) -> None:
    """No client-side list check in the way: the server alone decides, in a session and without one."""
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    async with opened(tmp_path, servers(pid_dir)) as o, running_http(build_app(o.server, o.settings)) as base:
        url = base + "/mcp"
        async with httpx2.AsyncClient(timeout=30) as http:
            response, _ = await rpc(http, url, "initialize", {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "Visual Studio Code", "version": "1"}})
            session_id = response.headers["mcp-session-id"]
            await rpc(http, url, "notifications/initialized", session_id=session_id, request_id=None)
            for session in (session_id, None):
                for name in FORGED:
                    for params in ({"name": name, "arguments": {}},
                                   {"name": "invoke_tool", "arguments": {"tool_name": name, "arguments": {}}}):
                        _, message = await rpc(http, url, "tools/call", params, session_id=session)
                        result = message["result"]
                        assert result["isError"] is True, (name, result)
                        assert "deleted everything" not in json.dumps(result)
    assert not {"delete_everything", "read_file"} & set(calls_received(pid_dir))


# -- secrets in arguments ------------------------------------------------------------------------------------------

SECRET = "sk-live-7f3a9c0d2b8e4f61"


async def test_tool_arguments_never_reach_the_logs_at_info(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                            capfd: pytest.CaptureFixture[str]) -> None:
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    upstreams = {"alpha": entry("alpha", "--tools", "echo,fail,add,stall,crash", pid_dir=pid_dir, timeout=2)}
    caplog.set_level(logging.INFO)  # every logger: lazytools, the SDK, httpx, uvicorn
    async with opened(tmp_path, upstreams, always_available_tools=["alpha__echo"]) as o:
        async with client(o.server, recorder=Recorder()) as c, client(o.server, "claude-ai") as p:
            await c.call_tool("search_tools", {"tool_names": ["alpha__fail", "alpha__add"]})
            calls = [
                (c, "alpha__echo", {"text": SECRET}),  # succeeds, and echoes it back (results are not logs)
                (c, "alpha__fail", {"message": SECRET}),  # the upstream's own error result
                (c, "alpha__add", {"a": SECRET, "b": 1}),  # refused by lazytools' validation, value quoted
                (c, "alpha__echo", {"text": 1, "token": SECRET}),  # refused: an unexpected argument
                (c, "alpha__nope", {"token": SECRET}),  # unknown tool
                (p, "invoke_tool", {"tool_name": "alpha__echo", "arguments": {"text": SECRET}}),
                (p, "invoke_tool", {"tool_name": "alpha__stall", "arguments": {"token": SECRET}}),  # times out
                (p, "invoke_tool", {"tool_name": "alpha__crash", "arguments": {"token": SECRET}}),  # dies mid-call
                (p, "invoke_tool", {"tool_name": "alpha__echo", "arguments": {"text": SECRET}}),  # after restart
                (p, "search_tools", {"query": f"echo {SECRET}", "group": SECRET}),
            ]
            outcomes = []
            for session, name, arguments in calls:
                if len(outcomes) == 8:  # the crash's restart: on a busy machine it can outlast the call's 2 s
                    await serving_again(o.gateway, "alpha")
                outcomes.append(await session.call_tool(name, arguments))
    assert SECRET in text_of(outcomes[0]) and SECRET in text_of(outcomes[8])  # the calls really carried it
    assert [o.is_error for o in outcomes] == [False, True, True, True, True, False, True, True, False, True]
    assert any(r.levelno == logging.INFO for r in caplog.records)  # INFO was on: logs were written
    logged = "\n".join(f"{r.name} {r.getMessage()} {r.exc_text or ''} {r.args!r}" for r in caplog.records)
    assert SECRET not in logged
    assert SECRET not in capfd.readouterr().err  # nor elsewhere on stderr (upstream stderr is in the records)


async def serving_again(gateway: Any, name: str) -> None:
    """Wait (bounded) until upstream `name` serves again: polled, since a restart has no event a test can await."""
    with anyio.fail_after(60):
        while not any(u.name == name for u in gateway.serving):
            await anyio.sleep(0.05)


def test_a_lazytools_process_at_info_logs_no_argument(tmp_path: Path) -> None:
    """The whole program as a user runs it (stdio, one upstream, INFO), its stderr read to the end."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"alpha": entry("alpha", "--tools", "echo,fail")}}))
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "claude-ai", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "invoke_tool", "arguments": {"tool_name": "alpha__echo", "arguments": {"text": SECRET}}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "invoke_tool", "arguments": {"tool_name": "alpha__fail", "arguments": {"message": SECRET}}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "invoke_tool", "arguments": {"tool_name": "alpha__echo", "arguments": {"text": [SECRET]}}}},
    ]
    command = [sys.executable, "-m", "lazytools", "--config", str(config), "--log-level", "INFO"]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          cwd=tmp_path) as proc:
        watchdog = threading.Timer(120, proc.kill)  # a hung server fails the test instead of hanging it
        watchdog.start()
        try:
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
            proc.stdin.flush()
            answers: dict[int, Any] = {}
            while len(answers) < 4:  # stdin stays open until every answer is in: EOF would cut calls short
                line = proc.stdout.readline()
                assert line, proc.stderr.read()
                answers[json.loads(line)["id"]] = json.loads(line)
            proc.stdin.close()
            assert proc.wait(timeout=60) == 0
            stderr = proc.stderr.read()
        finally:
            watchdog.cancel()
            proc.kill()
    assert SECRET in json.dumps(answers[2]) and answers[3]["result"]["isError"] is True
    assert "INFO lazytools" in stderr and "tools/call invoke_tool failed" in stderr
    assert SECRET not in stderr
