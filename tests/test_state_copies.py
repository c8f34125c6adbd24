"""Local copies of session records (lazytools/state/local_copies.py, used by state/redis.py): bounded, never older than
what was heard, and on a real redis-server (tests/cluster.py) never used while an invalidation could be missed."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
from redis.asyncio import Redis as AsyncRedis

from lazytools.state import SessionRecord
from lazytools.state.local_copies import LocalCopies
from lazytools.state.redis import RedisState

from .cluster import running_redis
from .helpers import eventually
from .test_state import enabling, record


def test_copies_are_bounded_in_entries_and_bytes_the_least_recently_used_going_first() -> None:
    copies = LocalCopies(max_entries=3, max_bytes=100)
    copies.trust()
    for key in "abc":
        copies.end(key, copies.begin(key), 1, key.encode() * 10)
    assert copies.get("a") == b"a" * 10  # used: "b" is now the least recent
    copies.end("d", copies.begin("d"), 1, b"d" * 10)
    assert [key for key in "abcd" if copies.get(key) is not None] == ["a", "c", "d"]
    copies.end("e", copies.begin("e"), 1, b"e" * 85)  # 115 bytes with the others: the least recent go first
    assert [key for key in "acde" if copies.get(key) is not None] == ["d", "e"] and copies.size == 95
    copies.end("f", copies.begin("f"), 1, b"f" * 101)  # larger than the bound alone: not kept
    assert copies.get("f") is None and len(copies) == 2


def test_a_read_in_flight_keeps_nothing_older_than_what_was_heard_meanwhile() -> None:
    copies = LocalCopies(max_entries=10, max_bytes=1000)
    token = copies.begin("k")
    copies.end("k", token, 1, b"1|one")
    assert copies.get("k") is None  # not trusted yet: nothing kept
    copies.trust()
    token = copies.begin("k")
    copies.heard("k", 5)  # a write of revision 5 was published while revision 4 was on its way here
    copies.end("k", token, 4, b"4|old")
    assert copies.get("k") is None
    copies.end("k", copies.begin("k"), 5, b"5|new")
    assert copies.get("k") == b"5|new"
    copies.heard("k", 5)  # its own revision (this replica's write, heard back): kept
    assert copies.get("k") == b"5|new"
    token = copies.begin("k")
    copies.end("k", token, 4, b"4|old")  # a read older than the copy kept meanwhile does not replace it
    assert copies.get("k") == b"5|new"
    copies.heard("k", 6)
    assert copies.get("k") is None
    token = copies.begin("k")
    copies.heard("k", None)  # deleted
    copies.end("k", token, 7, b"7|x")
    assert copies.get("k") is None
    token = copies.begin("k")
    copies.trust()  # resubscribed while it was in flight: it may have missed something
    copies.end("k", token, 8, b"8|y")
    assert copies.get("k") is None
    copies.end("k", copies.begin("k"), 8, b"8|y")
    copies.distrust()
    assert copies.get("k") is None and len(copies) == 0


async def _gets(admin: AsyncRedis) -> int:
    stats = await admin.info("commandstats")
    return int(stats.get("cmdstat_get", {}).get("calls", 0))


@asynccontextmanager
async def _replicas(url: str, *, ttl: float = 60, local_copy: bool = True,
                    clock: Callable[[], float] = time.monotonic) -> AsyncIterator[tuple[RedisState, RedisState]]:
    """Two replicas' stores on one Redis, both subscribed to its channels."""
    async with RedisState(url, ttl=ttl, local_copy=local_copy, clock=clock).running() as a, \
            RedisState(url, ttl=ttl, local_copy=local_copy, clock=clock).running() as b, \
            AsyncRedis.from_url(url) as admin:

        async def subscribed() -> bool:
            return dict(await admin.pubsub_numsub("lazytools:ended")) == {b"lazytools:ended": 2}

        await eventually(subscribed)
        if a.copies is not None and b.copies is not None:
            await eventually(lambda: a.copies.trusted and b.copies.trusted)  # type: ignore[union-attr]
        yield a, b


async def _load(state: RedisState, key: str) -> SessionRecord:
    loaded = await state.load(key)
    assert loaded is not None
    return loaded


@pytest.mark.process
async def test_an_unchanged_session_costs_no_command_and_a_write_on_one_replica_is_seen_by_the_next_read_on_another(
        ) -> None:
    async with running_redis() as redis, AsyncRedis.from_url(redis.url) as admin, \
            _replicas(redis.url) as (a, b):
        await a.create(record("s"))
        await _load(b, "s")  # the first read: from Redis, and its TTL refreshed
        before = await _gets(admin)
        for _ in range(20):
            assert (await _load(b, "s")).rev == 0
        assert await _gets(admin) == before  # served from the local copy
        tools = ["reverse_text", "hash_text", "slugify_text"]
        for i in range(60):
            written = await a.update(await _load(a, "s"), enabling(tools[i % 3], limit=2))
            assert written is not None
            seen = await _load(b, "s")
            assert (seen.rev, seen.enabled) == (written.rev, written.enabled), i
        assert await a.delete("s")
        assert await b.load("s") is None


@pytest.mark.process
async def test_a_record_another_writer_changed_in_redis_is_picked_up() -> None:
    now = [0.0]
    async with running_redis() as redis, AsyncRedis.from_url(redis.url) as admin, \
            _replicas(redis.url, ttl=20, clock=lambda: now[0]) as (a, _):
        await a.create(record("s"))
        await _load(a, "s")
        changed = record("s")
        changed.enabled, changed.rev = ["reverse_text"], 1
        # A writer that publishes, as every lazytools replica does: seen once the message is in this replica's
        # socket. Redis answers the publisher and writes to the subscribers in the same turn, so on a loaded machine
        # the publisher can hear back a moment before the message arrives here.
        await admin.set("lazytools:session:s", f"1|{changed.to_json()}")
        await admin.publish("lazytools:changed", "s|1")

        async def seen() -> bool:
            return (await _load(a, "s")).enabled == ["reverse_text"]

        await eventually(seen)
        # Messages no replica sends: the copy goes (as for a deletion), the listener goes on.
        ended: list[str] = []

        async def on_end(key: str) -> None:
            ended.append(key)

        a.on_end(on_end)
        for junk in (b"s|\xc2\xb2", b"\xff|1", b"s", b"s|99999999999999999999999"):
            assert await admin.publish("lazytools:changed", junk) == 2
        await admin.publish("lazytools:ended", "after the junk")  # heard once everything before it was
        await eventually(lambda: ended == ["after the junk"])
        assert a.copies is not None and a.copies.trusted and len(a.copies) == 0
        assert (await _load(a, "s")).enabled == ["reverse_text"]
        # One that does not (a tool of the operator's, another version): seen once the key is due to be confirmed
        # in Redis, a tenth of the TTL after the last time; until then the copy is served.
        changed.enabled, changed.rev = ["hash_text"], 2
        await admin.set("lazytools:session:s", f"2|{changed.to_json()}")
        assert (await _load(a, "s")).enabled == ["reverse_text"]
        now[0] += 2.0
        assert (await _load(a, "s")).enabled == ["hash_text"]


@pytest.mark.process
async def test_a_session_expired_or_evicted_in_redis_is_not_served_past_the_refresh_rhythm() -> None:
    now = [0.0]
    async with running_redis() as redis, AsyncRedis.from_url(redis.url) as admin, \
            _replicas(redis.url, ttl=20, clock=lambda: now[0]) as (a, _):
        await a.create(record("s"))
        assert 0 < await admin.ttl("lazytools:session:s") <= 20
        await admin.delete("lazytools:session:s")  # evicted (maxmemory) or expired: Redis tells nobody
        now[0] = 1.9
        assert await a.load("s") is not None  # within a tenth of the TTL of the create: the copy
        now[0] = 2.0
        assert await a.load("s") is None
        assert await a.load("s") is None


@pytest.mark.process
async def test_while_the_pub_sub_connection_is_down_no_copy_is_used_and_resubscribing_drops_them() -> None:
    async with running_redis() as redis, AsyncRedis.from_url(redis.url) as admin, \
            _replicas(redis.url) as (a, _):
        assert a.copies is not None
        await a.create(record("s"))
        assert (await _load(a, "s")).enabled == []
        old = {client["id"] for client in await admin.client_list(_type="pubsub")}
        await admin.client_kill_filter(_type="pubsub")
        # An invalidation missed while the connection is down: a write nobody hears.
        changed = record("s")
        changed.enabled, changed.rev = ["reverse_text"], 1
        await admin.set("lazytools:session:s", f"1|{changed.to_json()}")

        async def resubscribed() -> bool:
            assert (await _load(a, "s")).enabled == ["reverse_text"]  # every read until then is fresh
            new = {client["id"] for client in await admin.client_list(_type="pubsub")} - old
            return len(new) == 2 and a.copies is not None and a.copies.trusted

        await eventually(resubscribed)
        assert (await _load(a, "s")).enabled == ["reverse_text"]
        before = await _gets(admin)
        assert (await _load(a, "s")).enabled == ["reverse_text"]
        assert await _gets(admin) == before  # trusted again, on the new connection


@pytest.mark.process
async def test_with_the_local_copy_off_every_read_goes_to_redis() -> None:
    async with running_redis() as redis, AsyncRedis.from_url(redis.url) as admin, \
            _replicas(redis.url, local_copy=False) as (a, b):
        assert a.copies is None
        assert dict(await admin.pubsub_numsub("lazytools:changed")) == {b"lazytools:changed": 0}
        await a.create(record("s"))
        await _load(a, "s")
        before = await _gets(admin)
        for _ in range(10):
            await _load(a, "s")
        assert await _gets(admin) == before + 10
        written = await b.update(await _load(b, "s"), enabling("reverse_text"))
        assert written is not None and (await _load(a, "s")).enabled == ["reverse_text"]


@pytest.mark.process
async def test_a_pub_sub_connection_that_goes_quiet_stops_the_copies_until_redis_answers_on_it_again() -> None:
    now = [0.0]
    async with running_redis() as redis, AsyncRedis.from_url(redis.url) as admin, \
            _replicas(redis.url, ttl=60, clock=lambda: now[0]) as (a, _):
        await a.create(record("s"))
        before = await _gets(admin)
        await _load(a, "s")
        assert await _gets(admin) == before  # the copy
        now[0] += 3.5  # nothing heard on the connection for longer than 3 s (the listener pings after 1 s of quiet)
        await _load(a, "s")  # decided before the listener can run again: from Redis
        assert await _gets(admin) == before + 1

        async def copied_again() -> bool:  # once a pong was heard at the new time
            gets = await _gets(admin)
            await _load(a, "s")
            return await _gets(admin) == gets

        await eventually(copied_again)


@pytest.mark.process
async def test_a_write_that_finds_the_session_gone_drops_every_replicas_copy() -> None:
    # Redis emptied without a restart (FLUSHALL, a failover to an empty replica): no replica hears of it, and each
    # serves its copy until the next confirmation. A write finds the key gone: from then on no replica serves it.
    now = [0.0]
    async with running_redis() as redis, AsyncRedis.from_url(redis.url) as admin, \
            _replicas(redis.url, ttl=60, clock=lambda: now[0]) as (a, b):
        await a.create(record("s"))
        await _load(a, "s")
        await _load(b, "s")
        await admin.flushall()
        assert await b.load("s") is not None  # the copy, within a tenth of the TTL
        assert await a.update(await _load(a, "s"), enabling("reverse_text")) is None
        assert await a.load("s") is None
        await eventually(lambda: b.copies is not None and b.copies.get("s") is None)
        assert await b.load("s") is None
