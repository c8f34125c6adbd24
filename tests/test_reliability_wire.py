"""Garbage on the wire beyond test_stdio_faults and test_http_guard: deep nesting, bad encodings, odd ids and shapes,
large messages, over HTTP in all three kinds of request and over stdio. Each gets a JSON-RPC error or is dropped,
no answer is large or a server error, and the next valid request is served; plus a property test over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from lazytools import LazyServer

from .test_http import ACCEPT, decode, lazy, open_raw_session, rpc, serving
from .test_stdio_faults import INIT, LIST, _exchange

pytestmark = pytest.mark.process  # every test here starts lazytools or an upstream as a child process

MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "wire", "version": "1"}}
MAX_ANSWER = 20_000
"""No refusal may echo a large input back: bytes of the largest acceptable answer."""


def _header_safe(value: Any) -> bool:
    """A value an HTTP client can put in a header: visible ASCII, inner spaces only (h11 and httptools refuse the
    rest before any request reaches the server, as they should)."""
    return (isinstance(value, str) and value.isascii() and value == value.strip()
            and all(" " <= ch < "\x7f" for ch in value))


def call(name: str, arguments: Any, request_id: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# Bodies no JSON-RPC parser can take as a message: refused before MCP handles anything.
BROKEN: dict[str, bytes] = {
    "nested arrays": nested(100_000).encode(),
    "nested objects": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "nested arguments (900)": json.dumps(call("search_tools", {"query": "Q"})).replace('"Q"', nested(900)).encode(),
    "nested arguments (5000)": json.dumps(call("invoke_tool", {"tool_name": "word_count", "arguments": "A"}))
    .replace('"A"', nested(5000)).encode(),
    "invalid UTF-8": b"\xff\xfe\x00\x01garbage\xc3\x28",
    "latin-1 text": '{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"x":"\xe9"}}'.encode("latin-1"),
    "lone surrogate escape": b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search_tools",'
                             b'"arguments":{"query":"\\ud800 text"}}}',
    "5000-digit integer": b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"search_tools",'
                          b'"arguments":{"query":"a","limit":' + b"9" * 5000 + b"}}}",
    "trailing data": b'{"jsonrpc":"2.0","id":11,"method":"tools/list"} and then some',
    "byte order mark": b'\xef\xbb\xbf{"jsonrpc":"2.0","id":12,"method":"tools/list"}',
    "NaN argument": b'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"invoke_tool",'
                    b'"arguments":{"tool_name":"word_count","arguments":{"text":NaN}}}}',
    "duplicate keys": b'{"jsonrpc":"2.0","id":14,"method":"tools/list","method":"tools/call"}',
}

# JSON that parses, in shapes JSON-RPC or MCP do not allow (or allow, but only as something to drop).
SHAPES: dict[str, dict[str, Any]] = {
    "params a list": {"jsonrpc": "2.0", "id": 20, "method": "tools/list", "params": [1, 2]},
    "params a string": {"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": "search_tools"},
    "id an object": {"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"},
    "id a boolean": {"jsonrpc": "2.0", "id": True, "method": "tools/list"},
    "id a fraction": {"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"},
    "id null": {"jsonrpc": "2.0", "id": None, "method": "tools/list"},
    "jsonrpc 1.0": {"jsonrpc": "1.0", "id": 22, "method": "tools/list"},
    "unknown notification": {"jsonrpc": "2.0", "method": "notifications/made_up", "params": {}},
    "stray response": {"jsonrpc": "2.0", "id": 424242, "result": {}},
    "stray error": {"jsonrpc": "2.0", "id": 424243, "error": {"code": 1, "message": "x"}},
    "arguments a string": call("search_tools", "x", 23),
    "tool name a number": call(5, {}, 24),  # type: ignore[arg-type]
    "unknown method": {"jsonrpc": "2.0", "id": 25, "method": "tools/destroy_everything", "params": {}},
    "initialize again": {"jsonrpc": "2.0", "id": 26, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}},
    "initialize malformed": {"jsonrpc": "2.0", "id": 27, "method": "initialize", "params": {"protocolVersion": 5}},
    "3 MB query": call("search_tools", {"query": "x" * 3_000_000}, 28),
    "3 MB of arguments": call("invoke_tool", {"tool_name": "word_count", "arguments": {"text": "word " * 600_000}}, 29),
    "3 MB id": {"jsonrpc": "2.0", "id": "i" * 3_000_000, "method": "tools/list"},
    "initialize of a 3.5 MB client name": {"jsonrpc": "2.0", "id": 32, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "n" * 3_500_000, "version": "1"}}},
}
DROPPABLE = {"id an object", "id a boolean", "id a fraction", "id null", "unknown notification", "stray response",
             "stray error"}
"""Messages the SDK reads as notifications or as answers to nothing: 202 Accepted, no body (JSON-RPC allows it)."""


def modern(message: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """A message as a 2026-07-28 client sends it: the per-request envelope in params._meta, routing headers."""
    params = message.get("params", {})
    headers = {"mcp-protocol-version": MODERN}
    if isinstance(params, dict):
        message = {**message, "params": {**params, "_meta": ENVELOPE}}
        if _header_safe(params.get("name")):
            headers["mcp-name"] = params["name"]
    if _header_safe(message.get("method")):
        headers["mcp-method"] = message["method"]
    return json.dumps(message).encode(), headers


def check_answer(response: httpx2.Response, case: str, era: str) -> None:
    """A refusal or an answer, never a server error, never large; 202 only where dropping is allowed."""
    where = f"{case} ({era})"
    assert response.status_code < 500, (where, response.status_code, response.text[:300])
    assert len(response.content) < MAX_ANSWER, (where, len(response.content))
    if response.status_code == 202:
        assert case in DROPPABLE and not response.content, where
        return
    message = decode(response)
    assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", (where, response.text[:300])
    if response.status_code >= 400:
        assert isinstance(message["error"]["code"], int) and message["error"]["message"], where
    else:
        assert "error" in message or "result" in message, where
        result = message.get("result") or {}
        if "content" in result and case != "3 MB of arguments":
            assert result["isError"] is True, where  # the other tool calls here are all invalid


async def modern_client_works(url: str) -> None:
    async with Client(url, mode=MODERN) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["search_tools", "invoke_tool"]


@pytest.mark.parametrize("case", [*BROKEN, *SHAPES])
async def test_http_garbage_is_refused_or_dropped_and_service_goes_on(case: str) -> None:
    server = lazy()
    async with serving(server) as url, httpx2.AsyncClient(timeout=60) as http:
        keeper = await open_raw_session(http, url)  # a session that must come through untouched
        await rpc(http, url, "tools/call", {"name": "search_tools", "arguments": {"tool_names": ["word_count"]}},
                  session_id=keeper)
        before = {state.key: dict(state.enabled) for state in server.store}
        target = await open_raw_session(http, url)
        base = {"accept": ACCEPT, "content-type": "application/json"}
        for era in ("session", "no session", MODERN):
            if case in BROKEN:
                body, headers = BROKEN[case], ({"mcp-protocol-version": MODERN} if era == MODERN else {})
            elif era == MODERN:
                body, headers = modern(SHAPES[case])
            else:
                body, headers = json.dumps(SHAPES[case]).encode(), {}
            if era == "session":
                headers["mcp-session-id"] = target
            check_answer(await http.post(url, content=body, headers={**base, **headers}), case, era)
            # The next valid request is served, in the same kind of request.
            if era == MODERN:
                await modern_client_works(url)
            else:
                _, listed = await rpc(http, url, "tools/list", session_id=target if era == "session" else None)
                assert [t["name"] for t in listed["result"]["tools"]] == ["search_tools", "invoke_tool"], era
        after = {state.key: dict(state.enabled) for state in server.store if state.key in before}
        assert after == before and list(after[keeper]) == ["word_count"]  # no other session's state changed


# -- stdio: the same kinds of garbage, as lines ------------------------------------------------------------------

STDIO_GARBAGE: dict[str, str] = {  # text: bytes that are not UTF-8 have their own test below
    **{name: body.decode("utf-8", errors="replace") for name, body in BROKEN.items()
       if name not in ("nested arrays", "nested objects")},  # both already in test_stdio_faults
    **{name: json.dumps(message) for name, message in SHAPES.items() if name != "initialize again"},
    "16 MB line": json.dumps({"jsonrpc": "2.0", "id": 30, "method": "tools/destroy",
                              "params": {"x": "y" * 16_000_000}}),
    "carriage return line end": json.dumps({"jsonrpc": "2.0", "id": 31, "method": "ping"}) + "\r",
}


def test_stdio_garbage_is_answered_or_dropped_and_service_goes_on(tmp_path: Path) -> None:
    # One process takes every line in turn (a process each would cost two seconds a case): it must live through all.
    messages, _ = _exchange(tmp_path, list(STDIO_GARBAGE.values()))
    by_id = {json.dumps(m.get("id")): m for m in messages}
    assert by_id["99"]["result"]["tools"][0]["name"] == "search_tools"  # served after all the garbage
    answered = {json.dumps(m.get("id")) for m in messages}
    assert {"8", "25", "28", "29", "30", "31"} <= answered  # those that parse as requests got their answer
    for message in messages:
        assert len(json.dumps(message)) < MAX_ANSWER, message.get("id")
        if message.get("id") in (1, 99) or "error" in message:
            continue
        result = message["result"]
        # A refused tool call, the 3 MB word count, a ping's {}, or a request once invalid bytes became U+FFFD.
        assert result == {} or result.get("isError") is True or "tools" in result or message["id"] == 29, message


def test_stdio_bytes_that_are_not_utf8_are_dropped_and_service_goes_on(tmp_path: Path) -> None:
    lines = [json.dumps(m).encode() for m in INIT]
    lines += [BROKEN["invalid UTF-8"], BROKEN["latin-1 text"], b"\xc3", b"\x80\x80\x80", json.dumps(LIST).encode()]
    with subprocess.Popen([sys.executable, "-m", "lazytools"], cwd=tmp_path, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        watchdog = threading.Timer(120, proc.kill)  # a hung server fails the test instead of hanging it
        watchdog.start()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(b"\n".join(lines) + b"\n")
            proc.stdin.flush()
            answers: dict[Any, Any] = {}
            while 99 not in answers:
                line = proc.stdout.readline()
                assert line, "lazytools stopped"
                message = json.loads(line)  # stdout stays clean JSON, one message a line
                answers[message.get("id")] = message
            proc.stdin.close()
            assert proc.wait(timeout=60) == 0
        finally:
            watchdog.cancel()
            proc.kill()
    assert answers[99]["result"]["tools"][0]["name"] == "search_tools"
    assert answers[8]["result"]["tools"]  # the latin-1 line: é became U+FFFD inside a string, still a request


# -- property: any JSON-RPC-ish message over HTTP -------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
METHODS = st.sampled_from(["initialize", "ping", "tools/list", "tools/call", "notifications/initialized",
                           "notifications/cancelled", "resources/list", "prompts/get", "completion/complete",
                           "logging/setLevel", "server/discover"]) | st.text(max_size=20)
NAMES = st.sampled_from(["search_tools", "invoke_tool", "word_count", "explode", "nope"]) | st.text(max_size=12)
IDS = st.integers() | st.text(max_size=8) | JSON
PARAMS = st.fixed_dictionaries({"name": NAMES, "arguments": JSON}) | JSON
MESSAGES = (
    st.fixed_dictionaries({"jsonrpc": st.just("2.0") | JSON, "method": METHODS}, optional={"id": IDS, "params": PARAMS})
    | st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": IDS}, optional={"result": JSON, "error": JSON})
    | JSON
)


@dataclass
class Live:
    server: LazyServer
    url: str
    keeper: str
    target: str


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    """One server for every example, in a thread of its own, so the property test can use a plain sync client."""
    server = lazy()
    box: dict[str, str] = {}
    started, stop = threading.Event(), threading.Event()

    async def run() -> None:
        async with serving(server) as url, httpx2.AsyncClient(timeout=30) as http:
            box["keeper"] = await open_raw_session(http, url)
            await rpc(http, url, "tools/call", {"name": "search_tools", "arguments": {"tool_names": ["word_count"]}},
                      session_id=box["keeper"])
            box["target"] = await open_raw_session(http, url)
            box["url"] = url
            started.set()
            await anyio.to_thread.run_sync(stop.wait)

    thread = threading.Thread(target=anyio.run, args=(run,), daemon=True)
    thread.start()
    assert started.wait(60), "the server did not start"
    yield Live(server, box["url"], box["keeper"], box["target"])
    stop.set()
    thread.join(60)
    assert not thread.is_alive()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=MESSAGES, era=st.sampled_from(["session", "no session", MODERN]))
def test_any_json_message_over_http_is_answered_or_dropped(live: Live, message: Any, era: str) -> None:
    headers = {"accept": ACCEPT, "content-type": "application/json"}
    if era == "session":
        headers["mcp-session-id"] = live.target
    elif era == MODERN:
        headers["mcp-protocol-version"] = MODERN
        if isinstance(message, dict) and _header_safe(message.get("method")):
            headers["mcp-method"] = message["method"]
    with httpx2.Client(timeout=30) as http:
        response = http.post(live.url, content=json.dumps(message).encode(), headers=headers)
        assert response.status_code < 500, response.text[:300]
        assert len(response.content) < MAX_ANSWER
        if response.content:
            answer = decode(response)
            assert isinstance(answer, dict) and ("error" in answer or "result" in answer), response.text[:300]
        else:
            assert response.status_code == 202
        listed = http.post(live.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                           headers={"accept": ACCEPT, "mcp-session-id": live.target})
        assert "search_tools" in json.dumps(decode(listed)["result"])
    keeper = live.server.store.get(live.keeper)
    assert keeper is not None and list(keeper.enabled) == ["word_count"]  # another session's state never changes
