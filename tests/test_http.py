"""Streamable HTTP: real clients against a real uvicorn server on 127.0.0.1 — sessions, surfaces, notifications."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged

from lazytools import Catalog, FunctionGroup, Group, LazyServer, build_server
from lazytools.transports.http import build_app

from .conftest import Recorder, make_settings, small_catalog, text_of
from .helpers import eventually, running_http, tool_names

ACCEPT = "application/json, text/event-stream"


# -- helpers ------------------------------------------------------------------------------------------------------


@asynccontextmanager
async def serving(server: LazyServer) -> AsyncIterator[str]:
    """`server` on a free port of 127.0.0.1; yields the `/mcp` URL."""
    async with running_http(build_app(server, server.settings)) as base:
        yield base + "/mcp"


def lazy(catalog: Catalog | None = None, **overrides: Any) -> LazyServer:
    return build_server(catalog if catalog is not None else small_catalog(), make_settings(**overrides))


@asynccontextmanager
async def session(url: str, name: str = "Visual Studio Code", *, recorder: Recorder | None = None,
                  headers: dict[str, str] | None = None, terminate: bool = True) -> AsyncIterator[Client]:
    """A handshake-era client whose GET stream is open: the server drops notifications sent before it is."""
    stream_open = anyio.Event()

    async def on_response(response: httpx2.Response) -> None:
        if response.request.method == "GET" and response.status_code == 200:
            stream_open.set()

    async with httpx2.AsyncClient(headers=headers, event_hooks={"response": [on_response]},
                                  timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(url, http_client=http, terminate_on_close=terminate)
        async with Client(transport, mode="legacy", client_info=types.Implementation(name=name, version="1.0"),
                          message_handler=recorder) as client:
            with anyio.fail_after(120):  # a guard against a hang: fifty sessions open at once on a busy machine
                await stream_open.wait()
            yield client


async def rpc(http: httpx2.AsyncClient, url: str, method: str, params: dict[str, Any] | None = None, *,
              session_id: str | None = None, request_id: int | None = 1) -> tuple[httpx2.Response, Any]:
    """One raw JSON-RPC POST; returns the response and the JSON-RPC message in it (JSON or SSE), if any."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if request_id is not None:
        message["id"] = request_id
    headers = {"accept": ACCEPT, **({"mcp-session-id": session_id} if session_id else {})}
    response = await http.post(url, json=message, headers=headers)
    return response, decode(response)


def decode(response: httpx2.Response) -> Any:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        # SSE lines end at CR or LF only; str.splitlines() would also cut at U+0085 or U+2028 inside a JSON string.
        lines = re.split(r"\r\n|\r|\n", response.text)
        data = [line[5:].strip() for line in lines if line.startswith("data:")]
        return json.loads(data[-1]) if data else None
    return response.json() if response.content else None


async def open_raw_session(http: httpx2.AsyncClient, url: str) -> str:
    """initialize + initialized over plain HTTP (no GET stream, so the session can go idle)."""
    response, _ = await rpc(http, url, "initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "Visual Studio Code",
                                                                          "version": "1"}})
    session_id = response.headers["mcp-session-id"]
    await rpc(http, url, "notifications/initialized", session_id=session_id, request_id=None)
    return session_id


def numbered_catalog(count: int) -> Catalog:
    group = FunctionGroup("numbered", summary="Numbered echo tools.")

    def echo(text: str) -> str:
        return text

    for i in range(count):
        group.add(echo, name=f"tool_{i:02d}", description=f"Echo tool number {i}: returns its text unchanged.")
    catalog = Catalog()
    catalog.set_group(Group(group.group, group.summary), group.entries)
    return catalog


# -- handshake-era sessions --------------------------------------------------------------------------------------


async def test_http_advertises_list_changed_and_has_a_health_endpoint() -> None:
    server = lazy()
    async with serving(server) as url, session(url) as client:
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is True
        assert await tool_names(client) == ["search_tools", "invoke_tool"]
        async with httpx2.AsyncClient(timeout=60) as http:
            health = await http.get(url.removesuffix("/mcp") + "/healthz")
        assert health.status_code == 200 and health.json() == {"status": "ok"}


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_two_sessions_enable_different_tools_and_hear_only_their_own_notification(json_response: bool) -> None:
    server = lazy(json_response=json_response)
    first, second = Recorder(), Recorder()
    async with serving(server) as url, session(url, recorder=first) as a, session(url, recorder=second) as b:
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.call_tool, "search_tools", {"tool_names": ["word_count"]})
            tg.start_soon(b.call_tool, "search_tools", {"tool_names": ["create_issue"]})
        await eventually(lambda: first.events == ["list_changed"] and second.events == ["list_changed"])
        assert await tool_names(a) == ["search_tools", "invoke_tool", "word_count"]
        assert await tool_names(b) == ["search_tools", "invoke_tool", "create_issue"]
        assert text_of(await a.call_tool("word_count", {"text": "a b c"})) == "3"
        refused = await b.call_tool("word_count", {"text": "a b"})
        assert refused.is_error and "search_tools" in text_of(refused)
        # A third search in one session only: its notification arrives there, the other session hears nothing.
        await b.call_tool("search_tools", {"tool_names": ["reverse_text"]})
        await eventually(lambda: second.events == ["list_changed"] * 2)
        await tool_names(a)  # one more round trip on the other session before looking
        assert first.events == ["list_changed"]
        assert len(server.store) == 2
        async with httpx2.AsyncClient(timeout=60) as http:
            response, _ = await rpc(http, url, "tools/list")
        assert response.headers["content-type"].startswith("application/json" if json_response
                                                           else "text/event-stream")
    assert len(server.store) == 0


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_fifty_concurrent_sessions_do_not_leak_tools_or_notifications(json_response: bool) -> None:
    count = 50
    server = lazy(numbered_catalog(count), json_response=json_response)
    recorders = [Recorder() for _ in range(count)]
    searched = 0
    all_searched = anyio.Event()
    seen: dict[int, list[str]] = {}

    async def one(i: int, url: str) -> None:
        nonlocal searched
        own, other = f"tool_{i:02d}", f"tool_{(i + 1) % count:02d}"
        async with session(url, recorder=recorders[i]) as client:
            result = await client.call_tool("search_tools", {"tool_names": [own]})
            assert not result.is_error
            await eventually(lambda: recorders[i].events == ["list_changed"])
            searched += 1
            if searched == count:
                all_searched.set()
            await all_searched.wait()  # every session has enabled its tool before any looks at its list
            seen[i] = await tool_names(client)
            assert text_of(await client.call_tool(own, {"text": f"hello {i}"})) == f"hello {i}"
            refused = await client.call_tool(other, {"text": "x"})
            assert refused.is_error and "not enabled" in text_of(refused)

    async with serving(server) as url, anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(one, i, url)
    assert seen == {i: ["search_tools", "invoke_tool", f"tool_{i:02d}"] for i in range(count)}
    assert [r.events for r in recorders] == [["list_changed"]] * count
    assert len(server.store) == 0


async def test_idle_session_expires_and_its_state_is_freed() -> None:
    server = lazy(session_idle_timeout=0.3)
    async with serving(server) as url:
        async with session(url, terminate=False) as client:  # leaves without DELETE, like a crashed client
            await client.call_tool("search_tools", {"tool_names": ["word_count"]})
            [state] = list(server.store)
            assert list(state.enabled) == ["word_count"]
        await eventually(lambda: len(server.store) == 0)
        async with httpx2.AsyncClient(timeout=60) as http:
            gone, message = await rpc(http, url, "tools/list", session_id=state.key)
            assert gone.status_code == 404 and message["error"]["message"] == "Session not found"
            fresh = await open_raw_session(http, url)
            _, listed = await rpc(http, url, "tools/list", session_id=fresh)
            assert [t["name"] for t in listed["result"]["tools"]] == ["search_tools", "invoke_tool"]


async def test_delete_ends_the_session_and_frees_its_state() -> None:
    server = lazy()
    async with serving(server) as url, httpx2.AsyncClient(timeout=60) as http:
        session_id = await open_raw_session(http, url)
        _, found = await rpc(http, url, "tools/call", {"name": "search_tools",
                                                       "arguments": {"tool_names": ["reverse_text"]}},
                             session_id=session_id)
        assert "reverse_text" in found["result"]["content"][0]["text"]
        assert [state.key for state in server.store] == [session_id]
        deleted = await http.delete(url, headers={"mcp-session-id": session_id})
        assert deleted.status_code == 200
        await eventually(lambda: len(server.store) == 0)
        after, _ = await rpc(http, url, "tools/list", session_id=session_id)
        assert after.status_code == 404


async def test_a_full_session_table_closes_the_session_idle_longest_for_a_newcomer() -> None:
    # Before, a full table answered every newcomer 503 until a session idled out (30 min by default), so one client
    # that opened LAZYTOOLS_MAX_SESSIONS sessions and went quiet locked everyone out.
    server = lazy(max_sessions=2)
    async with serving(server) as url, httpx2.AsyncClient(timeout=60) as http:
        first = await open_raw_session(http, url)
        second = await open_raw_session(http, url)
        used, _ = await rpc(http, url, "tools/list", session_id=first)  # so the second is the one idle longest
        assert used.status_code == 200
        third = await open_raw_session(http, url)
        gone, _ = await rpc(http, url, "tools/list", session_id=second)
        assert gone.status_code == 404  # the spec's answer, on which a client starts a new session
        for kept in (first, third):
            answered, listed = await rpc(http, url, "tools/list", session_id=kept)
            assert answered.status_code == 200 and listed["result"]["tools"]
        await eventually(lambda: sorted(state.key for state in server.store) == sorted([first, third]))


async def test_a_full_session_table_makes_room_out_of_the_address_holding_the_most() -> None:
    # One client flooding the table closes its own sessions first: another's, idle longer, stays.
    server = lazy(max_sessions=3)
    async with serving(server) as url, contextlib.AsyncExitStack() as stack:
        def client(address: str) -> httpx2.AsyncClient:  # uvicorn reads X-Forwarded-For from the loopback proxy
            return httpx2.AsyncClient(timeout=60, headers={"x-forwarded-for": address})

        quiet, flood, newcomer = [await stack.enter_async_context(client(f"10.0.0.{n}")) for n in (1, 2, 3)]
        kept = await open_raw_session(quiet, url)
        floods = [await open_raw_session(flood, url) for _ in range(2)]
        await open_raw_session(newcomer, url)
        assert (await rpc(quiet, url, "tools/list", session_id=kept))[0].status_code == 200
        statuses = [(await rpc(flood, url, "tools/list", session_id=key))[0].status_code for key in floods]
        assert statuses == [404, 200]


async def test_a_full_table_of_sessions_with_requests_in_flight_answers_503_until_one_ends() -> None:
    server = lazy(max_sessions=1)
    async with serving(server) as url, httpx2.AsyncClient(timeout=60) as http:
        async with session(url):  # its GET stream is a request in flight: the session is never idle
            refused, message = await rpc(http, url, "initialize", {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}})
            assert refused.status_code == 503 and "Too many open sessions" in message["error"]["message"]
        await eventually(lambda: len(server.store) == 0)  # ended (DELETE on close)
        await open_raw_session(http, url)


# -- requests without a session: the static proxy surface --------------------------------------------------------


async def test_handshake_era_request_without_session_gets_the_proxy_surface() -> None:
    server = lazy()
    async with serving(server) as url, httpx2.AsyncClient(timeout=60) as http:
        response, listed = await rpc(http, url, "tools/list")
        assert response.status_code == 200 and "mcp-session-id" not in response.headers
        assert [t["name"] for t in listed["result"]["tools"]] == ["search_tools", "invoke_tool"]
        _, found = await rpc(http, url, "tools/call", {"name": "search_tools", "arguments": {"query": "count words"}})
        assert "input_schema:" in found["result"]["content"][0]["text"]
        _, called = await rpc(http, url, "tools/call", {"name": "invoke_tool", "arguments": {
            "tool_name": "word_count", "arguments": {"text": "one two"}}})
        assert called["result"]["content"][0]["text"] == "2"
        _, again = await rpc(http, url, "tools/list")
        assert again == listed
        assert len(server.store) == 0


async def test_stateless_era_client_sees_the_proxy_surface() -> None:
    server = lazy()
    async with serving(server) as url, Client(url, mode="2026-07-28") as client:
        assert await tool_names(client) == ["search_tools", "invoke_tool"]
        result = await client.call_tool("search_tools", {"query": "reverse a text"})
        assert "reverse_text" in text_of(result) and "input_schema:" in text_of(result)
        assert await tool_names(client) == ["search_tools", "invoke_tool"]
        called = await client.call_tool("invoke_tool", {"tool_name": "reverse_text", "arguments": {"text": "abc"}})
        assert text_of(called) == "cba"
        assert len(server.store) == 0


async def test_discovering_client_learns_tool_changes_come_by_subscription() -> None:
    async with serving(lazy()) as url, Client(url, mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed


async def test_stateless_era_listener_is_told_when_the_catalog_changes() -> None:
    server = lazy()
    extra = FunctionGroup("extra", summary="Added later.")

    @extra.tool
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    async with serving(server) as url, Client(url, mode="2026-07-28") as client:
        async with client.listen(tools_list_changed=True) as subscription:
            assert subscription.honored.tools_list_changed is True
            assert len(server.events) == 1
            server.catalog.set_group(Group("extra", extra.summary), extra.entries)
            with anyio.fail_after(10):
                event = await subscription.__anext__()
            assert isinstance(event, ToolsListChanged)
        called = await client.call_tool("invoke_tool", {"tool_name": "shout", "arguments": {"text": "hi"}})
        assert text_of(called) == "HI"
        await eventually(lambda: len(server.events) == 0)  # the closed stream left the bus


async def test_handshake_session_and_listener_coexist_on_one_server() -> None:
    server = lazy()
    recorder = Recorder()
    async with (
        serving(server) as url,
        session(url, recorder=recorder) as legacy,
        Client(url, mode="2026-07-28") as modern,
        modern.listen(tools_list_changed=True) as subscription,
    ):
        await legacy.call_tool("search_tools", {"tool_names": ["word_count"]})
        await eventually(lambda: recorder.events == ["list_changed"])
        await server.catalog.update_group(Group("weather"), [])  # as an upstream whose tools went away
        with anyio.fail_after(10):
            assert isinstance(await subscription.__anext__(), ToolsListChanged)
        assert await tool_names(modern) == ["search_tools", "invoke_tool"]
        assert "word_count" in await tool_names(legacy)
