"""The Redis session store's pub/sub side: the GET-stream bus (messages for the replica holding a session's
stream), ended sessions, and the `changed` channel that keeps this replica's local copies of records current,
with the watch that says whether those copies can be trusted now. One pub/sub connection carries all of it,
reconnected (and resubscribed) after trouble."""

from __future__ import annotations

import asyncio
import json
import logging
import select
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.exceptions import RedisError

from .bus import Deliver
from .local_copies import LocalCopies
from .redis_keys import RedisKeys, bounded, reason

__all__ = ["RedisBus"]

logger = logging.getLogger(__name__)

_SILENCE = 3.0
"""Seconds without a word on the pub/sub connection after which local copies are not trusted (it is pinged after a
second of quiet: a connection that died without a reset, behind a firewall that forgot it, goes quiet)."""


class RedisBus:
    """GET-stream messages, ended sessions and record changes, heard on one pub/sub connection."""

    def __init__(self, client: Redis, keys: RedisKeys, *, timeout: float, copies: LocalCopies | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.timeout = timeout
        self.copies = copies
        self._keys = keys
        self._clock = clock
        self._watched: tuple[Any, asyncio.StreamReader, select.poll] | None = None
        """The pub/sub connection `copies` is trusted with, its reader, and a poll of its socket."""
        self._heard_at = 0.0
        self._held: dict[str, Deliver] = {}
        self._ended: list[Callable[[str], Awaitable[None]]] = []
        self._pubsub: PubSub | None = None
        self._listening = anyio.Event()
        self._confirming: dict[str, anyio.Event] = {}
        """Channels being subscribed to, set once Redis confirms: a message published before that is not heard."""

    def quiet(self) -> bool:
        """Whether local copies can be trusted now: the `changed` subscription is up, nothing has arrived on it
        that the listener has not handled yet, and Redis answered on it recently."""
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


    async def publish(self, key: str, message: dict[str, Any]) -> int:
        with bounded("publish"), anyio.fail_after(self.timeout):
            return int(await self.client.publish(self._keys.push(key), json.dumps(message, separators=(",", ":"))))

    @asynccontextmanager
    async def hold(self, key: str, deliver: Deliver) -> AsyncIterator[None]:
        self._held[key] = deliver
        try:
            await self._subscribe(self._keys.push(key))
            yield
        finally:
            if self._held.get(key) is deliver:
                del self._held[key]
                with anyio.CancelScope(shield=True):
                    await self._unsubscribe(self._keys.push(key))

    async def end(self, key: str) -> None:
        with bounded("publish"), anyio.fail_after(self.timeout):
            await self.client.publish(self._keys.ended, key)

    def on_end(self, callback: Callable[[str], Awaitable[None]]) -> None:
        self._ended.append(callback)

    async def _subscribe(self, channel: str) -> None:
        await self._listening.wait()
        pubsub = self._pubsub
        if pubsub is None:
            return  # Redis is away: the listener subscribes to every held channel when it comes back
        confirmed = self._confirming.setdefault(channel, anyio.Event())
        try:
            with anyio.fail_after(self.timeout):
                await pubsub.subscribe(channel)
                await confirmed.wait()  # the listener reads the confirmation: from then on, nothing is missed
        except (RedisError, OSError, TimeoutError) as exc:
            logger.info("subscribing to a GET stream's channel failed (%s); resubscribed on reconnection",
                        type(exc).__name__)
        finally:
            if self._confirming.get(channel) is confirmed:
                del self._confirming[channel]

    async def _unsubscribe(self, channel: str) -> None:
        pubsub = self._pubsub
        if pubsub is None:
            return
        try:
            with anyio.fail_after(self.timeout):
                await pubsub.unsubscribe(channel)
        except (RedisError, OSError, TimeoutError):
            pass  # the connection is being replaced; the new one subscribes only to held channels

    async def close(self) -> None:
        self._distrust()
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            try:
                await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # typed from redis-py 8
            except (RedisError, OSError):
                pass

    async def listen(self) -> None:
        """Deliver messages of held GET streams and ended sessions, keep local copies current; reconnect (and
        resubscribe) after trouble."""
        delay = 0.05
        while True:
            try:
                pubsub = self.client.pubsub()
                changed = [self._keys.changed] if self.copies is not None else []
                await pubsub.subscribe(*changed, self._keys.ended, *[self._keys.push(key) for key in self._held])
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
                log("Redis pub/sub connection lost (%s); reconnecting", reason(exc))
            await self.close()
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
        if channel == self._keys.changed and self.copies is not None:
            if kind == "message":
                key, _, rev = data.decode(errors="replace").partition("|")
                self.copies.heard(key, int(rev) if rev.isascii() and rev.isdigit() else None)
            elif kind == "subscribe":
                self._trust(pubsub)  # (re)subscribed: Redis sends every write from now on
            return
        if kind != "message":
            if kind == "subscribe" and (confirmed := self._confirming.get(channel)) is not None:
                confirmed.set()
            return  # confirmations of GET streams' channels
        if channel == self._keys.ended:
            for callback in list(self._ended):
                try:
                    await callback(data.decode())
                except Exception:  # one failing callback must not stop the listener
                    logger.exception("ended-session callback raised")
            return
        deliver = self._held.get(channel.removeprefix(self._keys.push("")))
        if deliver is not None:
            try:
                await deliver(json.loads(data))
            except Exception:
                logger.exception("delivering a message to a GET stream failed")
