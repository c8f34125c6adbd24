"""Messages for a client's GET stream, whichever replica holds it: the protocol and an in-memory bus.

A replica that holds a session's GET stream `hold`s the session's channel while the stream is open; a replica that
has something for the session outside a request `publish`es it and learns how many replicas received it (none: the
stream is between reconnections, and the message is kept for `Last-Event-ID` instead). `end` tells every replica
that a session was deleted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

__all__ = ["Deliver", "MemoryBus", "SessionBus"]

Deliver = Callable[[dict[str, Any]], Awaitable[None]]


class SessionBus(Protocol):
    async def publish(self, key: str, message: dict[str, Any]) -> int:
        """Hand `message` to the replica holding the session's GET stream; returns how many received it."""
        ...

    def hold(self, key: str, deliver: Deliver) -> Any:
        """An async context manager: while open, this replica receives the session's messages in `deliver`."""
        ...

    async def end(self, key: str) -> None:
        """Tell every replica the session ended (deleted)."""
        ...

    def on_end(self, callback: Callable[[str], Awaitable[None]]) -> None:
        """Run `callback(key)` here whenever a session ends anywhere."""
        ...


class MemoryBus:
    """One process's replicas (tests): every holder of a key in this process receives its messages."""

    def __init__(self) -> None:
        self._holders: dict[str, list[Deliver]] = {}
        self._ended: list[Callable[[str], Awaitable[None]]] = []

    async def publish(self, key: str, message: dict[str, Any]) -> int:
        holders = list(self._holders.get(key, ()))
        for deliver in holders:
            await deliver(message)
        return len(holders)

    @asynccontextmanager
    async def hold(self, key: str, deliver: Deliver) -> AsyncIterator[None]:
        self._holders.setdefault(key, []).append(deliver)
        try:
            yield
        finally:
            holders = self._holders.get(key, [])
            if deliver in holders:
                holders.remove(deliver)
            if not holders:
                self._holders.pop(key, None)

    async def end(self, key: str) -> None:
        for callback in list(self._ended):
            await callback(key)

    def on_end(self, callback: Callable[[str], Awaitable[None]]) -> None:
        self._ended.append(callback)
