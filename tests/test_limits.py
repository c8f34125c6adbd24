"""Rate limits (policy/limits.py): counted per principal and minute, in memory or in a real redis-server that two
limiters (two replicas) share."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator

import anyio
import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from lazytools.policy.limits import WINDOW, MemoryRateLimiter, RedisRateLimiter

from .helpers import _free_port


async def test_memory_counts_per_principal_and_starts_again_each_minute() -> None:
    now = [WINDOW * 1000 + 10.0]
    limiter = MemoryRateLimiter(clock=lambda: now[0])
    assert [(await limiter.hit("a", 2)).allowed for _ in range(3)] == [True, True, False]
    assert (await limiter.hit("b", 2)).allowed
    refused = await limiter.hit("a", 2)
    assert not refused.allowed and refused.count == 4 and refused.retry_after == pytest.approx(WINDOW - 10)
    now[0] += WINDOW
    assert (await limiter.hit("a", 2)).allowed


@pytest.fixture
async def redis_url() -> AsyncIterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is missing: install the Debian package redis-server")
    port = _free_port()
    process = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        with anyio.fail_after(20):
            while True:
                client = Redis.from_url(url)
                try:
                    if await client.ping():
                        break
                except RedisConnectionError:
                    await anyio.sleep(0.05)
                finally:
                    await client.aclose()
        yield url
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.process
async def test_replicas_share_their_counts_through_redis(redis_url: str) -> None:
    one, two = Redis.from_url(redis_url), Redis.from_url(redis_url)
    try:
        first, second = RedisRateLimiter(one), RedisRateLimiter(two)
        verdicts = [await (first if i % 2 else second).hit("oauth:iss#alice", 3) for i in range(4)]
        assert [v.allowed for v in verdicts] == [True, True, True, False]
        assert [v.count for v in verdicts] == [1, 2, 3, 4]
        assert (await first.hit("oauth:iss#bob", 3)).allowed
        keys = [key async for key in one.scan_iter("lazytools:rate:*")]
        assert len(keys) == 2
        for key in keys:
            assert 0 < await one.ttl(key) <= 2 * WINDOW
    finally:
        await one.aclose()
        await two.aclose()


async def test_calls_are_served_uncounted_when_redis_does_not_answer() -> None:
    from mcp import Client

    from lazytools.app import build_server

    from .conftest import make_settings, small_catalog

    redis = Redis.from_url(f"redis://127.0.0.1:{_free_port()}/0", socket_connect_timeout=0.5, socket_timeout=0.5)
    try:
        server = build_server(small_catalog(), make_settings(rate_limit=1), limiter=RedisRateLimiter(redis))
        async with Client(server, mode="legacy") as client:
            results = [await client.call_tool("invoke_tool", {"tool_name": "word_count", "arguments": {"text": "a"}})
                       for _ in range(2)]
        assert [r.is_error for r in results] == [False, False]  # a limit of 1 would have refused the second
    finally:
        await redis.aclose()
