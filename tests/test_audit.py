"""The audit trail (audit.py, server/middleware/audit.py): one JSON line per audited request, with who, what and how it
ended; argument values only when configured; never on stdout."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import anyio.to_thread
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from lazytools.app import build_server
from lazytools.audit import REASONS, AuditLog, open_audit, reason_of
from lazytools.errors import (
    ConfigError,
    PolicyRefusedError,
    RateLimitedError,
    StateUnavailableError,
    ToolArgumentsError,
    ToolExecutionError,
    ToolNotEnabledError,
    UnknownPromptError,
    UnknownResourceError,
    UnknownToolError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnavailableError,
)
from lazytools.safetext import escape

from .conftest import make_settings, small_catalog, text_of
from .helpers import spawned_http_server


def _lines(log: AuditLog, path: Path) -> list[dict[str, Any]]:
    log.drain()
    return [json.loads(line) for line in path.read_text().splitlines()]


def _digest(arguments: Any) -> str:
    return hashlib.sha256(json.dumps(arguments, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=False).encode()).hexdigest()


async def test_each_call_writes_one_line_with_who_what_and_outcome(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = open_audit(str(path))
    assert log is not None
    server = build_server(small_catalog(), make_settings(stdio_user="erin"), audit=log)
    arguments = {"city": "Paris", "days": 2}
    async with Client(server, mode="legacy") as client:
        await client.call_tool("search_tools", {"query": "weather forecast"})
        await client.call_tool("invoke_tool", {"tool_name": "get_forecast", "arguments": arguments})
        await client.call_tool("get_forecast", arguments)
        await client.call_tool("invoke_tool", {"tool_name": "no_such_tool", "arguments": {}})
        await client.list_tools()  # not audited
    lines = await anyio.to_thread.run_sync(_lines, log, path)
    log.close()
    assert [(line["method"], line["target"], line["outcome"]) for line in lines] == [
        ("tools/call", "search_tools", "ok"),
        ("invoke_tool", "get_forecast", "ok"),
        ("tools/call", "get_forecast", "ok"),
        ("invoke_tool", "no_such_tool", "error"),
    ]
    for line in lines:
        assert line["principal"] == "erin" and line["principal_id"] == "stdio:erin"
        assert line["session"] and line["session"] == lines[0]["session"]
        assert line["duration_ms"] >= 0 and line["time"].endswith("+00:00")
        assert "arguments" not in line
    assert lines[1]["upstream"] == "weather" and lines[0]["upstream"] is None
    assert lines[1]["argument_sha256"] == lines[2]["argument_sha256"] == _digest(arguments)
    assert lines[1]["argument_bytes"] == len(json.dumps(arguments, separators=(",", ":")))
    assert "Paris" not in path.read_text()


async def test_values_are_written_only_when_configured(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = open_audit(str(path), values=True)
    assert log is not None
    server = build_server(small_catalog(), make_settings(), audit=log)
    async with Client(server, mode="legacy") as client:
        await client.call_tool("invoke_tool", {"tool_name": "get_forecast", "arguments": {"city": "Oslo"}})
    lines = await anyio.to_thread.run_sync(_lines, log, path)
    log.close()
    assert lines[0]["arguments"] == {"city": "Oslo"} and lines[0]["principal"] == "local"


async def test_bidi_and_control_characters_are_escaped_in_the_line_and_read_back_as_they_were(tmp_path: Path) -> None:
    """Before: with `ensure_ascii=False` a tool name or argument with U+202E (or another direction override, a zero-
    width space, U+0085, U+2028) went into the JSON line raw: a person reading the log saw reordered text, and a
    line-splitting reader a broken line. Now each is a JSON escape: the line shows it, json.loads gives it back."""
    path = tmp_path / "audit.jsonl"
    log = open_audit(str(path), values=True)
    assert log is not None
    hostile = "evil\u202etxt.exe\u2066\u200b\x85\u2028\U000e0041\x7f"
    server = build_server(small_catalog(), make_settings(), audit=log)
    async with Client(server, mode="legacy") as client:
        await client.call_tool("invoke_tool", {"tool_name": hostile, "arguments": {"city": hostile}})
    lines = await anyio.to_thread.run_sync(_lines, log, path)
    log.close()
    raw = path.read_text()
    for char in ("\u202e", "\u2066", "\u200b", "\x85", "\u2028", "\U000e0041", "\x7f"):
        assert char not in raw, repr(char)
    assert "\\u202e" in raw and "\\udb40\\udc41" in raw
    assert lines[0]["arguments"] == {"city": hostile}  # the value as it was
    assert lines[0]["target"] == escape(hostile)  # a name the server already shows escaped


@pytest.mark.parametrize("where", ["stdout", "-", "/dev/stdout"])
def test_stdout_is_refused(where: str) -> None:
    with pytest.raises(ConfigError, match="stdout"):
        open_audit(where)


def test_stdout_by_any_other_name_is_refused(tmp_path: Path) -> None:
    # Named otherwise, stdout was opened and the audit lines went into the protocol stream of a stdio session.
    link = tmp_path / "out"
    link.symlink_to("/dev/stdout")
    read, write = os.pipe()  # stdout as a stdio client gives it, whatever the test runner made of fd 1
    saved = os.dup(1)
    os.dup2(write, 1)
    try:
        for where in ("/dev/./stdout", "/proc/thread-self/fd/1", f"/proc/{os.getpid()}/fd/1", str(link)):
            with pytest.raises(ConfigError, match="stdout"):
                log = open_audit(where)
                assert log is not None
                log.close()
    finally:
        os.dup2(saved, 1)
        for fd in (saved, read, write):
            os.close(fd)


def test_off_is_none_and_stderr_is_a_log() -> None:
    assert open_audit("off") is None
    log = open_audit("stderr")
    assert log is not None
    log.close()


@pytest.mark.process
async def test_a_stdio_process_audits_as_its_named_user_to_a_file(tmp_path: Path) -> None:
    import sys

    from mcp import StdioServerParameters

    path = tmp_path / "audit.jsonl"
    params = StdioServerParameters(command=sys.executable, args=["-m", "lazytools"], cwd=str(tmp_path),
                                   env={"LAZYTOOLS_FILES_ROOT": str(tmp_path), "LAZYTOOLS_AUDIT": str(path),
                                        "LAZYTOOLS_STDIO_USER": "frank"})
    async with Client(params, mode="legacy") as client:  # stdout carried the protocol and nothing else
        result = await client.call_tool("invoke_tool", {"tool_name": "hash_text", "arguments": {"text": "a"}})
        assert not result.is_error
    # The process has exited, and closing the log wrote every line.
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["principal"], line["method"], line["target"], line["outcome"]) for line in lines] == [
        ("frank", "invoke_tool", "hash_text", "ok")]


@pytest.mark.process
async def test_refusals_over_http_each_say_their_reason(tmp_path: Path) -> None:
    """Before: a policy denial, a rate limit, an unknown tool and bad arguments were all `"outcome": "error"`,
    alike. A real `lazytools --transport http` process with a policy and an audit file; a real SDK client."""
    audit = tmp_path / "audit.jsonl"
    policy = tmp_path / "policy.toml"
    policy.write_text('default = "allow"\ncalls_per_minute = 7\n\n[[rules]]\nwho = ["*"]\n'
                      'deny = { tools = ["hash_text"] }\n')
    env = {"LAZYTOOLS_AUDIT": str(audit), "LAZYTOOLS_POLICY": str(policy)}
    refused = ""
    async with spawned_http_server(env=env) as server, \
            Client(streamable_http_client(server.url), mode="legacy",
                   client_info=types.Implementation(name="mcp", version="1.0")) as client:
        await client.call_tool("invoke_tool", {"tool_name": "reverse_text", "arguments": {"text": "hi"}})
        await client.call_tool("invoke_tool", {"tool_name": "no_such_tool", "arguments": {}})
        await client.call_tool("invoke_tool", {"tool_name": "reverse_text", "arguments": {"text": 5}})
        await client.call_tool("reverse_text", {"text": "hi"})  # not enabled by a search in this session
        hidden = await client.call_tool("invoke_tool", {"tool_name": "hash_text", "arguments": {"text": "hi"}})
        assert "Unknown tool" in text_of(hidden)  # the client is told it does not exist; the operator why
        for _ in range(10):
            result = await client.call_tool("invoke_tool", {"tool_name": "reverse_text", "arguments": {"text": "x"}})
            if "Rate limit" in text_of(result):
                refused = text_of(result)
                break
    assert refused, "the rate limit never refused a call"
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    reasons = [(line["target"], line["outcome"], line["reason"]) for line in lines]
    assert reasons[:5] == [("reverse_text", "ok", "ok"), ("no_such_tool", "error", "unknown_tool"),
                           ("reverse_text", "error", "invalid_arguments"), ("reverse_text", "error", "not_enabled"),
                           ("hash_text", "error", "denied")], reasons
    assert reasons[5:-1] == [("reverse_text", "ok", "ok")] * (len(reasons) - 6), reasons
    assert reasons[-1] == ("reverse_text", "error", "rate_limited"), reasons
    assert {line["reason"] for line in lines} <= set(REASONS)


def test_every_library_error_has_a_reason_of_the_vocabulary() -> None:
    for error in (PolicyRefusedError("x"), RateLimitedError("p", 1, 1.0), UnknownToolError("t"),
                  ToolNotEnabledError("t"), ToolArgumentsError("a"), UpstreamTimeoutError("s", "slow"),
                  UpstreamUnavailableError("s", "down"), UpstreamError("s", "broke"), ToolExecutionError("e"),
                  StateUnavailableError("r"), UnknownPromptError("p"), UnknownResourceError("u")):
        assert reason_of(error) in REASONS and reason_of(error) != "internal_error", error
    assert reason_of(UpstreamTimeoutError("s", "slow")) == "timeout"
    assert reason_of(UpstreamUnavailableError("s", "down")) == "upstream_unavailable"
    assert reason_of(RuntimeError("a bug")) == "internal_error"
