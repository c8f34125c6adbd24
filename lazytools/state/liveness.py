"""Which replicas are alive, kept in Redis.

Each replica sets `replica:<id>` (under the store's prefix) to expire `ttl` seconds later, again every `every`
seconds, and deletes it when it stops cleanly. A call stream resumed at another replica (event_ids.py) waits here
until the replica that served it is gone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio
from redis.exceptions import RedisError

from .redis_keys import reason

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["Liveness"]

logger = logging.getLogger(__name__)


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
