"""Where shared session records live: the protocol the server and the HTTP transport use, and an in-memory store.

The memory store holds one process's records (for tests, and as the reference behaviour); `redis.py` holds them in
Redis for several replicas. Both raise `StateUnavailableError` when the store cannot answer in time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from ..errors import StateUnavailableError
from .records import SessionRecord

__all__ = ["MemoryStateStore", "StateStore", "StateUnavailableError", "Update"]

Update = Callable[[SessionRecord], None]
"""Changes a record in place; may be run more than once (on a newer revision after a concurrent write)."""


class StateStore(Protocol):
    async def create(self, record: SessionRecord) -> None:
        """Store a new session's record, which expires after the idle TTL without use."""
        ...

    async def load(self, key: str) -> SessionRecord | None:
        """The session's record, its TTL refreshed; None when it ended or expired."""
        ...

    async def peek(self, key: str) -> SessionRecord | None:
        """The session's record without refreshing its TTL (a look that is not the client's use); None when gone."""
        ...

    async def update(self, record: SessionRecord, change: Update) -> SessionRecord | None:
        """Write `change` applied to `record`; if another request wrote first, apply it to the newer record instead.
        Returns what was written, or None when the session is gone."""
        ...

    async def delete(self, key: str) -> bool:
        """End the session everywhere; False when it was not there."""
        ...

    async def touch(self, key: str) -> bool:
        """Refresh the session's TTL (a replica holding its GET stream); False when it is gone."""
        ...


class MemoryStateStore:
    """Records in this process, with the same TTL and revision rules as the Redis store."""

    def __init__(self, ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._records: dict[str, tuple[float, str]] = {}

    def _live(self, key: str) -> str | None:
        found = self._records.get(key)
        if found is None:
            return None
        if found[0] <= self._clock():
            del self._records[key]
            return None
        return found[1]

    async def create(self, record: SessionRecord) -> None:
        self._records[record.key] = (self._clock() + self.ttl, record.to_json())

    async def load(self, key: str) -> SessionRecord | None:
        text = self._live(key)
        if text is None:
            return None
        self._records[key] = (self._clock() + self.ttl, text)
        return SessionRecord.from_json(text)

    async def peek(self, key: str) -> SessionRecord | None:
        text = self._live(key)
        return SessionRecord.from_json(text) if text is not None else None

    async def update(self, record: SessionRecord, change: Update) -> SessionRecord | None:
        current = await self.load(record.key)
        if current is None:
            return None
        base = record if current.rev == record.rev else current
        change(base)
        base.rev = current.rev + 1
        self._records[record.key] = (self._clock() + self.ttl, base.to_json())
        return base

    async def delete(self, key: str) -> bool:
        return self._records.pop(key, None) is not None

    async def touch(self, key: str) -> bool:
        return await self.load(key) is not None
