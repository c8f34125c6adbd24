"""The session store on Redis (redis-py's asyncio client): records (redis_records.py), the GET-stream bus and
ended sessions (redis_bus.py), events, readiness, which replicas are alive (liveness.py); key names in
redis_keys.py.

`RedisState` owns one connection pool; `client` is public so other shared state (search usage, rate limits) can use
the same Redis without a second pool. Every operation is bounded by `timeout` and turns Redis trouble into
`StateUnavailableError`; nothing here retries for long, so a request never hangs on a dead Redis.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from .bus import Deliver
from .event_ids import new_replica_id
from .liveness import Liveness
from .local_copies import LocalCopies
from .records import SessionRecord
from .redis_bus import RedisBus
from .redis_events import RedisSessionEvents
from .redis_keys import RedisKeys, reason, redis_trouble
from .redis_records import RedisRecords
from .store import Update

__all__ = ["RedisState", "redis_trouble"]

_MAX_EVENTS = 1000
"""GET-stream events kept per session for resumption (the oldest go first)."""

_COPIES_MAX = 10_000
"""Session records a replica keeps a local copy of (the least recently used go first)."""

_COPIES_MAX_BYTES = 32 * 1024 * 1024
"""Bytes of records a replica keeps local copies of (a record is about 0.5 KiB, a few KiB at most)."""


class RedisState:
    """Session records, the GET-stream bus and per-session event stores on one Redis."""

    def __init__(self, url: str, *, ttl: float, timeout: float = 2.0, prefix: str = "lazytools:",
                 local_copy: bool = True, clock: Callable[[], float] = time.monotonic,
                 heartbeat: float = 1.0, liveness_ttl: float = 5.0) -> None:
        self.ttl = max(1, int(ttl))
        self.timeout = timeout
        self.prefix = prefix
        # A pooled connection Redis closed (a restart, an idle timeout) fails its next command: that command is
        # sent again once, on a new connection. Timeouts are not retried (a slow Redis stays bounded by `timeout`).
        # The asyncio client needs the asyncio `Retry`: given the synchronous one, it never retries anything.
        self.client: Redis = Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 1),
            retry_on_error=[RedisConnectionError], health_check_interval=0)
        """The connection pool, for other shared state to reuse (keys under their own prefix)."""
        self.copies: LocalCopies | None = (
            LocalCopies(max_entries=_COPIES_MAX, max_bytes=_COPIES_MAX_BYTES) if local_copy else None)
        """Local copies of records, trusted only while `changed` is heard (None: every read goes to Redis)."""
        self._keys = RedisKeys(prefix)
        self.bus = RedisBus(self.client, self._keys, timeout=timeout, copies=self.copies, clock=clock)
        self.records = RedisRecords(self.client, self._keys, ttl=self.ttl, timeout=timeout, copies=self.copies,
                                    trusted=self.bus.quiet, clock=clock)
        self.liveness = Liveness(self.client, prefix, replica=new_replica_id(), every=heartbeat, ttl=liveness_ttl,
                                 timeout=timeout)
        """This replica's liveness key (refreshed while `running`), read when a call's stream is resumed here."""
        self.last_error = ""
        """Why the last ping failed (an error class and Redis's own words; never the URL)."""

    @asynccontextmanager
    async def running(self) -> AsyncIterator[RedisState]:
        """Listen for GET-stream messages and ended sessions, and say this replica is alive, while open; the liveness
        key is deleted and the pool closed on exit."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.bus.listen)
                tg.start_soon(self.liveness.beat)
                try:
                    yield self
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.liveness.stop()
                await self.bus.close()
                await self.client.aclose()

    async def ping(self) -> bool:
        """Whether Redis answers within the timeout (for /readyz)."""
        try:
            with anyio.fail_after(self.timeout):
                return bool(await self.client.ping())
        except (RedisError, OSError, TimeoutError) as exc:
            self.last_error = reason(exc)
            return False

    async def agree(self, fingerprint: str, *, alive: float) -> list[str]:
        """Record this replica's settings fingerprint as seen now; the other fingerprints a replica recorded within
        `alive` seconds (each replica records its own again more often than that)."""
        key = f"{self.prefix}replicas:fingerprints"
        now = time.time()
        try:
            with anyio.fail_after(self.timeout):
                await self.client.hset(key, fingerprint, str(now))
                seen = {_text(name): float(at) for name, at in (await self.client.hgetall(key)).items()}
                stale = [name for name, at in seen.items() if now - at > alive]
                if stale:
                    await self.client.hdel(key, *stale)
                await self.client.expire(key, max(int(alive * 2), 1))
        except (RedisError, OSError, TimeoutError, ValueError):
            return []  # Redis is away: /readyz says so
        return sorted(name for name, at in seen.items() if name != fingerprint and now - at <= alive)

    def events(self, key: str) -> RedisSessionEvents:
        """The event store of one session's GET stream."""
        return RedisSessionEvents(self.client, self._keys.events(key), ttl=self.ttl, max_events=_MAX_EVENTS,
                                  liveness=self.liveness)

    # -- the store (redis_records.py) and the bus (redis_bus.py) --------------------------------------------------

    async def create(self, record: SessionRecord) -> None:
        await self.records.create(record)

    async def load(self, key: str) -> SessionRecord | None:
        return await self.records.load(key)

    async def peek(self, key: str) -> SessionRecord | None:
        return await self.records.peek(key)

    async def update(self, record: SessionRecord, change: Update) -> SessionRecord | None:
        return await self.records.update(record, change)

    async def delete(self, key: str) -> bool:
        return await self.records.delete(key)

    async def touch(self, key: str) -> bool:
        return await self.records.touch(key)

    async def publish(self, key: str, message: dict[str, Any]) -> int:
        return await self.bus.publish(key, message)

    def hold(self, key: str, deliver: Deliver) -> AbstractAsyncContextManager[None]:
        return self.bus.hold(key, deliver)

    async def end(self, key: str) -> None:
        await self.bus.end(key)

    def on_end(self, callback: Callable[[str], Awaitable[None]]) -> None:
        self.bus.on_end(callback)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
