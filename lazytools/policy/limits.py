"""Per-principal rate limits: calls per minute in fixed one-minute windows, counted in this process's memory or
in Redis (shared by every replica that uses the same Redis)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["WINDOW", "MemoryRateLimiter", "RateLimiter", "RedisRateLimiter", "Verdict"]

WINDOW = 60
"""Seconds of one window: limits are calls per minute."""


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    count: int
    """Calls counted in the window so far, this one included."""
    retry_after: float
    """Seconds until the window ends (when a refused principal may call again)."""


class RateLimiter(Protocol):
    async def hit(self, key: str, limit: int) -> Verdict:
        """Count one call of `key` and say whether it stays within `limit` per minute."""
        ...


class MemoryRateLimiter:
    """Counts in this process: right for one process, `limit` per replica behind a load balancer."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._window = -1
        self._counts: dict[str, int] = {}

    async def hit(self, key: str, limit: int) -> Verdict:
        now = self._clock()
        window = int(now // WINDOW)
        if window != self._window:  # a new minute: last minute's counts (one per principal seen) go
            self._window, self._counts = window, {}
        count = self._counts.get(key, 0) + 1
        self._counts[key] = count
        return Verdict(count <= limit, count, (window + 1) * WINDOW - now)


class RedisRateLimiter:
    """Counts in Redis with INCR and EXPIRE on one key per principal and minute, so every replica shares them."""

    def __init__(self, redis: Redis, *, prefix: str = "lazytools:") -> None:
        self._redis = redis
        self._prefix = prefix + "rate:"

    async def hit(self, key: str, limit: int) -> Verdict:
        now = time.time()
        window = int(now // WINDOW)
        name = f"{self._prefix}{window}:{key}"
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.incr(name)
            pipe.expire(name, WINDOW * 2)
            count, _ = await pipe.execute()
        return Verdict(int(count) <= limit, int(count), (window + 1) * WINDOW - now)
