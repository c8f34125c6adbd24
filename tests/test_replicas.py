"""Replicas behind a real load balancer: three `lazytools --transport http` processes sharing sessions through a real
redis-server, haproxy round robin in front (examples/haproxy.cfg), real MCP clients (Python and TypeScript SDKs).

The binaries come from Debian's `redis-server` and `haproxy` packages; tests/cluster.py fails naming the package
when one is missing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from redis.asyncio import Redis as AsyncRedis

from .cluster import Cluster, Replica, cluster, free_port, haproxy_config, require, running_redis
from .conftest import text_of
from .helpers import eventually, tool_names
from .test_http import decode
from .test_interop import node_client  # noqa: F401  (the fixture: node and the pinned TypeScript SDK)
from .upstreams.faulty import entry as faulty

pytestmark = pytest.mark.process  # every test here starts redis-server, haproxy and lazytools replicas

META = ["search_tools", "invoke_tool"]
TEXT_TOOLS = ["reverse_text", "slugify_text", "hash_text", "base64_encode", "url_encode", "hex_encode", "html_escape",
              "count_text_stats", "word_frequency", "wrap_text", "extract_emails", "extract_urls",
              "unicode_char_info", "regex_escape"]
"""Bundled tools that take one argument, `text`: every session can call what it enabled with the same arguments."""


class Notifications:
    """`tools/list_changed` notifications a client received."""

    def __init__(self) -> None:
        self.count = 0

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1


class Routed(httpx2.AsyncHTTPTransport):
    """Sends each request to the port `pick(method)` names: a GET stream on one replica, requests on others."""

    def __init__(self, pick: Callable[[str], int]) -> None:
        super().__init__()
        self.pick = pick

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(port=self.pick(request.method))
        return await super().handle_async_request(request)


@asynccontextmanager
async def session(url: str, *, notifications: Callable[[Any], Awaitable[None]] | None = None,
                  pick: Callable[[str], int] | None = None) -> AsyncIterator[Client]:
    """A Python SDK client in legacy (handshake) mode, named `mcp` (dynamic surface), every request on a new
    connection (to the port `pick(method)` names, else wherever `url` leads), once its GET stream is open;
    `notifications` hears what the server sends."""
    stream_open = anyio.Event()

    async def on_response(response: httpx2.Response) -> None:
        if response.request.method == "GET" and response.status_code == 200:
            stream_open.set()

    transport = Routed(pick) if pick is not None else None
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0), transport=transport,
                                  event_hooks={"response": [on_response]},
                                  timeout=httpx2.Timeout(60, read=300)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy",
                          client_info=types.Implementation(name="mcp", version="1.0"),
                          message_handler=notifications) as client:
            with anyio.fail_after(30):
                await stream_open.wait()
            yield client


async def search_and_use(client: Client, tools: list[str]) -> None:
    """Enable `tools` by name, re-list, and call each natively: the session sees exactly its own tools."""
    found = await client.call_tool("search_tools", {"tool_names": tools})
    assert not found.is_error, text_of(found)
    assert await tool_names(client) == [*META, *tools]
    for name in tools:
        result = await client.call_tool(name, {"text": "Hello, replicas"})
        assert not result.is_error, (name, text_of(result))


def own_tools(i: int) -> list[str]:
    return [TEXT_TOOLS[i % len(TEXT_TOOLS)], TEXT_TOOLS[(i * 3 + 1) % len(TEXT_TOOLS)]][: 1 + (i % 3 != 0)]


def served_from_store(c: Cluster, since: list[int] | None = None) -> list[int]:
    """How many sessions each replica served without having opened them (from their record in Redis), in what it
    logged after `since` (`Cluster.marks`)."""
    return [replica.output(mark).count("served here from the store")
            for replica, mark in zip(c.replicas, since or [0] * len(c.replicas), strict=True)]


INFO = {"LAZYTOOLS_LOG_LEVEL": "INFO"}
SHARED = {**INFO, "LAZYTOOLS_STATE_TIMEOUT": "60", "LAZYTOOLS_MAX_ENABLED": "32"}
"""The shared cluster's settings: what each test on it needs. The store's timeout: fifty sessions at once on a busy
2-core machine kept a Redis command waiting past the default 2 s ("session store (Redis) unavailable during session
create: TimeoutError"). At most 32 enabled: one session enables every one of TEXT_TOOLS."""


@pytest.fixture(scope="module")
def shared() -> Iterator[Cluster]:
    """One cluster for the tests that kill, stop, pause, restart or empty nothing: starting one costs about 10 s of
    CPU. Each test opens its own sessions and reads only what the replicas logged after it started. The cluster's
    event loop runs in a thread of its own (each test has its own loop, the cluster outlives them)."""
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(cluster(3, env=SHARED)) as c:
        yield c


# -- any replica serves any request ---------------------------------------------------------------------------------


async def test_fifty_sessions_round_robin_each_see_only_their_own_tools(shared: Cluster) -> None:
    c, since = shared, shared.marks()
    done: list[int] = []

    async def one(i: int) -> None:
        async with session(c.url) as client:
            assert await tool_names(client) == META
            await search_and_use(client, own_tools(i))
            # Again, after every replica has had a request of it: still exactly its own tools.
            assert await tool_names(client) == [*META, *own_tools(i)]
        done.append(i)

    async with anyio.create_task_group() as tg:
        for i in range(50):
            tg.start_soon(one, i)
    assert sorted(done) == list(range(50))
    # No stickiness: every replica served sessions it did not open.
    assert all(count > 0 for count in served_from_store(c, since)), served_from_store(c, since)


async def test_list_changed_reaches_the_get_stream_held_by_another_replica(shared: Cluster) -> None:
    c = shared
    stream, *others = [replica.port for replica in c.replicas]
    turn = iter(range(10**6))
    notifications = Notifications()

    def pick(method: str) -> int:
        return stream if method == "GET" else others[next(turn) % 2]

    async with session(c.url, notifications=notifications, pick=pick) as client:
        await client.call_tool("search_tools", {"tool_names": ["reverse_text"]})
        await eventually(lambda: notifications.count == 1)
        await client.call_tool("search_tools", {"tool_names": ["hash_text"]})
        await eventually(lambda: notifications.count == 2)
        assert await tool_names(client) == [*META, "reverse_text", "hash_text"]


async def test_delete_is_seen_by_every_replica(shared: Cluster) -> None:
    c = shared
    async with httpx2.AsyncClient(timeout=30) as http:
        first, second, third = [f"{replica.base}/mcp" for replica in c.replicas]
        headers = {"accept": "application/json, text/event-stream"}
        opened = await http.post(first, headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "mcp", "version": "1"}}})
        key = opened.headers["mcp-session-id"]
        headers["mcp-session-id"] = key
        listed = await http.post(third, headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert listed.status_code == 200 and "search_tools" in listed.text
        assert (await http.delete(second, headers=headers)).status_code == 200
        for url in (first, second, third):
            gone = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
            assert gone.status_code == 404, (url, gone.text)


async def test_a_search_on_one_replica_is_seen_by_the_next_request_on_another_every_time() -> None:
    # Each replica keeps local copies of the records it served (docs/scaling.md): a search on the first must be in
    # the very next tools/list on the second, which had a copy of the record before it.
    async with cluster(2, env={"LAZYTOOLS_MAX_ENABLED": "2"}) as c:
        first, second = [replica.port for replica in c.replicas]
        target = [first]
        async with session(c.url, pick=lambda method: second if method == "GET" else target[0]) as client:
            previous = None
            for i in range(40):
                tool = TEXT_TOOLS[i % len(TEXT_TOOLS)]
                target[0] = first
                found = await client.call_tool("search_tools", {"tool_names": [tool]})
                assert not found.is_error, text_of(found)
                target[0] = second
                assert await tool_names(client) == [*META, *([previous] if previous else []), tool], i
                previous = tool


async def test_a_delete_on_one_replica_ends_the_session_on_another_that_just_served_it(shared: Cluster) -> None:
    c = shared
    async with httpx2.AsyncClient(timeout=30) as http:
        first, second = [f"{replica.base}/mcp" for replica in c.replicas[:2]]
        for i in range(15):
            headers = {"accept": "application/json, text/event-stream"}
            opened = await http.post(first, headers=headers, json={
                "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "mcp", "version": "1"}}})
            headers["mcp-session-id"] = opened.headers["mcp-session-id"]
            for url in (second, second, first):  # both hold a copy of the record now
                listed = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                assert listed.status_code == 200, listed.text
            assert (await http.delete(first, headers=headers)).status_code == 200
            gone = await http.post(second, headers=headers, json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
            assert gone.status_code == 404, (i, gone.text)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "mcp", "version": "1"}}}
JSON_OR_SSE = {"accept": "application/json, text/event-stream"}


async def raw_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """A session opened at `url` over plain HTTP: the headers its next requests carry."""
    opened = await http.post(url, headers=JSON_OR_SSE, json=INITIALIZE)
    assert opened.status_code == 200, opened.text
    headers = {**JSON_OR_SSE, "mcp-session-id": opened.headers["mcp-session-id"]}
    done = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert done.status_code == 202, done.text
    return headers


async def test_concurrent_first_requests_of_a_session_at_a_replica_that_never_held_it_are_all_served(
        shared: Cluster) -> None:
    # The first of them rebuilds the session's connection here; the others wait for it instead of reaching a
    # transport that is not connected yet (which answered 500).
    c, since = shared, shared.marks()
    async with httpx2.AsyncClient(timeout=60, limits=httpx2.Limits(max_connections=100)) as http:
        first, second = [f"{replica.base}/mcp" for replica in c.replicas[:2]]
        statuses: list[int] = []
        for _ in range(5):
            headers = await raw_session(http, first)

            async def listed(i: int) -> None:
                response = await http.post(second, headers=headers,
                                           json={"jsonrpc": "2.0", "id": 10 + i, "method": "tools/list"})
                statuses.append(response.status_code)
                if response.status_code == 200:
                    assert [tool["name"] for tool in decode(response)["result"]["tools"]] == META

            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(listed, i)
        assert statuses == [200] * 40, statuses
        assert "No read stream writer" not in c.replicas[1].output(since[1])


async def test_twenty_concurrent_searches_of_one_session_on_two_replicas_all_succeed(shared: Cluster) -> None:
    # Each writes the session's record; a write made from a revision another one replaced is redone on the newer
    # one (after a short random pause), never refused while the store answers.
    c = shared
    async with httpx2.AsyncClient(timeout=60, limits=httpx2.Limits(max_connections=100)) as http:
        urls = [f"{replica.base}/mcp" for replica in c.replicas[:2]]
        headers = await raw_session(http, urls[0])
        listed = await http.post(urls[1], headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert listed.status_code == 200, listed.text  # held on both: only the writes race
        failures: list[str] = []

        async def search(i: int) -> None:
            response = await http.post(urls[i % 2], headers=headers, json={
                "jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                "params": {"name": "search_tools", "arguments": {"tool_names": [TEXT_TOOLS[i % len(TEXT_TOOLS)]]}}})
            answer = decode(response) if response.status_code == 200 else None
            if answer is None or "result" not in answer or answer["result"].get("isError"):
                failures.append(f"{response.status_code} {response.text[:300]}")

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(search, i)
        assert failures == []
        final = await http.post(urls[1], headers=headers, json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        assert sorted(tool["name"] for tool in decode(final)["result"]["tools"]) == sorted([*META, *TEXT_TOOLS])


async def test_after_redis_is_emptied_a_search_is_the_session_gone_answer_and_every_replica_lets_go() -> None:
    # FLUSHALL, or a failover to an empty Redis: no replica hears of it. A write that finds the session gone is
    # not a success, and no replica serves the session from its copy after it.
    async with cluster(2) as c, httpx2.AsyncClient(timeout=30) as http, AsyncRedis.from_url(c.redis.url) as admin:
        first, second = [f"{replica.base}/mcp" for replica in c.replicas]
        headers = await raw_session(http, first)
        for url in (first, second, first, second):  # both hold a copy of the record now
            listed = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            assert listed.status_code == 200, listed.text
        await admin.flushall()
        searched = await http.post(first, headers=headers, json={
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "search_tools", "arguments": {"tool_names": ["reverse_text"]}}})
        answer = decode(searched) if searched.status_code == 200 else None
        assert searched.status_code == 404 or (
            answer is not None and "Session not found" in answer.get("error", {}).get("message", "")), searched.text
        for url in (first, second):
            gone = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
            assert gone.status_code == 404, (url, gone.text)


# -- failures ---------------------------------------------------------------------------------------------------------


async def test_kill_a_replica_sessions_go_on_and_the_stream_resumes_with_last_event_id() -> None:
    async with cluster(3) as c, AsyncExitStack() as stack:
        victim, first, second = c.replicas
        alive = {"get": victim.port}
        turn = iter(range(10**6))
        notifications = Notifications()

        def pick(method: str) -> int:
            return alive["get"] if method == "GET" else (first.port, second.port)[next(turn) % 2]

        routed = await stack.enter_async_context(session(c.url, notifications=notifications, pick=pick))
        # Ten more sessions through haproxy, with tools enabled before the kill.
        clients = [await stack.enter_async_context(session(c.url)) for _ in range(10)]
        for i, client in enumerate(clients):
            await client.call_tool("search_tools", {"tool_names": own_tools(i)})
        await routed.call_tool("search_tools", {"tool_names": ["reverse_text"]})
        await eventually(lambda: notifications.count == 1)  # the GET stream has seen an event id

        victim.kill()  # -9: no drain, no goodbye
        alive["get"] = first.port  # where the client's reconnection lands
        await routed.call_tool("search_tools", {"tool_names": ["hash_text"]})  # nobody holds the stream now
        await eventually(lambda: notifications.count == 2)  # replayed from Redis on Last-Event-ID
        assert await tool_names(routed) == [*META, "reverse_text", "hash_text"]

        for i, client in enumerate(clients):
            assert await tool_names(client) == [*META, *own_tools(i)]
            for name in own_tools(i):
                result = await client.call_tool(name, {"text": "after the kill"})
                assert not result.is_error, text_of(result)


def _parent(pid: int) -> int:
    """The parent process of `pid` (field 4 of /proc/PID/stat, after the command name in parentheses)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


HAPROXY_502 = "went away before answering (haproxy 502)"
"""From the JSON-RPC error examples/haproxy.cfg answers when a replica dies while serving a request."""


async def test_a_call_in_flight_on_a_killed_replica_gets_a_json_rpc_error_and_is_not_run_again(
        tmp_path: Path) -> None:
    """Before: haproxy's own HTML 502 page (the client could only say "Server returned an error response"). A
    tools/call the replica had received may have run (an upstream's side effects), so it is not sent to another
    replica: the client gets a JSON-RPC error that says so. The call stalls at the upstream of whichever replica
    haproxy picked; that replica is killed. With JSON responses: an answer streamed as SSE has its 200 sent before
    the call ends, so a replica that dies then leaves the client resuming a stream nobody will finish
    (docs/scaling.md, "What a killed replica costs")."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"alpha": faulty("alpha", "--tools", "echo,stall", pid_dir=tmp_path)}}))
    stalled = tmp_path / "alpha-stalled.pid"
    async with cluster(3, env={"LAZYTOOLS_JSON_RESPONSE": "true"}, extra=("--config", str(config))) as c, \
            session(c.url) as client:

        async def kill_the_replica_when_it_stalls() -> None:
            await eventually(lambda: stalled.exists() and stalled.read_text().strip(), timeout=60)
            serving = _parent(int(stalled.read_text()))
            victim = next(r for r in c.replicas if r.process is not None and r.process.pid == serving)
            victim.kill()

        with anyio.fail_after(120):  # a call resent to another replica would stall there for ever
            async with anyio.create_task_group() as tg:
                tg.start_soon(kill_the_replica_when_it_stalls)
                with pytest.raises(MCPError) as raised:
                    await client.call_tool("invoke_tool", {"tool_name": "alpha__stall", "arguments": {}})
        assert HAPROXY_502 in str(raised.value), raised.value
        assert "may or may not have run" in str(raised.value)
        assert (tmp_path / "alpha.calls").read_text().splitlines().count("stall") == 1  # sent to one replica only
        after = await client.call_tool("invoke_tool", {"tool_name": "alpha__echo", "arguments": {"text": "still here"}})
        assert not after.is_error and "still here" in text_of(after), text_of(after)


WENT_AWAY = "the replica serving this call went away before answering; it may or may not have run"
"""From the JSON-RPC error the replica that takes a resumed call stream answers once the call's own replica is dead."""


async def test_a_streamed_call_whose_replica_is_killed_after_its_first_event_gets_a_json_rpc_error(
        tmp_path: Path) -> None:
    """Before: the answer's SSE stream had sent events (the priming event, a progress notification) when its replica
    died, so the SDK resumed it with Last-Event-ID at another replica, which ended the resumed stream with nothing;
    the SDK resumed again, and again, until the client's own timeout (here a day). Now each replica keeps a
    liveness key in Redis; a call stream's event ids name the replica serving the call, and the replica that takes
    the resumed stream answers the JSON-RPC error once that replica's liveness lapses. The call is not sent again."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"alpha": faulty("alpha", "--tools", "echo,stall", pid_dir=tmp_path)}}))
    stalled = tmp_path / "alpha-stalled.pid"
    progressed = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        progressed.set()

    async with cluster(3, extra=("--config", str(config))) as c, \
            httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=86_400)) as http, \
            Client(streamable_http_client(c.url, http_client=http), mode="legacy",
                   client_info=types.Implementation(name="mcp", version="1.0")) as client:

        async def kill_the_replica_after_the_first_event() -> None:
            await progressed.wait()  # the progress event reached the client: its stream is resumable
            serving = _parent(int(stalled.read_text()))
            victim = next(r for r in c.replicas if r.process is not None and r.process.pid == serving)
            victim.kill()

        with anyio.fail_after(180):  # only against a hang: the client's own read timeout is a day
            async with anyio.create_task_group() as tg:
                tg.start_soon(kill_the_replica_after_the_first_event)
                with pytest.raises(MCPError) as raised:
                    await client.call_tool("invoke_tool", {"tool_name": "alpha__stall", "arguments": {}},
                                           progress_callback=on_progress)
        assert WENT_AWAY in str(raised.value), raised.value
        assert (tmp_path / "alpha.calls").read_text().splitlines().count("stall") == 1  # sent to one replica only
        after = await client.call_tool("invoke_tool", {"tool_name": "alpha__echo", "arguments": {"text": "still here"}})
        assert not after.is_error and "still here" in text_of(after), text_of(after)


async def test_replicas_killed_under_round_robin_fail_no_request_that_starts_after_the_kill() -> None:
    """Clients as users run them (keep-alive connections, a GET stream each) calling through haproxy round robin
    while each replica in turn is killed with -9 and started again. A request that starts after a kill is never
    failed; one in flight on the killed replica may be (it may have run), always with a JSON-RPC error: haproxy's
    when the replica had not started its answer; the SDK's "SSE stream ended without a response" when it had sent
    the answer's 200 but not yet its first event (the priming event follows the headers in another write: nothing
    to resume from); else the error of the replica that took the resumed stream, once the killed one's liveness
    lapsed. Before: that last case resumed a stream nobody finished, until the client's own timeout
    (docs/scaling.md, "What a killed replica costs")."""
    async with cluster(3) as c:
        calls: list[tuple[float, float, str | None]] = []  # (started, ended, why it failed)
        stop = anyio.Event()

        async def load(i: int) -> None:
            async with httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=300)) as http, \
                    Client(streamable_http_client(c.url, http_client=http), mode="legacy",
                           client_info=types.Implementation(name="mcp", version="1.0")) as client:
                tools = own_tools(i)
                await client.call_tool("search_tools", {"tool_names": tools})
                while not stop.is_set():
                    started, failure = time.monotonic(), None
                    try:
                        with anyio.fail_after(60):  # a call that never ends is a failed call too
                            result = await client.call_tool(tools[0], {"text": f"load {i}"})
                        if result.is_error:
                            failure = text_of(result)
                    except Exception as exc:  # every failed call is what this test counts
                        failure = f"{type(exc).__name__}: {exc}"
                    calls.append((started, time.monotonic(), failure))

        kills: list[float] = []
        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(load, i)
            await eventually(lambda: len(calls) > 30, timeout=120)
            for victim in c.replicas:
                kills.append(time.monotonic())
                victim.kill()
                before = len(calls)
                await eventually(lambda: len(calls) > before + 60, timeout=120)  # served by the two others
                await victim.start()
                await c.all_ready_through_proxy()
            stop.set()
        failures = [(started, ended, why) for started, ended, why in calls if why is not None]
        # Only a call in flight at a kill may fail (it reached the replica, which may have run it) ...
        assert [f for f in failures if not any(f[0] < kill <= f[1] for kill in kills)] == [], (kills, failures)
        # ... and then with a JSON-RPC error (never haproxy's HTML page, never the client's own timeout): haproxy's,
        # the SDK's for an answer's stream that ended before its first event, or the resuming replica's.
        assert all(HAPROXY_502 in why or WENT_AWAY in why
                   or why == "MCPError: SSE stream ended without a response" for _, _, why in failures), failures
        assert not any("<html" in why.lower() for _, _, why in failures), failures
        assert len(calls) > 200


async def test_rolling_restart_under_load_fails_no_call() -> None:
    async with cluster(3) as c:
        failures: list[str] = []
        calls = [0]
        stop = anyio.Event()

        async def load(i: int) -> None:
            async with session(c.url) as client:
                await client.call_tool("search_tools", {"tool_names": own_tools(i)})
                while not stop.is_set():
                    for name in own_tools(i):
                        try:
                            with anyio.fail_after(60):  # a call that never ends is a failed call too
                                result = await client.call_tool(name, {"text": f"load {i}"})
                                if result.is_error:
                                    failures.append(text_of(result))
                                if await tool_names(client) != [*META, *own_tools(i)]:
                                    failures.append(f"session {i} lost its tools")
                        except Exception as exc:  # any failed call is what this test counts
                            failures.append(f"{type(exc).__name__}: {exc}")
                        calls[0] += 1

        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(load, i)
            for replica in c.replicas:
                before = calls[0]
                await eventually(lambda: calls[0] > before + 20, timeout=120)  # load is running
                assert await replica.stop() == 143, replica.output()[-3000:]  # SIGTERM: drain, then exit
                await replica.start()
                await c.all_ready_through_proxy()
            before = calls[0]
            await eventually(lambda: calls[0] > before + 20, timeout=120)
            stop.set()
        assert failures == []
        assert calls[0] > 0


async def test_redis_killed_and_restarted_gives_clear_errors_then_recovers() -> None:
    async with cluster(3) as c:
        async with session(c.url) as client:
            await search_and_use(client, ["reverse_text", "hash_text"])
            c.redis.kill()
            with pytest.raises(MCPError) as raised:
                await client.call_tool("reverse_text", {"text": "while Redis is down"})
            assert "session store" in str(raised.value).lower() or "503" in str(raised.value), str(raised.value)
            async with httpx2.AsyncClient(timeout=30) as http:
                for replica in c.replicas:
                    ready = await http.get(f"{replica.base}/readyz")
                    assert ready.status_code == 503 and "store" in ready.json()["status"]
                    assert (await http.get(f"{replica.base}/healthz")).status_code == 200  # alive all the same
            await c.redis.start()
            await c.all_ready_through_proxy()
            # What was written before the failure is all there: the same session, its tools, on any replica.
            assert await tool_names(client) == [*META, "reverse_text", "hash_text"]
            result = await client.call_tool("hash_text", {"text": "after Redis came back"})
            assert not result.is_error, text_of(result)


async def test_redis_restarted_under_a_held_get_stream_the_next_list_changed_arrives_and_posts_answer() -> None:
    """Every pooled connection of every replica is stale after the restart: the replica holding the GET stream stores
    the next notification on one of them (the SDK's message router would die on the error and the stream go
    silent); the command is sent again on a new connection. haproxy is paused meanwhile: its /readyz probes would
    use (and so replace) the stale connections first. The client talks to the replicas directly."""
    async with cluster(3) as c, AsyncRedis.from_url(c.redis.url) as probe:
        stream, *others = [replica.port for replica in c.replicas]
        turn = iter(range(10**6))
        notifications = Notifications()
        to_stream = False

        def pick(method: str) -> int:
            return stream if method == "GET" or to_stream else others[next(turn) % 2]

        async with session(c.url, notifications=notifications, pick=pick) as client:
            await client.call_tool("search_tools", {"tool_names": ["reverse_text"]})
            await eventually(lambda: notifications.count == 1)
            c.haproxy.send_signal(signal.SIGSTOP)
            try:
                c.redis.kill()
                await c.redis.start()

                async def resubscribed() -> bool:  # the holder's pub/sub connection is back on the session's channel
                    return bool(await probe.pubsub_channels("lazytools:push:*"))

                await eventually(resubscribed)
                await client.call_tool("search_tools", {"tool_names": ["hash_text"]})
                await eventually(lambda: notifications.count == 2)
            finally:
                c.haproxy.send_signal(signal.SIGCONT)
            to_stream = True  # a POST on the replica holding the stream answers
            with anyio.fail_after(30):
                assert await tool_names(client) == [*META, "reverse_text", "hash_text"]


async def test_redis_paused_through_haproxy_clients_get_json_rpc_503s_and_modern_requests_are_served() -> None:
    """Every replica fails /readyz at once: haproxy falls back on its backup lines (the same replicas, unchecked)
    instead of answering its own HTML 503."""
    async with cluster(2) as c, httpx2.AsyncClient(timeout=30) as http:
        headers = {"accept": "application/json, text/event-stream"}
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "mcp", "version": "1"}}}
        assert c.redis.process is not None
        c.redis.process.send_signal(signal.SIGSTOP)
        try:
            # haproxy's checks take two failures to mark a replica down; then it says what it runs on.
            await eventually(lambda: "0 active and 2 backup servers left" in c.haproxy_log.read_text(), timeout=60)
            refused = await http.post(c.url, headers=headers, json=initialize)
            assert refused.status_code == 503, refused.text
            assert refused.headers["content-type"].startswith("application/json"), refused.text
            assert "session store (Redis) unavailable" in refused.json()["error"]["message"]
            async with Client(c.url, mode="2026-07-28") as modern:  # no session, no Redis needed
                assert [tool.name for tool in (await modern.list_tools()).tools] == META
        finally:
            c.redis.process.send_signal(signal.SIGCONT)


# -- stickiness, the TypeScript SDK ------------------------------------------------------------------------------------


async def test_sticky_config_keeps_a_session_on_one_replica_and_fails_over() -> None:
    async with cluster(3, env=INFO, sticky=True) as c:
        async with session(c.url) as client:
            await search_and_use(client, ["reverse_text"])
            # initialize has no session id yet (round robin); from then on the id's hash picks one replica, which
            # served the session from its record if it was not the one that opened it: once at most.
            adopted = served_from_store(c)
            assert sum(adopted) <= 1, adopted
            (holder,) = ([r for r, n in zip(c.replicas, adopted, strict=True) if n]
                         or [r for r in c.replicas if "opened here" in r.output()])
            await search_and_use(client, ["reverse_text", "hash_text"])
            assert served_from_store(c) == adopted  # still there, and only there
            holder.kill()
            for _ in range(3):  # the session goes on elsewhere, from its record
                assert await tool_names(client) == [*META, "reverse_text", "hash_text"]
            result = await client.call_tool("reverse_text", {"text": "failed over"})
            assert not result.is_error and "revo deliaf" in text_of(result)
            assert holder.process is not None and holder.process.poll() is not None  # served without it


async def test_typescript_sdk_client_through_haproxy(node_client: list[str], shared: Cluster) -> None:
    env = {**os.environ, "INTEROP_CLIENT_NAME": "Visual Studio Code",
           "INTEROP_QUERY": "convert a temperature from celsius to fahrenheit",
           "INTEROP_TOOL": "convert_temperature",
           "INTEROP_ARGS": json.dumps({"value": 100, "from_unit": "C", "to_unit": "F"})}
    with anyio.fail_after(120):
        proc = await anyio.run_process([*node_client, "http", shared.url], env=env, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    assert out["first"] == META
    assert sorted(out["events"]) == ["list_changed", "result"]
    assert "convert_temperature" in out["relisted"]
    assert out["direct"] == out["invoked"] and "212" in out["invoked"]["text"]


@pytest.mark.parametrize("sticky", [False, True])
def test_the_example_haproxy_config_is_valid_as_the_tests_run_it(sticky: bool, tmp_path: Any) -> None:
    config = tmp_path / "haproxy.cfg"
    config.write_text(haproxy_config(free_port(), [free_port(), free_port()], sticky=sticky))
    checked = subprocess.run([require("haproxy", "haproxy"), "-c", "-f", str(config)], capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    text = config.read_text()
    assert "uri /readyz" in text and "hdr Host localhost" in text  # probes pass lazytools' Host check
    assert ("\n    balance hdr(Mcp-Session-Id)\n" in text) is sticky  # the line itself, not its comment


async def test_a_draining_replica_accepts_and_serves_through_the_grace_period_then_exits(tmp_path: Any) -> None:
    # It once closed its listener 0.2 s after SIGTERM when idle: before haproxy (2 checks 1 s apart) saw the 503.
    grace = 5.0
    async with running_redis() as redis:
        replica = Replica(free_port(), tmp_path, {
            "LAZYTOOLS_STATE_URL": redis.url, "LAZYTOOLS_DRAIN_SECONDS": "60",
            "LAZYTOOLS_DRAIN_GRACE_SECONDS": str(grace), "LAZYTOOLS_LOG_LEVEL": "WARNING"})
        await replica.start()
        process = replica.process
        assert process is not None
        try:
            sent = time.monotonic()
            process.send_signal(signal.SIGTERM)  # idle: no request in flight, none for a while
            await eventually(lambda: _not_ready(replica))
            # New connections are accepted and served meanwhile (sessions live in Redis: opened here too).
            async with httpx2.AsyncClient(timeout=60, limits=httpx2.Limits(max_keepalive_connections=0)) as http, \
                    Client(streamable_http_client(f"{replica.base}/mcp", http_client=http), mode="legacy") as client:
                assert (await client.list_tools()).tools
            with anyio.fail_after(60):
                while process.poll() is None:
                    await anyio.sleep(0.05)
            assert process.returncode == 143, replica.output()[-3000:]
            assert time.monotonic() - sent >= grace  # not before the grace was over
        finally:
            await replica.stop()


async def _not_ready(replica: Replica) -> bool:
    async with httpx2.AsyncClient(timeout=5) as http:
        return (await http.get(f"{replica.base}/readyz")).status_code == 503
