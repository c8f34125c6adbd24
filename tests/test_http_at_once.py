"""2026-07-28 calls answered at once (transports/http.py `AtOnce`): a call of an in-process function marked quick
skips the SDK's SSE machinery and gets the very answer it gave; every other call keeps it (a call that may send
progress or log lines, or run long, needs its stream)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest

from lazytools import Catalog, FunctionGroup, Group, LazyServer, build_server
from lazytools.server.metatools import answers_at_once
from lazytools.transports.http import build_app

from .conftest import make_settings
from .helpers import running_http

HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
           "mcp-method": "tools/call"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}


def _catalog() -> Catalog:
    tools = FunctionGroup("text", summary="Text tools.")

    @tools.tool(inline=True)
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    @tools.tool
    def whisper(text: str) -> str:
        """Lower-case a text."""
        return text.lower()

    @tools.tool
    async def later(text: str) -> str:
        """Echo a text after a moment."""
        await anyio.sleep(0)
        return text

    catalog = Catalog()
    catalog.set_group(Group("text", tools.summary), tools.entries)
    return catalog


def _server(**overrides: Any) -> LazyServer:
    return build_server(_catalog(), make_settings(transport="http", **overrides))


def test_only_a_quick_function_is_answered_at_once() -> None:
    catalog = _catalog()
    assert answers_at_once(catalog, {"name": "invoke_tool", "arguments": {"tool_name": "shout", "arguments": {}}})
    assert answers_at_once(catalog, {"name": "shout", "arguments": {"text": "a"}})
    for name in ("whisper", "later", "nothing_of_that_name"):
        assert not answers_at_once(catalog, {"name": "invoke_tool", "arguments": {"tool_name": name}}), name
    assert not answers_at_once(catalog, {"name": "search_tools", "arguments": {"query": "shout"}})
    assert not answers_at_once(catalog, {"name": "invoke_tool", "arguments": "shout"})


def _call(tool: str, text: str = "Hi") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "invoke_tool", "_meta": META, "arguments": {"tool_name": tool, "arguments": {"text": text}}}}


def _spied(server: LazyServer) -> tuple[Any, Any, list[bool]]:
    """The server's HTTP app, its /mcp endpoint, and a list each request its at-once manager answers adds to."""
    app = build_app(server, server.settings)
    endpoint = app.state.inflight.app
    routed: list[bool] = []
    original = endpoint.at_once.manager.handle_request

    async def spied(*args: Any) -> None:
        routed.append(True)
        await original(*args)

    endpoint.at_once.manager.handle_request = spied
    return app, endpoint, routed


@pytest.mark.parametrize("tool", ["shout", "whisper", "later"])
async def test_a_call_gets_the_same_answer_either_way_and_only_a_quick_one_skips_the_stream(tool: str) -> None:
    server = _server()
    app, endpoint, routed = _spied(server)
    at_once = endpoint.at_once
    async with running_http(app) as base, httpx2.AsyncClient(timeout=60) as http:
        for text in ("Hi", "x" * 5000):  # the second body is too large to be answered at once
            body = _call(tool, text)
            headers = {**HEADERS, "mcp-name": "invoke_tool"}
            first = await http.post(base + "/mcp", json=body, headers=headers)
            endpoint.at_once = None
            second = await http.post(base + "/mcp", json=body, headers=headers)
            endpoint.at_once = at_once
            assert first.status_code == second.status_code == 200
            assert first.headers["content-type"] == second.headers["content-type"] == "application/json"
            assert json.loads(first.content) == json.loads(second.content)
            assert json.loads(first.content)["result"]["isError"] is False
    assert routed == ([True] if tool == "shout" else [])


async def test_with_json_answers_configured_there_is_nothing_to_skip() -> None:
    server = _server(json_response=True)
    assert build_app(server, server.settings).state.inflight.app.at_once is None


def test_a_quick_search_over_an_index_that_needs_no_waiting_is_answered_at_once() -> None:
    from lazytools.search import build_index

    catalog = _catalog()
    index = build_index(catalog)
    index.vocabulary.prepare()  # as a live index is built: the spelling table ready before any query
    search = {"name": "search_tools", "arguments": {"query": "upper-case a text"}}
    assert answers_at_once(catalog, search, index=lambda: index)
    assert not answers_at_once(catalog, search, index=lambda: None)  # a rebuild to wait for: it keeps its stream
    slow = {"name": "search_tools", "arguments": {"query": "upper-case a text " * 200}}
    assert not answers_at_once(catalog, slow, index=lambda: index)  # a long request runs in a worker thread
    odd = {"name": "search_tools", "arguments": {"query": "shout", "unknown": 1}}
    assert not answers_at_once(catalog, odd, index=lambda: index)


async def test_a_quick_search_gets_the_same_answer_without_the_stream() -> None:
    server = _server()
    app, endpoint, routed = _spied(server)
    at_once = endpoint.at_once
    body = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "search_tools", "_meta": META, "arguments": {"query": "upper-case a text"}}}
    headers = {**HEADERS, "mcp-name": "search_tools"}
    async with running_http(app) as base, httpx2.AsyncClient(timeout=60) as http:
        await server.index.ready()
        first = await http.post(base + "/mcp", json=body, headers=headers)
        endpoint.at_once = None
        second = await http.post(base + "/mcp", json=body, headers=headers)
        endpoint.at_once = at_once
    assert routed == [True]
    assert first.status_code == second.status_code == 200
    assert first.headers["content-type"] == second.headers["content-type"] == "application/json"
    assert json.loads(first.content) == json.loads(second.content)
    assert "shout" in json.loads(first.content)["result"]["content"][0]["text"]
