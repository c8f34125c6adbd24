"""Whose request is being served: the contract between the server and whatever serves a request for it.

The server marks each request it serves with its `CallOrigin` (`calling`); code that serves it further down
(an upstream taking a call, a log message or a request for the client arriving meanwhile) reads it with
`current_origin()`. This module imports only the protocol's types, so both sides can stand on it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types

__all__ = ["LOG_LEVELS", "CallOrigin", "ClientSide", "Clients", "Progress", "calling", "current_origin", "session_key"]


LOG_LEVELS: tuple[types.LoggingLevel, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert",
                                              "emergency")
"""The protocol's log levels, least severe first."""


class ClientSide(Protocol):
    """One client session as upstreams see it (the server implements it)."""

    @property
    def key(self) -> str: ...

    @property
    def capabilities(self) -> types.ClientCapabilities | None: ...

    def wants_log(self, level: types.LoggingLevel) -> bool:
        """Whether this session's `logging/setLevel` lets a message of `level` through."""
        ...

    async def notify(self, notification: types.ServerNotification) -> None:
        """Send on the session's standalone channel (best effort)."""
        ...

    async def request(self, request: types.ServerRequest, result_type: type[Any]) -> Any:
        """Send a request to the client on the session's standalone channel and return its typed result."""
        ...


class Clients(Protocol):
    """Every client session the server holds now."""

    def __iter__(self) -> Iterator[ClientSide]: ...

    def get(self, key: str) -> ClientSide | None: ...


Progress = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass(eq=False, slots=True)
class CallOrigin:
    """One client request being served by an upstream: where its progress, logs and requests go."""

    client: ClientSide | None
    """The session; None for a request outside any session (stateless HTTP, 2026-07-28)."""
    progress: Progress | None = None
    """Reports progress against the client's own progressToken; None when the client gave none."""
    notify: Callable[[types.ServerNotification], Awaitable[None]] | None = None
    """Sends on the request's own channel (on HTTP, its response stream)."""
    request: Callable[[types.ServerRequest, type[Any]], Awaitable[Any]] | None = None
    """Sends a request to the client on the request's own channel; None where the protocol has none (2026-07-28)."""
    log_levels: frozenset[str] | None = None
    """Levels this request may carry (2026-07-28 opt-in per request); None: the session's setLevel decides."""

    def wants_log(self, level: types.LoggingLevel) -> bool:
        if self.log_levels is not None:
            return level in self.log_levels
        return self.client is None or self.client.wants_log(level)


_current: ContextVar[CallOrigin | None] = ContextVar("lazytools_call_origin", default=None)


def current_origin() -> CallOrigin | None:
    return _current.get()


def session_key(origin: CallOrigin | None) -> str | None:
    """The key of the session `origin` belongs to; None outside any session (stateless HTTP, no request)."""
    return origin.client.key if origin is not None and origin.client is not None else None


@contextmanager
def calling(origin: CallOrigin | None) -> Iterator[None]:
    """Mark the code inside as serving `origin` (the server wraps each forwarded request in it)."""
    token = _current.set(origin)
    try:
        yield
    finally:
        _current.reset(token)
