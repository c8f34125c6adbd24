"""Change events for `subscriptions/listen` streams (2026-07-28): an in-process bus that sync code can publish on.

The SDK's `ListenHandler` serves the streams and reads events from a `SubscriptionBus`. The catalog tells its
listeners about changes synchronously, so the bus here also offers `publish_nowait`; a shared bus (Redis pub/sub,
say) for several replicas can replace it behind the same protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio.lowlevel
from mcp.server.subscriptions import ServerEvent, SubscriptionBus, ToolsListChanged

__all__ = ["LocalSubscriptionBus", "SubscriptionBus", "ToolsListChanged"]

logger = logging.getLogger(__name__)


class LocalSubscriptionBus:
    """Fan-out to the listen streams of this process, in subscription order."""

    def __init__(self) -> None:
        # Keyed by a token per subscription: the same callable may subscribe twice.
        self._listeners: dict[object, Callable[[ServerEvent], None]] = {}

    def __len__(self) -> int:
        return len(self._listeners)

    def publish_nowait(self, event: ServerEvent) -> None:
        """Hand `event` to every listener now. Listen-stream listeners only queue it, so this never blocks."""
        for listener in list(self._listeners.values()):
            try:
                listener(event)
            except Exception:  # one broken stream must not keep the event from the others
                logger.exception("subscription listener raised; continuing")

    async def publish(self, event: ServerEvent) -> None:
        self.publish_nowait(event)
        # Let the streams drain between events when one task publishes many.
        await anyio.lowlevel.checkpoint()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        token = object()
        self._listeners[token] = listener

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe
