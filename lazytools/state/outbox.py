"""Messages a request holds back until its session's changes are written.

A search that enables tools tells the client `tools/list_changed` before it answers; with a shared store the
client may re-list on another replica at once, so the notification must leave only after the new enabled set is
in the store. The server collects such sends around a request; the transport defers into the collection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["collecting", "defer"]

Send = Callable[[], Awaitable[None]]

_pending: ContextVar[list[Send] | None] = ContextVar("lazytools_outbox", default=None)


@contextmanager
def collecting() -> Iterator[list[Send]]:
    """Sends deferred inside are collected in the list yielded (the caller sends them when it may)."""
    pending: list[Send] = []
    token = _pending.set(pending)
    try:
        yield pending
    finally:
        _pending.reset(token)


def defer(send: Send) -> bool:
    """Hold `send` for the request being served, if one is collecting; False: send it now."""
    pending = _pending.get()
    if pending is None:
        return False
    pending.append(send)
    return True
