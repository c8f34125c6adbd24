"""The session store on Redis (redis-py's asyncio client): records, the GET-stream bus, events, readiness.

`RedisState` owns one connection pool; `client` is public so other shared state (search usage, rate limits) can use
the same Redis without a second pool. Every operation is bounded by `timeout` and turns Redis trouble into
`StateUnavailableError`; nothing here retries for long, so a request never hangs on a dead Redis.

Keys (under `prefix`): `session:<id>` (`<rev>|<record JSON>`), `events:<id>` (a stream); channels `push:<id>` (one
session's GET stream), `ended` (deleted sessions) and `changed` (`<id>|<rev>` for every record write, `<id>|` for a
deletion, or a write that found the record gone: what keeps each replica's local copies of records current, docs/scaling.md).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import select
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
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
from .local_copies import LocalCopies
from .records import SessionRecord
from .store import StateUnavailableError, Update

__all__ = ["RedisState", "redis_trouble"]

logger = logging.getLogger(__name__)

_BACKOFF_FIRST = 0.002
_BACKOFF_MAX = 0.05
"""Seconds a write waits, at random up to this (doubling from `_BACKOFF_FIRST`), before it is redone on the newer
revision another request of the session wrote first: concurrent writers of one session spread out instead of
colliding again. Redone until one write of it lands or the store's timeout would pass."""

_CONTENDED = "session store (Redis): other requests of this session kept writing first for {:g} s"

_MAX_EVENTS = 1000
"""GET-stream events kept per session for resumption (the oldest go first)."""

_REFRESHED_MAX = 100_000
"""Sessions whose last TTL refresh a replica remembers."""

_COPIES_MAX = 10_000
"""Session records a replica keeps a local copy of (the least recently used go first)."""

_COPIES_MAX_BYTES = 32 * 1024 * 1024
"""Bytes of records a replica keeps local copies of (a record is about 0.5 KiB, a few KiB at most)."""

_SILENCE = 3.0
"""Seconds without a word on the pub/sub connection after which local copies are not trusted (it is pinged after a
second of quiet: a connection that died without a reset, behind a firewall that forgot it, goes quiet)."""

# A record is stored as "<rev>|<json>": reading it is one GET, the cheapest command redis-py sends (a pipeline or a
# script costs it twice the CPU), and every request of a session reads it.
# Writing compares the revision it was made from: returns "gone" (publishing `<id>|` on `changed`, so every replica
# drops its copy of a record Redis lost), the newer value to redo the write on, or (written) how many replicas are
# subscribed to `changed`. Every write publishes `<id>|<rev>` there in the same script, so Redis
# has queued the invalidation to every replica before the writer can learn that it wrote (and so before its client).
_WRITE_IF_REV = """
local current = redis.call('GET', KEYS[1])
if not current then
  redis.call('PUBLISH', ARGV[4], ARGV[6])
  return 'gone'
end
if string.sub(current, 1, string.find(current, '|', 1, true) - 1) ~= ARGV[1] then return current end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return redis.call('PUBLISH', ARGV[4], ARGV[5])
"""

_CREATE = """
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
"""

_DELETE = """
local removed = redis.call('DEL', KEYS[1], KEYS[2])
return {removed, redis.call('PUBLISH', ARGV[1], ARGV[2])}
"""


class _Turn:
    """The writes of one session on this replica: one at a time."""

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.waiting = 0


def _value(record: SessionRecord) -> str:
    return f"{record.rev}|{record.to_json()}"


def _record(value: bytes) -> SessionRecord:
    return SessionRecord.from_json(value.split(b"|", 1)[1])


def _rev(value: bytes) -> int:
    return int(value.split(b"|", 1)[0])


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _reason(exc: BaseException) -> str:
    """An error's class, and Redis's own message for an authentication error (it never holds the password)."""
    if isinstance(exc, AuthenticationError):
        return f"{type(exc).__name__}: {exc}"
    return type(exc).__name__


@contextmanager
def redis_trouble(error: Callable[[str], Exception], store: str, what: str) -> Iterator[None]:
    """Redis trouble as `error` ("<store> (Redis) unavailable during <what>: <error class>"), naming the operation
    and never the URL (it may hold a password)."""
    try:
        yield
    except (RedisError, OSError) as exc:
        raise error(f"{store} (Redis) unavailable during {what}: {type(exc).__name__}") from exc


def _bounded(what: str) -> AbstractContextManager[None]:
    return redis_trouble(StateUnavailableError, "session store", what)


class RedisState:
    """Session records, the GET-stream bus and per-session event stores on one Redis."""

    def __init__(self, url: str, *, ttl: float, timeout: float = 2.0, prefix: str = "lazytools:",
                 local_copy: bool = True, clock: Callable[[], float] = time.monotonic) -> None:
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
        self._clock = clock
        self._write = self.client.register_script(_WRITE_IF_REV)
        self._create = self.client.register_script(_CREATE)
        self._delete = self.client.register_script(_DELETE)
        self.copies: LocalCopies | None = (
            LocalCopies(max_entries=_COPIES_MAX, max_bytes=_COPIES_MAX_BYTES) if local_copy else None)
        """Local copies of records, trusted only while `changed` is heard (None: every read goes to Redis)."""
        self._watched: tuple[Any, asyncio.StreamReader, select.poll] | None = None
        """The pub/sub connection `copies` is trusted with, its reader, and a poll of its socket."""
        self._heard_at = 0.0
        self._refreshed: dict[str, float] = {}
        self._held: dict[str, Deliver] = {}
        self._writers: dict[str, _Turn] = {}
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

    @property
    def _changed_channel(self) -> str:
        return f"{self.prefix}changed"

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
        value = _value(record)
        token = self.copies.begin(record.key) if self.copies is not None else 0
        created = False
        try:
            with _bounded("session create"), anyio.fail_after(self.timeout):
                await self._create(keys=[self._session(record.key)],
                                   args=[value, self.ttl, self._changed_channel, f"{record.key}|{record.rev}"])
            created = True
        finally:
            if self.copies is not None:
                self.copies.end(record.key, token, record.rev, value.encode() if created else None)
        self._confirmed(record.key)  # set with a whole TTL just now

    async def load(self, key: str) -> SessionRecord | None:
        recent = self._recent(key)
        if recent:
            copied = self._copied(key)
            if copied is not None:
                return _record(copied)
        else:
            self._confirmed(key)  # before the read: the session's concurrent requests do not refresh it again
        try:
            value = await self._get(key, "session load")
        except StateUnavailableError:
            if not recent:
                self._refreshed.pop(key, None)
            raise
        if value is None:
            self._refreshed.pop(key, None)
        elif not recent:
            await self.touch(key)
        return _record(value) if value is not None else None

    async def peek(self, key: str) -> SessionRecord | None:
        copied = self._copied(key) if self._recent(key) else None
        if copied is not None:
            return _record(copied)
        value = await self._get(key, "session load")
        return _record(value) if value is not None else None

    async def _get(self, key: str, what: str) -> bytes | None:
        """The stored record; kept as a local copy when nothing newer was heard meanwhile."""
        # Bounded by the client's socket timeouts alone (at most two attempts of `timeout`): every request reads its
        # record, and a cancel scope around the read would cost a third of its CPU.
        value: bytes | None = None
        token = self.copies.begin(key) if self.copies is not None else 0
        try:
            with _bounded(what):
                value = await self.client.get(self._session(key))  # type: ignore[assignment]
        finally:
            if self.copies is not None:
                self.copies.end(key, token, _rev(value) if value is not None else None, value)
        return value

    async def _delivered(self, listening: int) -> None:
        """Wait until Redis has sent the invalidation a write published to every replica's socket.

        Redis queues the message to subscribers before the writer's reply, but writes the replies of one event-loop
        pass in an order of its own (the writer's can go first, and a busy host can pause Redis between the two):
        a command sent after the reply is read only in a later pass, after every queued message was written (or
        left waiting on a full socket, which its replica sees as unread data). One round trip per write, so that
        the client, who learns of the write after this, cannot reach another replica before its invalidation.
        None when no replica listens (local copies off everywhere)."""
        if listening:
            await self.client.ping()

    def _copied(self, key: str) -> bytes | None:
        """The local copy of the record, if there is one and nothing that could make it stale is unheard: the
        `changed` subscription is up, nothing has arrived on it that the listener has not handled yet, and Redis
        answered on it recently."""
        copies = self.copies
        if copies is None:
            return None
        copied = copies.get(key)
        if copied is None or not self._quiet():
            return None
        return copied

    def _quiet(self) -> bool:
        watched = self._watched
        if watched is None or self._clock() - self._heard_at > _SILENCE:
            return False
        connection, reader, poll = watched
        # redis-py's reader and parser buffers are not public: anything unexpected in them counts as unread data.
        if getattr(connection, "_reader", None) is not reader:
            return False  # reconnected, not resubscribed yet
        if reader.at_eof() or getattr(reader, "_buffer", True):
            return False  # closed, or bytes the listener has not parsed
        parser = getattr(connection, "_parser", None)
        if getattr(parser, "_buffer", None):
            return False  # the Python parser's: part of a message
        hiredis = getattr(parser, "_reader", None)
        if hiredis is not None and (not hasattr(hiredis, "has_data") or hiredis.has_data()):
            return False  # hiredis's
        return not poll.poll(0)  # nothing in the socket either

    def _recent(self, key: str) -> bool:
        """Whether this replica confirmed the session in Redis (and refreshed its TTL) within a tenth of the TTL: until
        then its local copy may be used; refreshing no more often keeps a busy session's cost to the refresh alone
        (the expiry comes between 0.9 and 1 TTL after the last use)."""
        return self._clock() - self._refreshed.get(key, -self.ttl) < self.ttl / 10

    def _confirmed(self, key: str) -> None:
        if len(self._refreshed) >= _REFRESHED_MAX:
            self._refreshed.clear()  # forgetting only makes the next refreshes come early
        self._refreshed[key] = self._clock()

    async def update(self, record: SessionRecord, change: Update) -> SessionRecord | None:
        # This replica's writes of one session go one at a time (only other replicas' can race them), each waiting
        # at most the timeout for its turn.
        turn = self._writers.get(record.key)
        if turn is None:
            turn = self._writers[record.key] = _Turn()
        turn.waiting += 1
        try:
            with anyio.move_on_after(self.timeout) as waited:
                await turn.lock.acquire()
            if waited.cancelled_caught:
                raise StateUnavailableError(_CONTENDED.format(self.timeout))
            try:
                return await self._update(record, change)
            finally:
                turn.lock.release()
        finally:
            turn.waiting -= 1
            if turn.waiting == 0:
                del self._writers[record.key]

    async def _update(self, record: SessionRecord, change: Update) -> SessionRecord | None:
        key = record.key
        token = self.copies.begin(key) if self.copies is not None else 0
        written: str | None = None
        deadline = anyio.current_time() + self.timeout
        pause = _BACKOFF_FIRST
        try:
            with _bounded("session update"), anyio.fail_after(self.timeout):
                while True:
                    base = record.rev
                    change(record)
                    record.rev = base + 1
                    value = _value(record)
                    answer = await self._write(keys=[self._session(key)],
                                               args=[str(base), value, self.ttl, self._changed_channel,
                                                     f"{key}|{record.rev}", f"{key}|"])
                    if isinstance(answer, int):
                        written = value
                        await self._delivered(answer)
                        return record
                    if answer == b"gone":
                        self._refreshed.pop(key, None)  # the next read asks Redis, and answers that it is gone
                        return None
                    record = _record(answer)  # another request wrote first: redo on its record
                    wait = random.uniform(0, pause)  # spreads the writers out; not a secret
                    if anyio.current_time() + wait >= deadline:
                        break
                    await anyio.sleep(wait)
                    pause = min(pause * 2, _BACKOFF_MAX)
        finally:
            if self.copies is not None:
                self.copies.end(key, token, record.rev, written.encode() if written is not None else None)
        raise StateUnavailableError(_CONTENDED.format(self.timeout))

    async def delete(self, key: str) -> bool:
        try:
            with _bounded("session delete"), anyio.fail_after(self.timeout):
                removed, listening = await self._delete(keys=[self._session(key), self._events(key)],
                                                        args=[self._changed_channel, f"{key}|"])
                await self._delivered(listening)
        finally:
            if self.copies is not None:
                self.copies.heard(key, None)
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
        self._distrust()
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            try:
                await pubsub.aclose()  # type: ignore[no-untyped-call]
            except (RedisError, OSError):
                pass

    async def _listen(self) -> None:
        """Deliver messages of held GET streams and ended sessions, keep local copies current; reconnect (and
        resubscribe) after trouble."""
        delay = 0.05
        while True:
            try:
                pubsub = self.client.pubsub()
                changed = [self._changed_channel] if self.copies is not None else []
                await pubsub.subscribe(*changed, self._ended_channel, *[self._push(key) for key in self._held])
                self._pubsub = pubsub
                self._listening.set()
                delay = 0.05
                while True:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None:
                        self._heard_at = self._clock()
                        await self._dispatch(message, pubsub)
                    elif self.copies is not None:
                        await pubsub.ping()  # a pong within _SILENCE keeps the copies trusted
            except (RedisError, OSError) as exc:
                self._distrust()
                # Once per outage (a wrong password or a host that never answers would log every 2 s otherwise).
                log = logger.warning if delay == 0.05 else logger.debug
                log("Redis pub/sub connection lost (%s); reconnecting", _reason(exc))
            await self._close_pubsub()
            self._listening.set()  # nobody waits for a subscription while Redis is away
            await anyio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _trust(self, pubsub: PubSub) -> None:
        """Local copies are trusted from now on, on this pub/sub connection (what was kept before goes: writes may
        have been missed while it was not subscribed)."""
        assert self.copies is not None
        self._distrust()
        connection: Any = pubsub.connection  # its reader and socket are not public: checked as they are read
        try:
            reader = connection._reader
            poll = select.poll()
            poll.register(connection._writer.get_extra_info("socket").fileno(), select.POLLIN | select.POLLPRI)
        except (AttributeError, OSError, ValueError):
            logger.warning("local copies of session records are off: the pub/sub connection cannot be watched")
            return
        self._watched = (connection, reader, poll)
        self._heard_at = self._clock()
        self.copies.trust()

    def _distrust(self) -> None:
        self._watched = None
        if self.copies is not None:
            self.copies.distrust()

    async def _dispatch(self, message: dict[str, Any], pubsub: PubSub) -> None:
        kind = message["type"]
        if kind == "pong":
            return
        channel = message["channel"].decode()
        data = message["data"]
        if channel == self._changed_channel and self.copies is not None:
            if kind == "message":
                key, _, rev = data.decode(errors="replace").partition("|")
                self.copies.heard(key, int(rev) if rev.isascii() and rev.isdigit() else None)
            elif kind == "subscribe":
                self._trust(pubsub)  # (re)subscribed: Redis sends every write from now on
            return
        if kind != "message":
            return  # confirmations of GET streams' channels
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
