"""Two apps in one process sharing an in-memory store, as two replicas share Redis: any of them serves any request
of a session, a DELETE anywhere ends it everywhere, /readyz follows the store. (The same over real redis-server,
haproxy and processes: tests/test_replicas.py.)"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from lazytools.app import build_server
from lazytools.server.middleware.shared_sessions import SharedSessions
from lazytools.state import MemoryShared, SessionRecord, StateUnavailableError
from lazytools.transports.http import build_app

from .conftest import make_settings, small_catalog
from .helpers import HeldStreams, _free_port, eventually, leaves_behind, running_http
from .idp import running_idp
from .test_http import decode
from .test_learning import QUERY, notes_catalog

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@asynccontextmanager
async def replicas(shared: MemoryShared, **settings: Any) -> AsyncIterator[list[str]]:
    urls: list[str] = []
    servers = [build_server(small_catalog(), make_settings(**settings)) for _ in range(2)]
    for server in servers:
        SharedSessions(server, shared).install()
    async with running_http(build_app(servers[0], servers[0].settings, state=shared)) as first, \
            running_http(build_app(servers[1], servers[1].settings, state=shared)) as second:
        urls = [first, second]
        yield urls


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "mcp", "version": "1"}}}
"""A handshake-era client's first request."""


async def post(http: httpx2.AsyncClient, url: str, body: dict[str, Any], key: str | None = None) -> httpx2.Response:
    headers = {**HEADERS, **({"mcp-session-id": key} if key else {})}
    return await http.post(url + "/mcp", content=json.dumps(body), headers=headers)


async def listed(http: httpx2.AsyncClient, url: str, key: str) -> list[str]:
    response = await post(http, url, {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, key)
    assert response.status_code == 200, response.text
    return [tool["name"] for tool in decode(response)["result"]["tools"]]


async def test_any_replica_serves_any_request_and_delete_ends_the_session_everywhere() -> None:
    shared = MemoryShared(ttl=60)
    async with replicas(shared) as (a, b), httpx2.AsyncClient(timeout=30) as http:
        opened = await post(http, a, INITIALIZE)
        key = opened.headers["mcp-session-id"]
        record = await shared.load(key)
        assert record is not None and record.surface == "dynamic" and record.client_params is not None
        assert (await post(http, b, {"jsonrpc": "2.0", "method": "notifications/initialized"}, key)).status_code == 202
        assert await listed(http, b, key) == ["search_tools", "invoke_tool"]
        found = await post(http, b, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_tools", "arguments": {"tool_names": ["reverse_text", "word_count"]}}}, key)
        assert found.status_code == 200
        assert await listed(http, a, key) == ["search_tools", "invoke_tool", "reverse_text", "word_count"]
        called = await post(http, a, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "reverse_text", "arguments": {"text": "abc"}}}, key)
        assert "cba" in called.text
        # The call made reverse_text the most recently used: the record says so wherever it is read.
        record = await shared.load(key)
        assert record is not None and max(record.used_at, key=record.used_at.__getitem__) == "reverse_text"

        deleted = await http.delete(b + "/mcp", headers={**HEADERS, "mcp-session-id": key})
        assert deleted.status_code == 200
        for url in (a, b):
            gone = await post(http, url, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, key)
            assert gone.status_code == 404


async def test_readiness_follows_the_store_and_a_dead_store_is_a_clear_503() -> None:
    shared = MemoryShared(ttl=60)
    async with replicas(shared) as (a, _), httpx2.AsyncClient(timeout=30) as http:
        assert (await http.get(a + "/readyz")).json() == {"status": "ready"}
        shared.up = False
        not_ready = await http.get(a + "/readyz")
        assert not_ready.status_code == 503 and not_ready.json()["status"] == "session store unreachable"
        assert (await http.get(a + "/healthz")).status_code == 200
        refused = await post(http, a, INITIALIZE)
        assert refused.status_code == 503 and "mcp-session-id" not in refused.headers
        assert "session store (Redis) unavailable" in refused.json()["error"]["message"]
        shared.up = True
        assert (await http.get(a + "/readyz")).status_code == 200


async def test_an_unknown_session_is_404_on_every_replica() -> None:
    async with replicas(MemoryShared(ttl=60)) as urls, httpx2.AsyncClient(timeout=30) as http:
        for url in urls:
            response = await post(http, url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, "f" * 32)
            assert response.status_code == 404 and response.json()["error"]["message"] == "Session not found"


async def test_another_credentials_delete_is_404_and_deletes_nothing() -> None:
    async with running_idp() as idp:
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        settings = make_settings(transport="http", port=port, auth_issuer=idp.issuer, auth_audience=base + "/mcp",
                                 auth_scopes=["tools"], auth_fetch_timeout=60.0)
        shared = MemoryShared(ttl=60)
        server = build_server(small_catalog(), settings)
        SharedSessions(server, shared).install()
        alice = {"authorization": "Bearer " + idp.sign({"sub": "alice"}, audience=base + "/mcp")}
        mallory = {"authorization": "Bearer " + idp.sign({"sub": "mallory"}, audience=base + "/mcp")}
        async with running_http(build_app(server, settings, state=shared), port=port), \
                httpx2.AsyncClient(timeout=30) as http:
            opened = await http.post(base + "/mcp", headers={**HEADERS, **alice}, content=json.dumps({
                "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}}}))
            key = opened.headers["mcp-session-id"]
            foreign = await http.delete(base + "/mcp", headers={**HEADERS, **mallory, "mcp-session-id": key})
            assert foreign.status_code == 404
            assert await shared.load(key) is not None
            listed_by_alice = await http.post(base + "/mcp", headers={**HEADERS, **alice, "mcp-session-id": key},
                                              content=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            assert listed_by_alice.status_code == 200 and "search_tools" in listed_by_alice.text
            own = await http.delete(base + "/mcp", headers={**HEADERS, **alice, "mcp-session-id": key})
            assert own.status_code == 200 and await shared.load(key) is None


async def test_a_record_keeps_a_bounded_part_of_the_initialize_params() -> None:
    shared = MemoryShared(ttl=60)
    # What the record keeps is under test: the bound on an initialize is raised so that these params reach it.
    async with replicas(shared, max_initialize_bytes=1 << 20) as (a, b), httpx2.AsyncClient(timeout=30) as http:
        opened = await post(http, a, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}},
                             "experimental": {"blob": {"x": "y" * 500_000}}, "sampling": {"junk": ["z" * 100_000]}},
            "clientInfo": {"name": "mcp", "version": "1" * 100_000, "description": "d" * 100_000}}})
        assert opened.status_code == 200, opened.text
        key = opened.headers["mcp-session-id"]
        record = await shared.load(key)
        assert record is not None and record.client_params is not None
        assert len(record.to_json()) < 8192
        assert record.client_params["clientInfo"] == {"name": "mcp", "version": "1" * 256}
        assert record.client_params["capabilities"] == {
            "roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}, "sampling": {}}
        assert record.surface == "dynamic"
        assert await listed(http, b, key) == ["search_tools", "invoke_tool"]  # restored from it on another replica


class _CreateFailsOnce(MemoryShared):
    """A store that answers the transport's check, then fails the record's write once (Redis went away between)."""

    def __init__(self) -> None:
        super().__init__(ttl=60)
        self.failures = 1

    async def create(self, record: SessionRecord) -> None:
        if self.failures:
            self.failures -= 1
            raise StateUnavailableError("session store (Redis) unavailable during session create: TimeoutError")
        await super().create(record)


async def test_an_initialize_whose_record_was_not_written_is_an_error_and_leaves_no_session_here() -> None:
    shared = _CreateFailsOnce()
    server = build_server(small_catalog(), make_settings(max_sessions=1))
    SharedSessions(server, shared).install()
    async with running_http(build_app(server, server.settings, state=shared)) as url, \
            httpx2.AsyncClient(timeout=30) as http:
        failed = await post(http, url, INITIALIZE)
        assert "session store (Redis) unavailable" in decode(failed)["error"]["message"]
        # The one session this replica may hold was not kept for a session no replica knows: the next one opens.
        opened = await post(http, url, INITIALIZE)
        assert opened.status_code == 200 and "result" in decode(opened), opened.text
        assert await shared.load(opened.headers["mcp-session-id"]) is not None


async def test_learning_links_in_a_record_that_are_not_well_formed_are_ignored() -> None:
    shared = MemoryShared(ttl=60)
    async with replicas(shared) as (a, b), httpx2.AsyncClient(timeout=30) as http:
        opened = await post(http, a, INITIALIZE)
        key = opened.headers["mcp-session-id"]
        record = await shared.load(key)
        assert record is not None

        def tamper(record: SessionRecord) -> None:
            record.last_search = {"id": 5, "terms": "x", "returned": [None]}
            record.last_called = ["not", "a", "name"]  # type: ignore[assignment]

        await shared.update(record, tamper)
        found = await post(http, b, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_tools", "arguments": {"tool_names": ["reverse_text"]}}}, key)
        assert found.status_code == 200 and '"isError":true' not in found.text.replace(" ", ""), found.text
        called = await post(http, b, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "reverse_text", "arguments": {"text": "abc"}}}, key)
        assert "cba" in called.text


async def test_learning_links_are_written_to_the_record_only_when_they_change(tmp_path: Path) -> None:
    shared = MemoryShared(ttl=60)
    # The proxy surface: searches and calls change nothing else in the record, so every write seen is the links'.
    server = build_server(notes_catalog(), make_settings(learn=True, cache_dir=tmp_path, default_surface="proxy"))
    SharedSessions(server, shared).install()
    async with running_http(build_app(server, server.settings, state=shared)) as url, \
            httpx2.AsyncClient(timeout=30) as http:
        opened = await post(http, url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}})
        key = opened.headers["mcp-session-id"]
        numbers = iter(range(2, 100))

        async def rev_after(name: str, arguments: dict[str, Any]) -> tuple[int, SessionRecord]:
            if name != "search_tools":
                arguments, name = {"tool_name": name, "arguments": arguments}, "invoke_tool"
            answer = await post(http, url, {"jsonrpc": "2.0", "id": next(numbers), "method": "tools/call",
                                            "params": {"name": name, "arguments": arguments}}, key)
            assert answer.status_code == 200 and '"isError":true' not in answer.text.replace(" ", ""), answer.text
            record = await shared.peek(key)
            assert record is not None
            return record.rev, record

        start, record = await rev_after("search_tools", {"tool_names": ["search_notes"]})
        assert record.last_search is None and record.last_called is None
        searched, record = await rev_after("search_tools", {"query": QUERY})
        assert searched == start + 1 and record.last_search is not None
        assert "search_notes" in record.last_search["returned"] and record.last_search["terms"]
        first_id = record.last_search["id"]
        assert (await rev_after("search_tools", {"query": QUERY}))[0] == searched  # the same search: no write
        called, record = await rev_after("search_notes", {"words": "budget"})
        assert called == searched + 1 and record.last_called == "search_notes"
        assert (await rev_after("search_notes", {"words": "ideas"}))[0] == called  # the same tool: no write
        other, record = await rev_after("tag_note", {"note": "n", "tag": "t"})
        assert other == called + 1 and record.last_called == "tag_note"
        assert record.last_search is not None and record.last_search["id"] == first_id
    assert server.usage is not None and server.usage.flushed()
    server.usage.close()


async def test_sessions_refused_for_the_cap_are_warned_about_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="lazytools.transports.http_shared_sessions")
    async with replicas(MemoryShared(ttl=60), max_sessions=1) as (a, b), httpx2.AsyncClient(timeout=30) as http:
        held = (await post(http, a, INITIALIZE)).headers["mcp-session-id"]
        other = (await post(http, b, INITIALIZE)).headers["mcp-session-id"]
        stream_headers = {"accept": "text/event-stream", "mcp-session-id": held}
        async with http.stream("GET", a + "/mcp", headers=stream_headers) as stream:  # in flight: never let go
            assert stream.status_code == 200
            for _ in range(3):
                assert (await post(http, a, INITIALIZE)).status_code == 503  # a new session
                refused = await post(http, a, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, other)  # adopted
                assert refused.status_code == 503, refused.text
            assert (await post(http, a, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, held)).status_code == 200
    warned = [r.getMessage() for r in caplog.records if "LAZYTOOLS_MAX_SESSIONS=1" in r.getMessage()]
    assert len(warned) == 1 and warned[0].startswith("1 session(s) refused"), warned


async def test_a_full_replica_lets_its_idle_connection_go_and_loses_no_session() -> None:
    # Before, a replica holding LAZYTOOLS_MAX_SESSIONS idle connections refused every new session with 503 until one
    # idled out. The session let go stays in the store: its next request is served from there.
    async with replicas(MemoryShared(ttl=60), max_sessions=1) as (a, b), httpx2.AsyncClient(timeout=30) as http:
        first = (await post(http, a, INITIALIZE)).headers["mcp-session-id"]
        answers: list[httpx2.Response] = []

        async def answered(body: dict[str, Any], key: str | None = None) -> httpx2.Response:
            """`body`'s answer from a, once the connection it holds is idle (its last answer may come just before
            its request has ended there)."""
            async def room() -> bool:
                answers.append(await post(http, a, body, key))
                return answers[-1].status_code != 503

            await eventually(room)
            return answers[-1]

        second = (await answered(INITIALIZE)).headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        again = await answered(listing, first)  # from the store, the second let go in turn
        assert again.status_code == 200 and decode(again)["result"]["tools"]
        assert (await answered(listing, second)).status_code == 200
        assert await listed(http, b, second)  # and any replica, as ever


async def test_a_shared_session_that_sent_one_large_request_keeps_nothing_of_it_on_the_replica() -> None:
    # As on one server (test_message_bounds.py): the replica that answered a large request lets its session's
    # dispatcher go of it, the other replica serves on.
    shared = MemoryShared(ttl=60)
    async with replicas(shared) as (a, b), httpx2.AsyncClient(timeout=60) as http:
        key = (await post(http, a, INITIALIZE)).headers["mcp-session-id"]
        assert (await post(http, a, {"jsonrpc": "2.0", "method": "notifications/initialized"}, key)).status_code == 202

        async def large_ping() -> None:
            body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {}, "padding": "p" * 3_000_000})
            response = await http.post(a + "/mcp", content=body, headers={**HEADERS, "mcp-session-id": key})
            assert response.status_code == 200 and decode(response)["result"] == {}

        await leaves_behind(large_ping, 1_000_000)
        assert await listed(http, b, key) == ["search_tools", "invoke_tool"]


async def test_a_replica_holds_streams_within_its_budget_and_the_session_of_a_closed_one_goes_on() -> None:
    # As on one server (test_http_sessions.py): past the budget (12 connections: 8 streams) the oldest stream of the
    # address holding the most is closed; its session, in the store, answers on either replica.
    async with replicas(MemoryShared(ttl=60), max_connections=12) as (a, b), \
            httpx2.AsyncClient(timeout=30) as http, anyio.create_task_group() as tg:
        streams = HeldStreams(a + "/mcp")
        opened, ended = streams.opened, streams.ended

        keys = [(await post(http, a, INITIALIZE)).headers["mcp-session-id"] for _ in range(9)]
        for number, key in enumerate(keys):
            tg.start_soon(streams.listen, http, key)
            await eventually(lambda count=number + 1: len(opened) == count)  # in order: the first is the oldest
        await eventually(lambda: ended == [keys[0]])
        assert await listed(http, b, keys[0]) == await listed(http, a, keys[0])
        tg.cancel_scope.cancel()


async def test_a_replicas_refused_get_closes_no_stream() -> None:
    # As on one server (test_http_sessions.py): a GET the SDK refuses (a second stream of a session: 409; no
    # text/event-stream in Accept: 406) holds no stream, so it closes none of another client's.
    async with replicas(MemoryShared(ttl=60), max_connections=12) as (a, _), \
            httpx2.AsyncClient(timeout=30) as http, anyio.create_task_group() as tg:
        streams = HeldStreams(a + "/mcp")
        opened, ended = streams.opened, streams.ended

        keys = [(await post(http, a, INITIALIZE)).headers["mcp-session-id"] for _ in range(8)]  # the budget, full
        for key in keys:
            tg.start_soon(streams.listen, http, key)
        await eventually(lambda: len(opened) == 8)
        for accept in ("text/event-stream", "application/json"):
            response = await http.get(a + "/mcp", headers={"accept": accept, "mcp-session-id": keys[-1]})
            assert response.status_code in (406, 409)
        assert await listed(http, a, keys[0]) == ["search_tools", "invoke_tool"]  # a round trip after them
        assert ended == []
        tg.cancel_scope.cancel()
