"""Each session's live state in this process (its surface, enabled tools, learning links) and the store of them.

Everything in `SessionState` but `notify`, `client` and `threads` is plain data: with replicas it is loaded from the
session's shared record (records.py) at each request, and what the request changed is written back there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..modes import Surface

if TYPE_CHECKING:
    from anyio import CapacityLimiter

    from ..origin import ClientSide

__all__ = ["LastSearch", "MemorySessionStore", "SessionState", "SessionStore"]


@dataclass(frozen=True, slots=True)
class LastSearch:
    """Learning from use: a session's latest search that returned tools, as much of it as a later call needs to be
    linked to it (server/learning.py), on whichever replica the call is served."""

    id: str = field(compare=False)
    """Not compared: a search that repeats the latest one (the same terms, the same tools) changes nothing a call is
    linked to, so a shared record is not written again for it."""
    terms: tuple[str, ...]
    """Its hashed terms."""
    returned: tuple[str, ...]
    """The tools it returned (the first ones, bounded)."""


@dataclass(slots=True)
class SessionState:
    key: str
    surface: Surface
    client_name: str | None = None
    enabled: dict[str, None] = field(default_factory=dict)
    """Tools enabled by search, in the order they were enabled: the order tools/list shows them in, which stays
    put as they are used, so a client's prompt cache over the list is not broken by a call."""
    used_at: dict[str, int] = field(default_factory=dict)
    """When each enabled tool was last found or called (a counter): the least recent leave first at the cap."""
    clock: int = 0
    found_by: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    """Learning from use: per tool a recent search returned, that search's id and hashed terms (server/learning.py)."""
    last_search: LastSearch | None = None
    """Learning from use: the session's latest search that returned tools (kept in the shared record too, where
    found_by is this process's alone)."""
    last_called: str | None = None
    """The catalog tool this session called last (learning from use: which tools are called together)."""
    notify: Callable[[], Awaitable[None]] | None = field(default=None, repr=False, compare=False)
    """Sends `notifications/tools/list_changed` on this session's standalone channel."""
    client: ClientSide | None = field(default=None, repr=False, compare=False)
    """The session's client as upstreams see it (its capabilities, log level, standalone channel)."""
    threads: CapacityLimiter | None = field(default=None, repr=False, compare=False)
    """This session's share of the in-process tools' worker threads (made on its first call; process-local, like
    `notify`)."""

    def enable(self, names: list[str], *, limit: int | None = None) -> tuple[list[str], list[str]]:
        """Enable `names` (those already enabled count as used again); with `limit`, the least recently used
        tools leave first so that at most `limit` stay. Returns (newly enabled, disabled)."""
        names = list(dict.fromkeys(names))
        if limit is not None:
            names = names[:limit]  # a search larger than the cap keeps its best matches
        new = [name for name in names if name not in self.enabled]
        self.enabled.update(dict.fromkeys(new))
        for name in names:
            self.used(name)
        gone: list[str] = []
        if limit is not None and len(self.enabled) > limit:
            by_age = sorted(self.enabled, key=lambda name: self.used_at.get(name, 0))
            gone = by_age[: len(self.enabled) - limit]
            for name in gone:
                del self.enabled[name]
                self.used_at.pop(name, None)
        return new, gone

    def used(self, name: str) -> None:
        """`name` was found or called: it becomes the most recently used of the enabled tools (if it is one)."""
        if name in self.enabled and self.used_at.get(name) != self.clock:  # already the most recent: no change
            self.clock += 1
            self.used_at[name] = self.clock


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
