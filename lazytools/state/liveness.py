"""Which replicas are alive, kept in Redis, and event ids of a call's answer stream that name the replica serving it.

Each replica sets `replica:<id>` (under the store's prefix) to expire `ttl` seconds later, again every `every`
seconds, and deletes it when it stops cleanly. A request answered as SSE (a `tools/call` with progress, or any POST
with the priming event) gets event ids `c.<replica>.<n>.<request id, base64url>`: when that replica dies the client
resumes the stream with `Last-Event-ID` at another replica, which reads from the id whose request it was and where
it ran, waits until that replica's key is gone, and answers the request with a JSON-RPC error (events.py). Nothing
is run again: a resumed stream only ever answers.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import uuid4

import anyio
from redis.exceptions import RedisError

from .redis_keys import reason

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["CallEvent", "Liveness", "call_event_id", "new_replica_id", "parse_call_event_id"]

logger = logging.getLogger(__name__)

_MAX_REQUEST_ID = 128
"""Characters of a request id an event id carries; a longer id gets a local event id (no resumption elsewhere)."""

_CALL_EVENT = re.compile(r"c\.([0-9a-f]{16})\.(\d{1,20})\.([A-Za-z0-9_-]{1,172})")
"""`c.<replica>.<n>.<request id>`: 172 base64url characters hold 128 bytes."""

_INTEGER = re.compile(r"-?(?:0|[1-9]\d{0,18})")


def new_replica_id() -> str:
    """A replica's id for its process's lifetime (a restarted replica is another one: its calls did not survive)."""
    return uuid4().hex[:16]


@dataclass(frozen=True, slots=True)
class CallEvent:
    """What a call stream's event id says: the replica that served the request, and the request's id."""

    replica: str
    request_id: str | int


def call_event_id(replica: str, n: int, stream_id: str) -> str | None:
    """The id of event `n` of request `stream_id`'s answer stream on `replica`; None for a request id too long to
    carry."""
    if not stream_id or len(stream_id) > _MAX_REQUEST_ID:
        return None
    encoded = base64.urlsafe_b64encode(stream_id.encode()).decode().rstrip("=")
    if len(encoded) > 172:
        return None  # a request id of wide characters
    return f"c.{replica}.{n}.{encoded}"


def parse_call_event_id(value: str) -> CallEvent | None:
    """The replica and request a `Last-Event-ID` names, if it is a call stream's id (else None)."""
    found = _CALL_EVENT.fullmatch(value)
    if found is None:
        return None
    encoded = found.group(3)
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    # The SDK names a request's stream str(id): an id that reads as an integer was one (what clients send).
    request_id: str | int = int(raw) if _INTEGER.fullmatch(raw) else raw
    return CallEvent(found.group(1), request_id)


class Liveness:
    """This replica's liveness key, kept fresh while `beat` runs, and whether another replica's is still there."""

    def __init__(self, client: Redis, prefix: str, *, replica: str, every: float, ttl: float,
                 timeout: float) -> None:
        self.replica = replica
        self.every = every
        self.ttl = max(ttl, 2 * every)
        """Seconds a replica counts as alive after its last beat (at least two beats: one late beat is no death)."""
        self._client = client
        self._prefix = prefix
        self._timeout = timeout

    def key(self, replica: str) -> str:
        return f"{self._prefix}replica:{replica}"

    async def beat(self) -> None:
        """Refresh this replica's key every `every` seconds, for ever (run it in a task)."""
        while True:
            try:
                with anyio.fail_after(self._timeout):
                    await self._client.set(self.key(self.replica), "1", px=max(1, int(self.ttl * 1000)))
            except (RedisError, OSError, TimeoutError) as exc:
                logger.info("replica liveness not refreshed: %s", reason(exc))
            await anyio.sleep(self.every)

    async def stop(self) -> None:
        """This replica stops: its key goes at once (calls resumed elsewhere are answered now, not a TTL later)."""
        try:
            with anyio.fail_after(self._timeout):
                await self._client.delete(self.key(self.replica))
        except (RedisError, OSError, TimeoutError) as exc:
            logger.info("replica liveness key not deleted (it expires): %s", reason(exc))

    async def alive(self, replica: str) -> bool | None:
        """Whether `replica`'s key is there now; None when Redis does not answer."""
        try:
            with anyio.fail_after(self._timeout):
                return bool(await self._client.exists(self.key(replica)))
        except (RedisError, OSError, TimeoutError) as exc:
            logger.info("replica liveness not read: %s", reason(exc))
            return None

    async def gone(self, replica: str) -> bool:
        """Wait while `replica` is alive; True once its key is gone, False when Redis stops answering."""
        while True:
            alive = await self.alive(replica)
            if alive is None:
                return False
            if not alive:
                return True
            await anyio.sleep(self.every)
