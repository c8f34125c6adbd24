"""Per-session state (surface and enabled tools) and the store that holds it.

The store is a separate object from the catalog so a shared one (Redis, say) can replace the in-memory store
for several replicas; everything in `SessionState` but `notify` is plain data for that reason.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from .surface import Surface

__all__ = ["MemorySessionStore", "SessionState", "SessionStore"]


@dataclass(slots=True)
class SessionState:
    key: str
    surface: Surface
    client_name: str | None = None
    enabled: dict[str, None] = field(default_factory=dict)
    """Tools enabled by search, in the order they were enabled (a dict is an ordered set)."""
    notify: Callable[[], Awaitable[None]] | None = field(default=None, repr=False, compare=False)
    """Sends `notifications/tools/list_changed` on this session's standalone channel."""

    def enable(self, names: list[str]) -> list[str]:
        """Enable `names`; returns those that were not enabled before."""
        new = [name for name in names if name not in self.enabled]
        self.enabled.update(dict.fromkeys(new))
        return new


class SessionStore(Protocol):
    def get(self, key: str) -> SessionState | None: ...
    def put(self, state: SessionState) -> None: ...
    def drop(self, key: str) -> None: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[SessionState]: ...


class MemorySessionStore:
    """Sessions of this process, by key."""

    def __init__(self) -> None:
        self._sessions: dict[str, SessionState] = {}

    def get(self, key: str) -> SessionState | None:
        return self._sessions.get(key)

    def put(self, state: SessionState) -> None:
        self._sessions[state.key] = state

    def drop(self, key: str) -> None:
        self._sessions.pop(key, None)

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self) -> Iterator[SessionState]:
        return iter(list(self._sessions.values()))
