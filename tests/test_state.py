"""The shared session store: records, TTLs, concurrent writes, GET-stream events and the bus, in memory and on a
real redis-server (tests/cluster.py starts one; Debian's redis-server package)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server.streamable_http import EventMessage
from redis.exceptions import RedisError

from lazytools.app import build_server, check_replicas_agree, open_state, replica_fingerprint
from lazytools.state import GET_STREAM, MemoryStateStore, SessionRecord, StateUnavailableError
from lazytools.state.event_ids import CallEvent, call_event_id, parse_call_event_id
from lazytools.state.events import WENT_AWAY, MemorySessionEvents, message_of
from lazytools.state.redis import RedisState
from lazytools.state.sessions import SessionState

from .cluster import free_port, running_redis
from .conftest import make_settings, small_catalog
from .helpers import eventually


def record(key: str = "s1") -> SessionRecord:
    return SessionRecord(key=key, surface="dynamic", protocol_version="2025-11-25",
                         client_params={"clientInfo": {"name": "mcp", "version": "1"}, "capabilities": {},
                                        "protocolVersion": "2025-11-25"})


def enabling(*names: str, limit: int = 20) -> Any:
    """A change that enables `names` as a search would (the server's own change is built the same way)."""

    def change(rec: SessionRecord) -> None:
        state = SessionState(key=rec.key, surface="dynamic", enabled=dict.fromkeys(rec.enabled),
                             used_at=dict(rec.used_at), clock=rec.clock)
        state.enable(list(names), limit=limit)
        rec.enabled, rec.used_at, rec.clock = list(state.enabled), dict(state.used_at), state.clock

    return change


def test_a_record_round_trips_through_json() -> None:
    original = record()
    original.enabled = ["a", "b"]
    original.used_at = {"a": 1, "b": 2}
    original.log_level = "warning"
    assert SessionRecord.from_json(original.to_json()) == original
    with pytest.raises(ValueError):
        SessionRecord.from_json("[1]")


async def test_memory_store_expires_idle_sessions_and_use_refreshes_the_ttl() -> None:
    now = [0.0]
    store = MemoryStateStore(ttl=10, clock=lambda: now[0])
    await store.create(record())
    now[0] = 9
    assert await store.load("s1") is not None  # used at 9: lives until 19
    now[0] = 18
    assert await store.touch("s1")
    now[0] = 28.5
    assert await store.load("s1") is None


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.process)])
async def test_concurrent_writes_of_one_session_are_both_kept(backend: str) -> None:
    async def check(store: Any) -> None:
        await store.create(record())
        first, second = await store.load("s1"), await store.load("s1")  # two requests, loaded together
        assert await store.update(first, enabling("reverse_text")) is not None
        written = await store.update(second, enabling("hash_text"))  # made from the older revision: redone
        assert written is not None and written.enabled == ["reverse_text", "hash_text"]
        loaded = await store.load("s1")
        assert loaded is not None and loaded.enabled == ["reverse_text", "hash_text"] and loaded.rev == 2
        assert await store.delete("s1")
        assert await store.load("s1") is None
        assert await store.update(loaded, enabling("x")) is None  # the session is gone

    if backend == "memory":
        await check(MemoryStateStore(ttl=60))
        return
    async with running_redis() as redis, RedisState(redis.url, ttl=60).running() as state:
        await check(state)


async def test_memory_events_replay_only_what_came_after() -> None:
    events = MemorySessionEvents()
    first = await events.store_event(GET_STREAM, message_of("notifications/tools/list_changed", None))
    await events.store_event(GET_STREAM, message_of("notifications/message", {"level": "info", "data": "x"}))
    local = await events.store_event("7", message_of("notifications/progress", {"progressToken": 1, "progress": 1}))
    seen: list[str] = []

    async def send(event: EventMessage) -> None:
        seen.append(event.message.method)  # type: ignore[union-attr]

    assert await events.replay_events_after(first, send) == GET_STREAM
    assert seen == ["notifications/message"]
    assert await events.replay_events_after(local, send) is None  # a POST's events are not kept


@pytest.mark.process
async def test_redis_ttl_events_and_the_bus() -> None:
    async with running_redis() as redis, RedisState(redis.url, ttl=30, prefix="t:").running() as state:
        await state.create(record("abc"))
        ttl = await state.client.ttl("t:session:abc")
        assert 0 < ttl <= 30

        events = state.events("abc")
        first = await events.store_event(GET_STREAM, message_of("notifications/tools/list_changed", None))
        await events.store_event(GET_STREAM, message_of("notifications/resources/list_changed", None))
        replayed: list[str] = []

        async def send(event: EventMessage) -> None:
            replayed.append(event.message.method)  # type: ignore[union-attr]

        assert await events.replay_events_after(first, send) == GET_STREAM
        assert replayed == ["notifications/resources/list_changed"]

        assert await state.publish("abc", {"method": "m", "params": None}) == 0  # nobody holds the stream
        got: list[dict[str, Any]] = []

        async def deliver(message: dict[str, Any]) -> None:
            got.append(message)

        async with state.hold("abc", deliver):
            assert await state.publish("abc", {"method": "notifications/tools/list_changed", "params": None}) == 1
            await eventually(lambda: got == [{"method": "notifications/tools/list_changed", "params": None}])
        assert await state.publish("abc", {"method": "m", "params": None}) == 0

        ended: list[str] = []

        async def on_end(key: str) -> None:
            ended.append(key)

        state.on_end(on_end)
        await state.end("abc")
        await eventually(lambda: ended == ["abc"])


@pytest.mark.process
async def test_redis_down_is_a_clear_error_and_a_failed_ping_then_recovery() -> None:
    async with running_redis() as redis:
        async with RedisState(redis.url, ttl=30).running() as state:
            await state.create(record())
            redis.kill()
            assert not await state.ping()
            with pytest.raises(StateUnavailableError, match="session store .Redis. unavailable during session load"):
                await state.load("s1")
            await redis.start()  # append-only file: what was written is back
            await eventually(state.ping)
            loaded = await state.load("s1")  # a pool connection broken by the restart is replaced on first use
            assert loaded is not None and loaded.client_params is not None
            # The bus reconnected too: a held stream receives again.
            got: list[Any] = []

            async def deliver(message: dict[str, Any]) -> None:
                got.append(message)

            async with state.hold("s1", deliver):
                await eventually(lambda: _published(state, got))


@pytest.mark.process
async def test_a_malformed_last_event_id_is_no_position_and_a_dead_store_still_delivers() -> None:
    async with running_redis() as redis, RedisState(redis.url, ttl=30, prefix="t:").running() as state:
        events = state.events("abc")
        first = await events.store_event(GET_STREAM, message_of("notifications/tools/list_changed", None))
        await events.store_event(GET_STREAM, message_of("notifications/resources/list_changed", None))
        replayed: list[str] = []

        async def send(event: EventMessage) -> None:
            replayed.append(event.message.method)  # type: ignore[union-attr]

        for malformed in ("-", "+", "$", "*", "x" * 100_000, "1-2-3", "(0-0", "1-" + "9" * 40):
            assert await events.replay_events_after(malformed, send) == GET_STREAM  # live, nothing replayed
        assert replayed == []
        assert await events.replay_events_after(first, send) == GET_STREAM
        assert replayed == ["notifications/resources/list_changed"]

        redis.kill()
        # The SDK's router sends what this returns with the message: no id, and no exception that would kill it.
        assert await events.store_event(GET_STREAM, message_of("notifications/tools/list_changed", None)) == ""
        assert await events.replay_events_after(first, send) == GET_STREAM
        with pytest.raises(RedisError):  # a priming event has nothing to deliver: it fails
            await events.store_event(GET_STREAM, None)


@pytest.mark.process
async def test_a_call_stream_resumed_at_another_replica_is_held_while_its_replica_lives_then_answers_an_error() -> None:
    """Before: a POST stream's event ids were local, and a resumption with one at another replica found nothing (the
    SDK client resumed again, for ever). Now the id names the replica and the request; the replica that takes the
    resumption waits while the call's replica is alive and answers the request's JSON-RPC error once it is not."""
    async with running_redis() as redis, \
            RedisState(redis.url, ttl=30, prefix="t:", heartbeat=0.05, liveness_ttl=0.2).running() as there, \
            RedisState(redis.url, ttl=30, prefix="t:", heartbeat=0.05, liveness_ttl=0.2).running() as here:
        await eventually(lambda: there.client.exists(there.liveness.key(there.liveness.replica)))  # it says so
        got: list[Any] = []

        async def send(event: EventMessage) -> None:
            got.append(event.message)

        event_id = await there.events("abc").store_event("7", None)  # the priming event of request 7's stream
        assert parse_call_event_id(event_id) == CallEvent(there.liveness.replica, 7)
        assert parse_call_event_id(await there.events("abc").store_event("x.y", None)) == CallEvent(
            there.liveness.replica, "x.y")
        assert (await there.events("abc").store_event("x" * 1000, None)).startswith("local-")  # too long to carry
        # On the replica that serves the call: nothing to replay (the live stream is its own).
        assert await there.events("abc").replay_events_after(event_id, send) is None and got == []
        for forged in ("c.zz.1.Nw", "c.0123456789abcdef.1.!!", "c." + "0" * 16 + ".1." + "A" * 400):
            assert parse_call_event_id(forged) is None

        resumed: list[str | None] = []

        async def resume() -> None:
            resumed.append(await here.events("abc").replay_events_after(event_id, send))

        async def exists_calls() -> int:
            stats = await here.client.info("commandstats")
            return int(stats.get("cmdstat_exists", {}).get("calls", 0))

        async with anyio.create_task_group() as tg:
            tg.start_soon(resume)
            before = await exists_calls()
            await eventually(lambda: _more(exists_calls, before + 5))  # asked five times: still alive, still held
            assert got == [] and resumed == []
            there.liveness.every = 3600.0  # as a replica killed with -9: no more beats; its key lapses by itself
            await eventually(lambda: resumed == [None])
        assert len(got) == 1 and isinstance(got[0], types.JSONRPCError) and got[0].id == 7, got
        assert got[0].error.message == WENT_AWAY

        # A replica already gone when the stream is resumed: answered at once.
        await here.events("abc").replay_events_after(call_event_id("0123456789abcdef", 1, "req-9") or "", send)
        assert isinstance(got[1], types.JSONRPCError) and got[1].id == "req-9"


async def _more(count: Callable[[], Awaitable[int]], than: int) -> bool:
    return await count() >= than


async def _published(state: RedisState, got: list[Any]) -> bool:
    if not got:
        await state.publish("s1", {"method": "ping", "params": None})
        await anyio.sleep(0.05)
    return bool(got)




def test_the_uri_memory_a_record_keeps_restores_on_another_replica() -> None:
    from lazytools.sources.gateway.offerings import NamedUris

    here, there = NamedUris(), NamedUris()
    here.add("s1", ["docs://a", "docs://b"])
    here.add("s2", ["docs://other"])
    there.restore("s1", here.of("s1"))
    assert there.of("s1") == ["docs://a", "docs://b"] and there.named("s1", "docs://b")
    assert not there.named("s2", "docs://other")  # another session's memory does not follow
    there.restore("s1", ["docs://c"])
    assert there.of("s1") == ["docs://c"] and not there.named("s1", "docs://a")


@pytest.mark.process
async def test_a_wrong_password_or_no_redis_is_one_clear_line_without_the_password(
        caplog: pytest.LogCaptureFixture) -> None:
    async with running_redis() as redis:
        async with RedisState(redis.url, ttl=30).running() as admin:
            await admin.client.config_set("requirepass", "right-one")
        port = redis.url.rsplit(":", 1)[1].split("/")[0]
        for url in (f"redis://:S3cretPW@127.0.0.1:{port}/0", f"redis://:S3cretPW@127.0.0.1:{free_port()}/0"):
            caplog.clear()
            settings = make_settings(transport="http", state_url=url, state_timeout=1.0)
            with caplog.at_level(logging.DEBUG, logger="lazytools.state"):
                async with open_state(settings) as state:
                    assert not await state.ping()
                    # The pub/sub listener retries meanwhile: three failures, warned about once.
                    await eventually(lambda: sum("pub/sub" in r.getMessage() for r in caplog.records) >= 3)
            lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
            startup = [line for line in lines if "does not answer yet" in line]
            assert len(startup) == 1, lines
            assert ("invalid username-password pair" in startup[0]) is (port in url), startup
            assert len(lines) <= 2 and not any("S3cretPW" in line for line in lines), lines


@pytest.mark.process
async def test_a_replica_with_other_settings_is_warned_about_loudly(caplog: pytest.LogCaptureFixture) -> None:
    async with running_redis() as redis:
        settings = make_settings(transport="http", state_url=redis.url)
        first, same = build_server(small_catalog(), settings), build_server(small_catalog(), settings)
        other = build_server(small_catalog(), make_settings(transport="http", state_url=redis.url, max_enabled=2))
        assert replica_fingerprint(first) == replica_fingerprint(same) != replica_fingerprint(other)
        async with open_state(settings) as state:
            with caplog.at_level(logging.WARNING, logger="lazytools"):
                await check_replicas_agree(state, first)
                await check_replicas_agree(state, same)
                assert not [r for r in caplog.records if "REPLICAS DISAGREE" in r.getMessage()]
                await check_replicas_agree(state, other)
                warned = [r.getMessage() for r in caplog.records if "REPLICAS DISAGREE" in r.getMessage()]
                assert len(warned) == 1 and replica_fingerprint(first) in warned[0], warned
                # The replicas started before it see it too (each records its own again and compares), whichever
                # replica started last.
                await check_replicas_agree(state, first)
                warned = [r.getMessage() for r in caplog.records if "REPLICAS DISAGREE" in r.getMessage()]
                assert len(warned) == 2 and replica_fingerprint(other) in warned[1], warned


@pytest.mark.process
async def test_twenty_concurrent_writes_of_one_session_on_two_replicas_are_all_kept() -> None:
    names = [f"tool_{i}" for i in range(20)]
    async with running_redis() as redis, RedisState(redis.url, ttl=60).running() as a, \
            RedisState(redis.url, ttl=60).running() as b:
        await a.create(record("s1"))
        loaded = [await (a, b)[i % 2].load("s1") for i in range(len(names))]  # all made from the same revision
        written: list[SessionRecord | None] = []

        async def write(i: int) -> None:
            base = loaded[i]
            assert base is not None
            written.append(await (a, b)[i % 2].update(base, enabling(names[i], limit=len(names))))

        async with anyio.create_task_group() as tg:
            for i in range(len(names)):
                tg.start_soon(write, i)
        assert len(written) == len(names) and all(each is not None for each in written)
        final = await b.peek("s1")
        assert final is not None and sorted(final.enabled) == sorted(names) and final.rev == len(names)
