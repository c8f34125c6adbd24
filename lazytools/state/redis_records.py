"""Session records on Redis: created, read (from a local copy while nothing can have made it stale), written
against the revision they were made from, refreshed, deleted. Each write publishes on `changed` (redis_keys.py),
which keeps every replica's local copies current (redis_bus.py says whether they can be trusted now)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import anyio
from redis.asyncio import Redis

from .local_copies import LocalCopies
from .records import SessionRecord
from .redis_keys import RedisKeys, bounded
from .store import StateUnavailableError, Update

__all__ = ["RedisRecords"]

_BACKOFF_FIRST = 0.002
_BACKOFF_MAX = 0.05
"""Seconds a write waits, at random up to this (doubling from `_BACKOFF_FIRST`), before it is redone on the newer
revision another request of the session wrote first: concurrent writers of one session spread out instead of
colliding again. Redone until one write of it lands or the store's timeout would pass."""

_CONTENDED = "session store (Redis): other requests of this session kept writing first for {:g} s"

_REFRESHED_MAX = 100_000
"""Sessions whose last TTL refresh a replica remembers."""

# A record is stored as "<rev>|<json>": reading it is one GET, the cheapest command redis-py sends (a pipeline or a
# script costs it more), and every request of a session reads it.
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


class RedisRecords:
    """The session records of one Redis, with this replica's local copies of them."""

    def __init__(self, client: Redis, keys: RedisKeys, *, ttl: int, timeout: float, copies: LocalCopies | None,
                 trusted: Callable[[], bool], clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.ttl = ttl
        self.timeout = timeout
        self.copies = copies
        self._keys = keys
        self._trusted = trusted
        """Whether nothing that could make a local copy stale is unheard now (redis_bus.py)."""
        self._clock = clock
        self._write = client.register_script(_WRITE_IF_REV)
        self._create = client.register_script(_CREATE)
        self._delete = client.register_script(_DELETE)
        self._refreshed: dict[str, float] = {}
        self._writers: dict[str, _Turn] = {}

    def _copied(self, key: str) -> bytes | None:
        """The local copy of the record, if there is one and it can be trusted now."""
        copies = self.copies
        if copies is None:
            return None
        copied = copies.get(key)
        if copied is None or not self._trusted():
            return None
        return copied

    async def create(self, record: SessionRecord) -> None:
        value = _value(record)
        token = self.copies.begin(record.key) if self.copies is not None else 0
        created = False
        try:
            with bounded("session create"), anyio.fail_after(self.timeout):
                await self._create(keys=[self._keys.session(record.key)],
                                   args=[value, self.ttl, self._keys.changed, f"{record.key}|{record.rev}"])
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
        # record, and a cancel scope around the read would cost a large share of its CPU.
        value: bytes | None = None
        token = self.copies.begin(key) if self.copies is not None else 0
        try:
            with bounded(what):
                value = await self.client.get(self._keys.session(key))  # type: ignore[assignment]
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
            with bounded("session update"), anyio.fail_after(self.timeout):
                while True:
                    base = record.rev
                    change(record)
                    record.rev = base + 1
                    value = _value(record)
                    answer = await self._write(keys=[self._keys.session(key)],
                                               args=[str(base), value, self.ttl, self._keys.changed,
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
            with bounded("session delete"), anyio.fail_after(self.timeout):
                removed, listening = await self._delete(keys=[self._keys.session(key), self._keys.events(key)],
                                                        args=[self._keys.changed, f"{key}|"])
                await self._delivered(listening)
        finally:
            if self.copies is not None:
                self.copies.heard(key, None)
        return bool(removed)

    async def touch(self, key: str) -> bool:
        with bounded("session touch"), anyio.fail_after(self.timeout):
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.expire(self._keys.session(key), self.ttl)
                pipe.expire(self._keys.events(key), self.ttl)
                alive, _ = await pipe.execute()
        return bool(alive)


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
