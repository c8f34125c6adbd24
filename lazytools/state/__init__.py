"""Per-session state shared by several replicas: records, the store protocol, the Redis store, GET-stream events."""

from __future__ import annotations

from .bus import MemoryBus, SessionBus
from .events import GET_STREAM, MemorySessionEvents, RedisSessionEvents
from .records import SessionRecord
from .shared_state import MemoryShared, SharedState
from .store import MemoryStateStore, StateStore, StateUnavailableError

__all__ = [
    "GET_STREAM",
    "MemoryBus",
    "MemorySessionEvents",
    "MemoryShared",
    "MemoryStateStore",
    "RedisSessionEvents",
    "SessionBus",
    "SessionRecord",
    "SharedState",
    "StateStore",
    "StateUnavailableError",
]
