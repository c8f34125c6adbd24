"""Resource subscriptions of sessions shared by replicas: three `lazytools --transport http` processes on a real
redis-server, each with its own connection to one real SDK upstream over streamable HTTP whose resources change
(tests/upstreams/watched.py). A session subscribes through one replica and hears `resources/updated` on the GET
stream another holds; it keeps hearing after the first is killed; unsubscribing anywhere stops it everywhere; no
other session ever hears of it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from redis.asyncio import Redis as AsyncRedis

from lazytools.state.sync import MAX_SUBSCRIPTION_CHARS, MAX_SUBSCRIPTION_URI, MAX_SUBSCRIPTIONS

from .cluster import Cluster, cluster
from .helpers import eventually, running_http
from .test_replicas import session
from .upstreams.watched import Watched

pytestmark = pytest.mark.process  # redis-server, haproxy and lazytools replicas


class Updates:
    """The `resources/updated` notifications one client heard, by URI."""

    def __init__(self) -> None:
        self.heard: dict[str, int] = {}

    def of(self, uri: str) -> int:
        return self.heard.get(uri, 0)

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            uri = str(message.params.uri)
            self.heard[uri] = self.heard.get(uri, 0) + 1


def routed(route: dict[str, int]) -> Callable[[str], int]:
    """The GET stream to `route["get"]`'s port, every other request to `route["post"]`'s (read at each request)."""
    return lambda method: route["get" if method == "GET" else "post"]


@asynccontextmanager
async def watched_cluster(tmp_path: Path, size: int = 3) -> AsyncIterator[tuple[Watched, Cluster]]:
    watched = Watched()
    async with running_http(watched.server.streamable_http_app()) as base:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"watch": {"url": f"{base}/mcp"}}}))
        async with cluster(size, extra=("--config", str(config))) as c:
            yield watched, c


async def subscribe(client: Client, uri: str) -> None:
    with pytest.warns(MCPDeprecationWarning):  # the SDK marks subscriptions deprecated as of 2026-07-28
        await client.session.subscribe_resource(uri)


async def unsubscribe(client: Client, uri: str) -> None:
    with pytest.warns(MCPDeprecationWarning):
        await client.session.unsubscribe_resource(uri)


async def lists(client: Client, uri: str) -> bool:
    return uri in [str(r.uri) for r in (await client.list_resources()).resources]


async def test_updates_follow_a_session_across_replicas_and_stop_where_it_unsubscribes(tmp_path: Path) -> None:
    async with watched_cluster(tmp_path) as (watched, c), AsyncExitStack() as stack:
        a, b = watched.uris
        first, second, third = c.replicas
        # Session 1 listens on the second replica and sends its requests to the first; session 2 listens on the third.
        route1 = {"get": second.port, "post": first.port}
        route2 = {"get": third.port, "post": first.port}
        heard1, heard2, heard3 = Updates(), Updates(), Updates()
        one = await stack.enter_async_context(session(c.url, notifications=heard1, pick=routed(route1)))
        two = await stack.enter_async_context(session(c.url, notifications=heard2, pick=routed(route2)))
        await stack.enter_async_context(session(c.url, notifications=heard3))  # a third session, which never subscribes
        await eventually(lambda: lists(one, a), timeout=60)  # every replica's upstream connection is up

        # Subscribed through the first replica; the replica holding the GET stream follows from the record.
        await subscribe(one, a)
        await eventually(lambda: watched.subscribers(a) == 2)  # the first's connection and the second's
        assert await watched.change(a) == 2
        await eventually(lambda: heard1.of(a) == 2)  # once per replica subscribed for it
        await subscribe(two, a)  # the first holds `a` already: no second upstream subscription there
        await subscribe(two, b)
        await eventually(lambda: watched.subscribers(a) == 3 and watched.subscribers(b) == 2)  # the third follows
        await watched.change(a)
        await eventually(lambda: heard1.of(a) == 4 and heard2.of(a) == 2)

        # Session 2 leaves `a` through the third replica: the third leaves it upstream at once; the first, which
        # still holds it for session 1 too, stops telling session 2 at the next update.
        route2["post"] = third.port
        await unsubscribe(two, a)
        await eventually(lambda: watched.subscribers(a) == 2)
        await watched.change(a)
        await watched.change(b)  # after `a` on each connection: once both `b`s are heard, `a` was decided
        await eventually(lambda: heard2.of(b) == 2 and heard1.of(a) == 6)
        assert heard2.of(a) == 2

        first.kill()  # -9: its subscriptions go with it
        route1["post"] = second.port
        assert await lists(one, a)  # the session goes on at the second replica
        await watched.change(a)
        await eventually(lambda: heard1.of(a) == 7)  # from the second only

        # Session 1 leaves `a` through the third replica: the second, holding its stream and its subscription, is
        # told over Redis and leaves it upstream; only the dead replica's connection is left at the upstream.
        route1["post"] = third.port
        await unsubscribe(one, a)
        await eventually(lambda: watched.subscribers(a) == 1)
        await watched.change(a)
        await watched.change(b)
        await eventually(lambda: heard2.of(b) == 3)  # session 2's `b`, from the third only now
        assert heard1.of(a) == 7
        assert heard2.of(a) == 2
        assert heard3.heard == {}  # the session that never subscribed heard nothing


async def test_a_session_that_only_listens_hears_updates_after_its_replica_died_and_delete_leaves(
        tmp_path: Path) -> None:
    async with watched_cluster(tmp_path) as (watched, c):
        a, _ = watched.uris
        first, second, third = c.replicas
        route = {"get": third.port, "post": first.port}
        heard = Updates()
        async with session(c.url, notifications=heard, pick=routed(route)) as client:
            await eventually(lambda: lists(client, a), timeout=60)
            await subscribe(client, a)
            await eventually(lambda: watched.subscribers(a) == 2)  # the first, and the third, holding the stream
            first.kill()
            await watched.change(a)  # the client sends nothing after the kill: the stream's replica tells it
            await eventually(lambda: heard.of(a) == 1)
            route["post"] = second.port  # where the client's DELETE goes on exit
        # DELETE: every replica hears the session ended; the third leaves at its upstream connection.
        await eventually(lambda: watched.subscribers(a) == 1)  # the dead replica's alone


async def _recorded_subscriptions(url: str) -> list[str]:
    async with AsyncRedis.from_url(url) as admin:
        keys = [key async for key in admin.scan_iter("lazytools:session:*")]
        assert len(keys) == 1
        value = await admin.get(keys[0])
    assert isinstance(value, bytes)
    subscriptions: list[str] = json.loads(value.split(b"|", 1)[1])["subscriptions"]
    return subscriptions


async def test_subscriptions_past_the_bounds_are_refused_and_keep_the_record_small(tmp_path: Path) -> None:
    # A session once subscribed 64 URIs of 50 KB each: a 3.2 MB record read by each of its requests, and under a
    # Redis `maxmemory` policy other sessions' records were evicted for it; the 65th silently dropped the first.
    async with watched_cluster(tmp_path, size=2) as (watched, c):
        first, second = c.replicas
        heard = Updates()
        async with session(c.url, notifications=heard, pick=routed({"get": second.port, "post": first.port})) as client:
            await eventually(lambda: lists(client, watched.uris[0]), timeout=60)
            uris = [f"watch://watch/t/{i}" for i in range(MAX_SUBSCRIPTIONS)]
            for uri in uris:
                await subscribe(client, uri)
            with pytest.raises(MCPError, match=f"holds {MAX_SUBSCRIPTIONS} subscriptions already"):
                await subscribe(client, "watch://watch/t/one-more")
            assert await _recorded_subscriptions(c.redis.url) == uris  # none evicted
            await subscribe(client, uris[0])  # subscribed already: fine
            for uri in uris[:4]:
                await unsubscribe(client, uri)
            with pytest.raises(MCPError, match=f"longer than {MAX_SUBSCRIPTION_URI} characters"):
                await subscribe(client, "watch://watch/t/" + "x" * MAX_SUBSCRIPTION_URI)
            long = "watch://watch/t/" + "y" * (MAX_SUBSCRIPTION_URI - 200)  # two pass the total together
            await subscribe(client, long)
            with pytest.raises(MCPError, match=f"exceed {MAX_SUBSCRIPTION_CHARS} characters together"):
                await subscribe(client, long.replace("y", "z"))
            recorded = await _recorded_subscriptions(c.redis.url)
            assert recorded == [*uris[4:], long] and sum(map(len, recorded)) <= MAX_SUBSCRIPTION_CHARS
            # The refused ones were never subscribed upstream; the accepted one was (by both replicas).
            await eventually(lambda: watched.subscribers(long) == 2)
            assert watched.subscribers(long.replace("y", "z")) == 0
