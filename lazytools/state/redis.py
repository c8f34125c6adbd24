"""The session store on Redis (redis-py's asyncio client): records, the GET-stream bus, events, readiness.

`RedisState` owns one connection pool; `client` is public so other shared state (search usage, rate limits) can use
the same Redis without a second pool. Every operation is bounded by `timeout` and turns Redis trouble into
`StateUnavailableError`; nothing here retries for long, so a request never hangs on a dead Redis.

Keys (under `prefix`): `session:<id>` (`<rev>|<record JSON>`), `events:<id>` (a stream); channels `push:<id>` (one
session's GET stream) and `ended` (deleted sessions).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, RedisError
from redis.exceptions import ConnectionError as RedisConnectionError

from .bus import Deliver
from .events import RedisSessionEvents
from .records import SessionRecord
from .store import StateUnavailableError, Update

__all__ = ["RedisState"]

logger = logging.getLogger(__name__)

_WRITE_ATTEMPTS = 8
"""Writes redone on a newer revision at most this often (concurrent requests of one session)."""

_MAX_EVENTS = 1000
"""GET-stream events kept per session for resumption (the oldest go first)."""

_REFRESHED_MAX = 100_000
"""Sessions whose last TTL refresh a replica remembers."""

# A record is stored as "<rev>|<json>": reading it is one GET, the cheapest command redis-py sends (a pipeline or a
# script costs it twice the CPU), and every request of a session reads it.
# Writing compares the revision it was made from: returns "ok", "gone", or the newer value to redo the write on.
_WRITE_IF_REV = """
local current = redis.call('GET', KEYS[1])
if not current then return 'gone' end
if string.sub(current, 1, string.find(current, '|', 1, true) - 1) ~= ARGV[1] then return current end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return 'ok'
"""


def _value(record: SessionRecord) -> str:
    return f"{record.rev}|{record.to_json()}"


def _record(value: bytes) -> SessionRecord:
    return SessionRecord.from_json(value.split(b"|", 1)[1])


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _reason(exc: BaseException) -> str:
    """An error's class, and Redis's own message for an authentication error (it never holds the password)."""
    if isinstance(exc, AuthenticationError):
        return f"{type(exc).__name__}: {exc}"
    return type(exc).__name__


@contextmanager
def _bounded(what: str) -> Iterator[None]:
    """Redis trouble as the library's error, naming the operation (never the URL: it may hold a password)."""
    try:
        yield
    except (RedisError, OSError) as exc:
        raise StateUnavailableError(f"session store (Redis) unavailable during {what}: {type(exc).__name__}") from exc


class RedisState:
    """Session records, the GET-stream bus and per-session event stores on one Redis."""

    def __init__(self, url: str, *, ttl: float, timeout: float = 2.0, prefix: str = "lazytools:") -> None:
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
        self._write = self.client.register_script(_WRITE_IF_REV)
        self._refreshed: dict[str, float] = {}
        self._held: dict[str, Deliver] = {}
        self._ended: list[Callable[[str], Awaitable[None]]] = []
        self._pubsub: PubSub | None = None
        self._listening = anyio.Event()
        self.last_error = ""
        """Why the last ping failed (an error class and Redis's own words; never the URL)."""

    # -- keys -----------------------------------------------------------------------------------------------------

    def _session(self, key: str) -> str:
        return f"{self.prefix}session:{key}"

    def _events(self, key: str) -> str:
        return f"{self.prefix}events:{key}"

    def _push(self, key: str) -> str:
        return f"{self.prefix}push:{key}"

    @property
    def _ended_channel(self) -> str:
        return f"{self.prefix}ended"

    # -- lifetime and readiness -----------------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[RedisState]:
        """Listen for GET-stream messages and ended sessions while open; the pool is closed on exit."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._listen)
                try:
                    yield self
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._close_pubsub()
                await self.client.aclose()

    async def ping(self) -> bool:
        """Whether Redis answers within the timeout (for /readyz)."""
        try:
            with anyio.fail_after(self.timeout):
                return bool(await self.client.ping())
        except (RedisError, OSError, TimeoutError) as exc:
            self.last_error = _reason(exc)
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

    # -- records --------------------------------------------------------------------------------------------------

    async def create(self, record: SessionRecord) -> None:
        with _bounded("session create"), anyio.fail_after(self.timeout):
            await self.client.set(self._session(record.key), _value(record), ex=self.ttl)

    async def load(self, key: str) -> SessionRecord | None:
        # Every request reads its record: bounded by the client's socket timeouts alone (at most two attempts of
        # `timeout`), as a cancel scope around it would cost a third of the read's CPU.
        with _bounded("session load"):
            value: bytes | None = await self.client.get(self._session(key))  # type: ignore[assignment]
        if value is not None and self._due(key):
            await self.touch(key)
        return _record(value) if value is not None else None

    async def peek(self, key: str) -> SessionRecord | None:
        with _bounded("session load"):
            value: bytes | None = await self.client.get(self._session(key))  # type: ignore[assignment]
        return _record(value) if value is not None else None

    def _due(self, key: str) -> bool:
        """Whether this replica should refresh the session's TTL now: at most every tenth of the TTL, so that a
        busy session costs one command per request (the expiry comes between 0.9 and 1 TTL after the last use)."""
        now = time.monotonic()
        if now - self._refreshed.get(key, -self.ttl) < self.ttl / 10:
            return False
        if len(self._refreshed) >= _REFRESHED_MAX:
            self._refreshed.clear()  # forgetting only makes the next refreshes come early
        self._refreshed[key] = now
        return True

    async def update(self, record: SessionRecord, change: Update) -> SessionRecord | None:
        with _bounded("session update"), anyio.fail_after(self.timeout):
            for _ in range(_WRITE_ATTEMPTS):
                base = record.rev
                change(record)
                record.rev = base + 1
                answer = await self._write(keys=[self._session(record.key)],
                                           args=[str(base), _value(record), self.ttl])
                if answer == b"ok":
                    return record
                if answer == b"gone":
                    return None
                record = _record(answer)  # another request wrote first: redo on its record
        raise StateUnavailableError("session store (Redis): too many concurrent writes to one session")

    async def delete(self, key: str) -> bool:
        with _bounded("session delete"), anyio.fail_after(self.timeout):
            removed = await self.client.delete(self._session(key), self._events(key))
        return bool(removed)

    async def touch(self, key: str) -> bool:
        with _bounded("session touch"), anyio.fail_after(self.timeout):
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.expire(self._session(key), self.ttl)
                pipe.expire(self._events(key), self.ttl)
                alive, _ = await pipe.execute()
        return bool(alive)

    def events(self, key: str) -> RedisSessionEvents:
        """The event store of one session's GET stream."""
        return RedisSessionEvents(self.client, self._events(key), ttl=self.ttl, max_events=_MAX_EVENTS)

    # -- the GET-stream bus ---------------------------------------------------------------------------------------

    async def publish(self, key: str, message: dict[str, Any]) -> int:
        with _bounded("publish"), anyio.fail_after(self.timeout):
            return int(await self.client.publish(self._push(key), json.dumps(message, separators=(",", ":"))))

    @asynccontextmanager
    async def hold(self, key: str, deliver: Deliver) -> AsyncIterator[None]:
        self._held[key] = deliver
        try:
            await self._subscribe(self._push(key))
            yield
        finally:
            if self._held.get(key) is deliver:
                del self._held[key]
                with anyio.CancelScope(shield=True):
                    await self._unsubscribe(self._push(key))

    async def end(self, key: str) -> None:
        with _bounded("publish"), anyio.fail_after(self.timeout):
            await self.client.publish(self._ended_channel, key)

    def on_end(self, callback: Callable[[str], Awaitable[None]]) -> None:
        self._ended.append(callback)

    async def _subscribe(self, channel: str) -> None:
        await self._listening.wait()
        pubsub = self._pubsub
        if pubsub is None:
            return  # Redis is away: the listener subscribes to every held channel when it comes back
        try:
            with anyio.fail_after(self.timeout):
                await pubsub.subscribe(channel)
        except (RedisError, OSError, TimeoutError) as exc:
            logger.info("subscribing to a GET stream's channel failed (%s); resubscribed on reconnection",
                        type(exc).__name__)

    async def _unsubscribe(self, channel: str) -> None:
        pubsub = self._pubsub
        if pubsub is None:
            return
        try:
            with anyio.fail_after(self.timeout):
                await pubsub.unsubscribe(channel)
        except (RedisError, OSError, TimeoutError):
            pass  # the connection is being replaced; the new one subscribes only to held channels

    async def _close_pubsub(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            try:
                await pubsub.aclose()  # type: ignore[no-untyped-call]
            except (RedisError, OSError):
                pass

    async def _listen(self) -> None:
        """Deliver messages of held GET streams and ended sessions; reconnect (and resubscribe) after trouble."""
        delay = 0.05
        while True:
            try:
                pubsub = self.client.pubsub(ignore_subscribe_messages=True)
                await pubsub.subscribe(self._ended_channel, *[self._push(key) for key in self._held])
                self._pubsub = pubsub
                self._listening.set()
                delay = 0.05
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if message is not None:
                        await self._dispatch(message)
            except (RedisError, OSError) as exc:
                # Once per outage (a wrong password or a host that never answers would log every 2 s otherwise).
                log = logger.warning if delay == 0.05 else logger.debug
                log("Redis pub/sub connection lost (%s); reconnecting", _reason(exc))
            await self._close_pubsub()
            self._listening.set()  # nobody waits for a subscription while Redis is away
            await anyio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def _dispatch(self, message: dict[str, Any]) -> None:
        channel = message["channel"].decode()
        data = message["data"]
        if channel == self._ended_channel:
            for callback in list(self._ended):
                try:
                    await callback(data.decode())
                except Exception:  # one failing callback must not stop the listener
                    logger.exception("ended-session callback raised")
            return
        deliver = self._held.get(channel.removeprefix(f"{self.prefix}push:"))
        if deliver is not None:
            try:
                await deliver(json.loads(data))
            except Exception:
                logger.exception("delivering a message to a GET stream failed")
