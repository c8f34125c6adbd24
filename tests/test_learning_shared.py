"""Learning from use shared by replicas: two servers with one real redis-server, real clients on each.

What one replica's sessions did moves results and brings suggestions on the other; the streams stay capped; the
hashing key is Redis's, the same on every replica; a Redis that is down pauses learning and never fails a search.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from redis.asyncio import Redis as AsyncRedis

from lazytools import LazyServer, build_server
from lazytools.app import open_state
from lazytools.cli import main
from lazytools.learning.keys import hashed_terms
from lazytools.learning.prior import UsagePrior
from lazytools.learning.records import CallRecord, SearchRecord
from lazytools.learning.redis_store import MAX_ENTRY_BYTES, RedisUsageStore
from lazytools.server.middleware.shared_sessions import SharedSessions
from lazytools.transports.http import build_app

from .cluster import Redis, free_port, running_redis
from .conftest import client, make_settings, text_of
from .helpers import eventually, running_http
from .test_learning import QUERY, _use, notes_catalog

pytestmark = [pytest.mark.process, pytest.mark.anyio]  # every test starts a redis-server

RELATED = "look through my notes for budget ideas"


def replica(url: str, cache: Path, **overrides: object) -> LazyServer:
    settings = {"learn": True, "cache_dir": cache, "state_url": url, "learn_sync_interval": 0.05, **overrides}
    return build_server(notes_catalog(), make_settings(**settings))


def _ready(server: LazyServer) -> None:
    assert server.usage is not None and server.usage.loaded.wait(10) and not server.usage.paused


async def test_what_sessions_did_on_one_replica_ranks_and_suggests_on_another(tmp_path: Path) -> None:
    async with running_redis() as redis:
        first, second = replica(redis.url, tmp_path / "a"), replica(redis.url, tmp_path / "b")
        _ready(first)
        _ready(second)
        assert first.usage is not None and second.usage is not None
        # One key for every replica, kept in Redis (made once): the same request hashes alike everywhere.
        async with AsyncRedis.from_url(redis.url) as admin:
            key = await admin.get("lazytools:usage:key")
        assert isinstance(key, bytes) and len(key) == 32
        assert first.usage.prior.key == second.usage.prior.key == key
        assert first.usage.prior.terms(QUERY) == second.usage.prior.terms(QUERY) != hashed_terms(QUERY)
        assert not (tmp_path / "a" / "usage.key").exists() and not (tmp_path / "a" / "usage.sqlite3").exists()

        async with client(second) as session:
            before = text_of(await session.call_tool("search_tools", {"query": RELATED}))
        assert "send_email" not in before and "often used for such requests" not in before

        await _use(first, sessions=4)  # the sessions of the other test, all on the first replica
        assert first.usage.flushed()
        # The second replica reads them from Redis at its next polls: 8 successful calls, each counted once (its own
        # records are not read back as another's).
        await eventually(lambda: second.usage is not None and sum(second.usage.prior.called.values()) > 7.9)
        assert first.usage.prior.called == pytest.approx(second.usage.prior.called, rel=1e-6)
        async with client(second) as session:
            found = text_of(await session.call_tool("search_tools", {"query": RELATED}))
        head, _, suggested = found.partition("Also possibly relevant")
        assert "search_notes" in head and "often used for such requests" in head, found
        # Used with search_notes in every session: a place after the ranked ones (co-usage), labelled as learnt.
        assert "send_email" in head and "often used together with search_notes, from past sessions" in head
        first.usage.close()
        second.usage.close()

        # A replica started later reads the history, and `lazytools usage` reads it from Redis too.
        third = replica(redis.url, tmp_path / "c")
        _ready(third)
        assert third.usage is not None and third.usage.prior.companions(["search_notes"])
        third.usage.close()


class ByTool(httpx2.AsyncHTTPTransport):
    """Sends a `tools/call` of a tool `ports` names to that port, every other request to `default`: the session's
    searches on one replica, its calls on another, as round robin may spread them."""

    def __init__(self, ports: dict[str, int], default: int) -> None:
        super().__init__()
        self.ports = ports
        self.default = default

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.default
        if request.method == "POST":
            body = json.loads(request.content or b"null")
            if isinstance(body, dict) and body.get("method") == "tools/call":
                port = self.ports.get(body["params"]["name"], self.default)
        request.url = request.url.copy_with(port=port)
        return await super().handle_async_request(request)


@asynccontextmanager
async def http_replicas(url: str, cache: Path) -> AsyncIterator[list[tuple[LazyServer, str]]]:
    """Two HTTP replicas in this process sharing sessions and usage through the Redis at `url`: (server, base URL)."""
    async with AsyncExitStack() as stack:
        started: list[tuple[LazyServer, str]] = []
        for name in ("a", "b"):
            server = replica(url, cache / name, transport="http")
            _ready(server)
            assert server.usage is not None
            stack.callback(server.usage.close)
            state = await stack.enter_async_context(open_state(server.settings))
            SharedSessions(server, state).install()
            base = await stack.enter_async_context(running_http(build_app(server, server.settings, state=state)))
            started.append((server, base))
        yield started


@asynccontextmanager
async def routed_session(base: str, route: ByTool) -> AsyncIterator[Client]:
    """A Python SDK client in legacy (handshake) mode whose requests go where `route` sends them."""
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0), transport=route,
                                  timeout=httpx2.Timeout(60, read=300)) as http:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http), mode="legacy",
                          client_info=types.Implementation(name="mcp", version="1.0")) as session:
            yield session


async def _entries(url: str, stream: str) -> list[dict[str, Any]]:
    async with AsyncRedis.from_url(url) as admin:
        return [json.loads(fields[b"r"]) for _, fields in await admin.xrange(f"lazytools:usage:{stream}")]


async def test_a_call_served_by_another_replica_than_its_search_is_linked_to_it_and_teaches_both(
        tmp_path: Path) -> None:
    async with running_redis() as redis, http_replicas(redis.url, tmp_path) as [(first, a), (second, b)]:
        port_a, port_b = (httpx2.URL(base).port for base in (a, b))
        assert port_a is not None and port_b is not None
        # Searches and send_email on the first replica, search_notes on the second: each call is served by another
        # replica than the search that found it or the call before it.
        route = ByTool({"search_notes": port_b, "send_email": port_a}, default=port_a)
        for base in (a, b):
            async with routed_session(base, ByTool({}, default=httpx2.URL(base).port or 0)) as session:
                before = text_of(await session.call_tool("search_tools", {"query": RELATED}))
            assert "send_email" not in before and "often used for such requests" not in before, before

        for _ in range(3):
            async with routed_session(a, route) as session:
                found = text_of(await session.call_tool("search_tools", {"query": QUERY}))
                assert "search_notes" in found
                assert not (await session.call_tool("search_notes", {"words": "budget"})).is_error
                await session.call_tool("search_tools", {"tool_names": ["send_email"]})
                assert not (await session.call_tool("send_email", {"to": "friend@example.com"})).is_error
        assert first.usage is not None and second.usage is not None
        assert first.usage.flushed() and second.usage.flushed()

        # The calls' records name the search the first replica served and the call the other one served.
        searches = {entry["s"]: entry["i"] for entry in await _entries(redis.url, "searches") if entry["q"] == QUERY}
        calls = await _entries(redis.url, "calls")
        assert len(searches) == 3 and len(calls) == 6
        terms = list(first.usage.prior.terms(QUERY))
        for call in calls:
            assert call["k"] and call["s"] in searches
            if call["n"] == "search_notes":
                assert call["f"] == searches[call["s"]] and call["t"] == terms and call["b"] is None, call
            else:
                assert call["n"] == "send_email" and call["b"] == "search_notes", call

        # Each replica learnt all of it (its own records at once, the other's from Redis): both rank and suggest.
        for server in (first, second):
            await eventually(lambda server=server: server.usage is not None  # type: ignore[misc]
                             and sum(server.usage.prior.called.values()) > 5.9)
        for base in (a, b):
            async with routed_session(base, ByTool({}, default=httpx2.URL(base).port or 0)) as session:
                found = text_of(await session.call_tool("search_tools", {"query": RELATED}))
            head, _, suggested = found.partition("Also possibly relevant")
            assert "search_notes" in head and "often used for such requests" in head, (base, found)
            assert "often used together with search_notes, from past sessions" in head and "send_email" in head


async def test_usage_command_reads_redis_when_a_state_url_is_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    async with running_redis() as redis:
        server = replica(redis.url, tmp_path)
        _ready(server)
        await _use(server, sessions=4)
        assert server.usage is not None and server.usage.flushed()
        server.usage.close()
        monkeypatch.setenv("LAZYTOOLS_CACHE_DIR", str(tmp_path / "empty"))
        monkeypatch.setenv("LAZYTOOLS_STATE_URL", redis.url)
        assert await anyio.to_thread.run_sync(main, ["usage"]) == 0  # main runs its own event loop
        out = capsys.readouterr().out
        assert out.startswith("4 searches, 9 tool calls in 4 sessions that searched or called, 4 of which called a tool "
                              "(Redis, lazytools:usage:*)"), out
        pins = out.split("LAZYTOOLS_ALWAYS_AVAILABLE_TOOLS=")[1].strip().split(",")
        assert sorted(pins) == ["search_notes", "send_email"]
    assert await anyio.to_thread.run_sync(main, ["usage"]) == 1  # Redis gone: one line, no traceback
    assert capsys.readouterr().err.startswith("lazytools: Cannot read the usage kept in Redis")


async def test_streams_are_capped_and_hold_no_text_or_session_id_when_asked(tmp_path: Path) -> None:
    async with running_redis() as redis:
        store = RedisUsageStore(redis.url, keep=5)
        now = time.time()
        store.write([CallRecord(at=now + i, session="s", tool=f"tool{i}", ok=True) for i in range(12)])
        store.write([SearchRecord(id=f"q{i}", at=now + i, session="s", terms=("t",), returned=("a",), enabled=())
                     for i in range(12)])
        assert store.client.xlen("lazytools:usage:calls") == store.client.xlen("lazytools:usage:searches") == 5
        assert [call.tool for call in store.calls()] == [f"tool{i}" for i in range(7, 12)]
        assert [search.id for search in store.searches(limit=3)] == ["q9", "q10", "q11"]
        # Whatever else can write to Redis: entries that are not well-formed records are skipped, never raised.
        other = RedisUsageStore(redis.url)
        assert [call.tool for call in other.calls(limit=1)] == ["tool11"] and len(other.searches()) == 5
        valid = json.dumps({"a": now, "s": "s", "n": "good", "k": True, "t": []})
        for raw in (b"not json", b"[]", json.dumps({"a": "soon", "s": "s", "n": "x", "k": True, "t": []}).encode(),
                    json.dumps({"a": now, "s": "s", "n": "x", "k": 1, "t": []}).encode(),
                    b'{"pad": "' + b"x" * MAX_ENTRY_BYTES + b'"}', valid.encode()):
            store.client.xadd("lazytools:usage:calls", {"o": "elsewhere", "r": raw})
        assert [call.tool for call in other.newer(100)] == ["good"]
        assert [call.tool for call in other.calls()][-1:] == ["good"]
        other.close()
        store.client.delete("lazytools:usage:calls", "lazytools:usage:searches")
        store.close()

        server = replica(redis.url, tmp_path, learn_request_text=False)
        _ready(server)
        assert server.usage is not None
        async with client(server) as session:
            await session.call_tool("search_tools", {"query": QUERY})
            await session.call_tool("search_notes", {"words": "budget"})
        assert server.usage.flushed()
        server.usage.close()
        async with AsyncRedis.from_url(redis.url) as admin:
            entries = [fields[b"r"] for stream in ("searches", "calls")
                       for _, fields in await admin.xrange(f"lazytools:usage:{stream}")]
        assert len(entries) == 2
        search = json.loads(entries[0])
        assert search["q"] is None and search["t"] == list(server.usage.prior.terms(QUERY))
        assert not any(word.encode() in raw for word in ("budget", "ideas") for raw in entries)
        # A session is a keyed hash of its id (a 32-digit credential while it lives), the same in its search and its
        # call: distinct sessions still count apart.
        assert search["s"] == json.loads(entries[1])["s"] and len(search["s"]) == 16


async def test_redis_down_pauses_learning_once_and_never_fails_a_search(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    with tempfile.TemporaryDirectory(prefix="lazytools-redis-") as scratch:
        redis = Redis(free_port(), Path(scratch))
        # Down at start: the replica serves, learning waits for the shared key.
        with caplog.at_level(logging.WARNING, logger="lazytools.usage"):
            server = replica(redis.url, tmp_path, state_timeout=10.0)  # an outage here refuses at once
            assert server.usage is not None and server.usage.loaded.wait(10) and server.usage.paused
            await _search_and_call(server)
            assert server.usage.stored == 0
            await redis.start()
            try:
                await eventually(lambda: server.usage is not None and not server.usage.paused)
                await _search_and_call(server)
                assert server.usage.flushed() and server.usage.stored == 2
                # Down again while serving: searches and calls go on, one warning for the whole outage.
                redis.kill()
                for _ in range(3):
                    await _search_and_call(server)
                    assert server.usage.flushed()
                assert server.usage.paused and server.usage.stored == 2
                await redis.start()
                await eventually(lambda: server.usage is not None and not server.usage.paused)
                stored = server.usage.stored
                await _search_and_call(server)
                assert server.usage.flushed() and server.usage.stored == stored + 2
            finally:
                server.usage.close()
                await redis.stop()
        warnings = [r.getMessage() for r in caplog.records if "unavailable" in r.getMessage()]
        resumed = [r.getMessage() for r in caplog.records if "answers again" in r.getMessage()]
        assert len(warnings) == 2 and len(resumed) == 2, caplog.records  # one of each per outage
        assert not any(redis.url in r.getMessage() for r in caplog.records)


async def _search_and_call(server: LazyServer) -> None:
    async with client(server) as session:
        found = await session.call_tool("search_tools", {"query": QUERY})
        assert not found.is_error and "search_notes" in text_of(found)
        assert not (await session.call_tool("search_notes", {"words": "budget"})).is_error


async def test_malformed_or_far_dated_entries_are_skipped_and_the_usage_thread_goes_on(tmp_path: Path) -> None:
    # Anything that can write to Redis can add entries: a time of 1e308 or of the far future once killed the
    # thread (OverflowError) on every replica, for good.
    prior = UsagePrior()
    for at in (1e308, 4.5e9, -1e308, float("inf"), float("nan"), 1000.0):
        prior.add(CallRecord(at=at, session="s", tool="far", ok=True))
    assert "far" not in prior.called
    async with running_redis() as redis:
        server = replica(redis.url, tmp_path)
        _ready(server)
        assert server.usage is not None
        now = time.time()
        async with AsyncRedis.from_url(redis.url) as admin:
            for at in ("1e308", "4.5e9", "-1e308", "Infinity", "NaN", "1000"):
                await admin.xadd("lazytools:usage:searches", {"o": "evil", "r": f'{{"i":"x","a":{at},"s":"s1",'
                                                              f'"t":["aa"],"r":["search_notes"],"e":[],"q":null}}'})
                await admin.xadd("lazytools:usage:calls", {"o": "evil", "r": f'{{"a":{at},"s":"s1","n":"bad",'
                                                           f'"k":true,"f":null,"t":["aa"],"b":null}}'})
            await admin.xadd("lazytools:usage:calls", {"o": "evil", "r": "[" * 30_000 + "]" * 30_000})
            await admin.xadd("lazytools:usage:calls", {"o": "elsewhere", "r": json.dumps(
                {"a": now, "s": "s2", "n": "good", "k": True, "f": None, "t": [], "b": None})})
        await eventually(lambda: server.usage is not None and "good" in server.usage.prior.called)
        assert "bad" not in server.usage.prior.called and not server.usage.failed
        await _search_and_call(server)  # the thread still writes
        assert server.usage.flushed() and server.usage.stored == 2
        server.usage.close()


async def test_replicas_agree_on_the_hashing_key_again_after_redis_lost_it(tmp_path: Path) -> None:
    async with running_redis() as redis:
        first, second = replica(redis.url, tmp_path / "a"), replica(redis.url, tmp_path / "b")
        _ready(first)
        _ready(second)
        assert first.usage is not None and second.usage is not None
        old = first.usage.prior.key
        async with AsyncRedis.from_url(redis.url) as admin:
            await admin.flushall()  # as a Redis restarted without its data
            # Whoever asks first makes the new key (here: neither replica); both adopt what Redis holds.
            await admin.set("lazytools:usage:key", b"k" * 32)
        await eventually(lambda: first.usage is not None and second.usage is not None
                         and first.usage.prior.key == second.usage.prior.key == b"k" * 32)
        assert old != b"k" * 32
        assert first.usage.prior.terms(QUERY) == second.usage.prior.terms(QUERY)
        first.usage.close()
        second.usage.close()
