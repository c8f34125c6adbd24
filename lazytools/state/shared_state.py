"""What the HTTP transport needs from shared state (records, the GET-stream bus, event stores, a health check), and
an in-memory one: several apps in one process serve as replicas of one deployment (tests)."""

from __future__ import annotations

from typing import Protocol

from mcp.server.streamable_http import EventStore

from .bus import MemoryBus, SessionBus
from .events import MemorySessionEvents
from .store import MemoryStateStore, StateStore

__all__ = ["MemoryShared", "SharedState"]


class SharedState(StateStore, SessionBus, Protocol):
    def events(self, key: str) -> EventStore:
        """The event store of one session's GET stream."""
        ...

    async def ping(self) -> bool:
        """Whether the store answers now (readiness)."""
        ...


class MemoryShared(MemoryStateStore, MemoryBus):
    """Records, bus and events of one process."""

    def __init__(self, ttl: float) -> None:
        MemoryStateStore.__init__(self, ttl)
        MemoryBus.__init__(self)
        self._event_stores: dict[str, MemorySessionEvents] = {}
        self.up = True
        """Tests turn the store off and on."""

    def events(self, key: str) -> EventStore:
        return self._event_stores.setdefault(key, MemorySessionEvents())

    async def ping(self) -> bool:
        return self.up
