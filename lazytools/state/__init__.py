"""Per-session state: each session's live state here (sessions.py), and what replicas share of it (records kept in
step with it by sync.py, the store protocol, the Redis store, GET-stream events)."""

from __future__ import annotations

from .bus import MemoryBus, SessionBus
from .events import GET_STREAM, MemorySessionEvents
from .records import SessionRecord
from .shared_state import MemoryShared, SharedState
from .store import MemoryStateStore, StateStore, StateUnavailableError

__all__ = [
    "GET_STREAM",
    "MemoryBus",
    "MemorySessionEvents",
    "MemoryShared",
    "MemoryStateStore",
    "SessionBus",
    "SessionRecord",
    "SharedState",
    "StateStore",
    "StateUnavailableError",
]
