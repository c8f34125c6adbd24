"""Per-principal limits, counted in this process's memory or in Redis (shared by every replica that uses the same
Redis): calls per minute in fixed one-minute windows, and sessions held at once."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from uuid import uuid4

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = [
    "WINDOW", "Alive", "MemoryRateLimiter", "MemorySessionCounter", "RateLimiter", "RedisRateLimiter",
    "RedisSessionCounter", "SessionCounter", "Verdict",
]

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


Alive = Callable[[str], Awaitable[bool]]
"""Whether a session (by id) is still open."""

_PENDING = "pending:"
_PENDING_FOR = 120.0
"""Seconds a reservation counts without its session being confirmed (an initialize that never finished)."""


class SessionCounter(Protocol):
    """Live sessions per principal, bounded: a session is reserved before it opens, confirmed once it has an id."""

    async def reserve(self, key: str, limit: int, alive: Alive) -> str | None:
        """A reservation for one more session of `key`; None when `key` already holds `limit` live ones."""
        ...

    async def confirm(self, key: str, reservation: str, session_id: str | None) -> None:
        """The reservation becomes `session_id` (None: the session did not open, the reservation goes)."""
        ...


class MemorySessionCounter:
    """Counts in this process (one replica)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held: dict[str, dict[str, float]] = {}

    async def reserve(self, key: str, limit: int, alive: Alive) -> str | None:
        held = self._held.setdefault(key, {})
        now = self._clock()
        for member, since in list(held.items()):
            gone = now - since > _PENDING_FOR if member.startswith(_PENDING) else not await alive(member)
            if gone:
                held.pop(member, None)
        # No await between the count and the reservation: concurrent initializes cannot all pass on one count.
        if len(held) >= limit:
            return None
        reservation = _PENDING + uuid4().hex
        held[reservation] = now
        return reservation

    async def confirm(self, key: str, reservation: str, session_id: str | None) -> None:
        held = self._held.get(key)
        if held is None:
            return
        held.pop(reservation, None)
        if session_id is not None:
            held[session_id] = self._clock()
        if not held:
            del self._held[key]


class RedisSessionCounter:
    """Counts in Redis, one sorted set per principal (session ids and reservations, scored by when they were
    added), so a principal's sessions are bounded across every replica: a reservation is added and the set counted
    in one transaction, and refused (taken back) when the count is over the limit."""

    def __init__(self, redis: Redis, *, prefix: str = "lazytools:", ttl: float = 3600.0) -> None:
        self._redis = redis
        self._prefix = prefix + "owned:"
        self._ttl = max(int(ttl), 60)

    def _name(self, key: str) -> str:
        # Hashed: a subject is the token's to choose, and may be long.
        return self._prefix + hashlib.sha256(key.encode()).hexdigest()[:32]

    async def reserve(self, key: str, limit: int, alive: Alive) -> str | None:
        name = self._name(key)
        now = time.time()
        dead: list[str] = []
        members: list[tuple[bytes | str, float]] = await self._redis.zrange(  # type: ignore[assignment]
            name, 0, -1, withscores=True)
        for raw, since in members:
            member = raw.decode() if isinstance(raw, bytes) else str(raw)
            if (now - float(since) > _PENDING_FOR) if member.startswith(_PENDING) else not await alive(member):
                dead.append(member)
        if dead:
            await self._redis.zrem(name, *dead)
        reservation = _PENDING + uuid4().hex
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.zadd(name, {reservation: now})
            pipe.zcard(name)
            pipe.expire(name, self._ttl)
            _, count, _ = await pipe.execute()
        if int(count) > limit:
            await self._redis.zrem(name, reservation)
            return None
        return reservation

    async def confirm(self, key: str, reservation: str, session_id: str | None) -> None:
        name = self._name(key)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.zrem(name, reservation)
            if session_id is not None:
                pipe.zadd(name, {session_id: time.time()})
                pipe.expire(name, self._ttl)
            await pipe.execute()
