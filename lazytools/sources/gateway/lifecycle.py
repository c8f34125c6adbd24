"""The pieces of an upstream's life (upstream.py): how long it waits between reconnection attempts, the states it
goes through, and the attempts a call that finds it down waits on.

Each `Upstream.run` is one task that owns the connection for its whole life (anyio wants a connection's task
groups entered and left by the same task): connect within `connect_timeout`, list tools, then wait for the
upstream to announce a tool-list change or for the connection to end; on failure, retry with backoff. Requests come
from other tasks (the server's request handlers) and share the connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import anyio

__all__ = ["Attempts", "Backoff", "State"]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Seconds between reconnection attempts: `first`, doubling up to `most`. A connection that stayed up for
    `stable` seconds and then dropped is retried at once; one that keeps dropping sooner backs off like a failure,
    so a server that crashes right after starting is not respawned in a tight loop."""

    first: float = 1.0
    most: float = 60.0
    stable: float = 10.0

    def after(self, failures: int) -> float:
        return min(self.first * 2.0 ** max(failures - 1, 0), self.most)


State = Literal["connecting", "serving", "failed", "stopped"]
"""An upstream's life: connecting → serving → failed → (after a backoff, or at once on next use) connecting …;
stopped once the gateway closes. Only `serving` has a client that calls may use."""


class Attempts:
    """The reconnect loop's attempts to connect, as calls see them. A call to an upstream that is down wakes the
    loop ("on next use") and waits for the first attempt that starts after it: one spawn per call at most, never a
    retry storm."""

    def __init__(self) -> None:
        self.started = 0
        self.over = 0
        self.first_over = anyio.Event()
        """Set when the first attempt is over, whether it connected or not."""
        self._over = anyio.Event()
        self._wake = anyio.Event()

    def begin(self) -> None:
        self._wake = anyio.Event()
        self.started += 1

    def again(self) -> None:
        """The attempt that just began is made again in another handshake era: it counts once."""
        self.started -= 1

    def end(self) -> None:
        self.over += 1
        over, self._over = self._over, anyio.Event()
        over.set()
        self.first_over.set()

    @property
    def open(self) -> bool:
        """Whether the latest attempt has begun and not ended (it connected: it ends when it drops)."""
        return self.over != self.started

    async def pause(self, seconds: float) -> None:
        """The backoff before the next attempt, cut short by a call that wants the upstream now."""
        with anyio.move_on_after(seconds):
            await self._wake.wait()

    async def fresh(self, within: float, done: Callable[[], bool]) -> None:
        """Wake the loop and wait, at most `within` seconds, for the next attempt to end or `done()`."""
        target = self.started + 1
        self._wake.set()
        with anyio.move_on_after(within):
            while not done() and self.over < target:
                await self._over.wait()
