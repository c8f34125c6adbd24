"""Bounds on what one upstream notification can make lazytools hold, however the client keeps up.

The SDK hands each incoming notification to a task of its own, which waits until the client's stream takes it. A
client that stops reading while an upstream floods (a progress or log message of a megabyte each, many a second)
kept every one of them in memory, and the memory was not given back (docs/reliability-log.md). Two bounds:

- `bound_notification` runs on each message as it arrives from the upstream, before the SDK parses it: a progress
  `message` or a log `data` longer than `MAX_NOTE_CHARS` is cut to that, with a note saying how long it was. Each
  waiting task then holds a few KB.
- `ProgressGate` lets at most `MAX_PENDING_PROGRESS` progress notifications of one client request wait to be sent;
  more are dropped (a later one says as much, and progress is a best-effort report).
- `LogGate` does the same for log messages, per session (or per request outside any): an upstream that logs
  without pause to a client that is not reading would otherwise hold a task per message, without end. The next
  message delivered is preceded by a warning saying how many were dropped. Results are never dropped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage

from ...entry import compact_json

__all__ = ["MAX_NOTE_CHARS", "MAX_PENDING_LOGS", "MAX_PENDING_PROGRESS", "LogGate", "ProgressGate", "bound_notification",
           "clip_text"]

MAX_NOTE_CHARS = 4096
"""Longest progress message, or log data as JSON text, passed on as it is."""

MAX_PENDING_PROGRESS = 16
"""Progress notifications of one request that may wait for a slow client; more are dropped."""

MAX_PENDING_LOGS = 64
"""Log messages that may wait for one slow client (a session, or a request outside any); more are dropped."""

MAX_COUNTED_TARGETS = 4096
"""Clients whose dropped log messages are counted at once: past it the counts start afresh (bounded memory)."""


def clip_text(text: str, limit: int = MAX_NOTE_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [lazytools: cut from {len(text)} characters]"


def _clipped_data(data: Any) -> Any:
    if isinstance(data, str):
        return clip_text(data)
    if isinstance(data, int | float | bool) or data is None:
        return data
    try:
        text = compact_json(data)
    except (TypeError, ValueError):
        return clip_text(str(data))
    return data if len(text) <= MAX_NOTE_CHARS else clip_text(text)


def bound_notification(item: Any) -> Any:
    """`item` with an oversized progress message or log data cut; any other item unchanged."""
    if not isinstance(item, SessionMessage) or not isinstance(item.message, types.JSONRPCNotification):
        return item
    note = item.message
    params = note.params
    if not isinstance(params, dict):
        return item
    if note.method == "notifications/progress" and isinstance(params.get("message"), str) and \
            len(params["message"]) > MAX_NOTE_CHARS:
        params = {**params, "message": clip_text(params["message"])}
    elif note.method == "notifications/message" and "data" in params:
        data = _clipped_data(params["data"])
        if data is params["data"]:
            return item
        params = {**params, "data": data}
    else:
        return item
    message = types.JSONRPCNotification(jsonrpc="2.0", method=note.method, params=params)
    return SessionMessage(message, metadata=item.metadata)


Progress = Callable[[float, float | None, str | None], Awaitable[None]]


class ProgressGate:
    """Passes progress on to `send` while at most `limit` are waiting; counts what it dropped."""

    def __init__(self, send: Progress, limit: int = MAX_PENDING_PROGRESS) -> None:
        self._send = send
        self._limit = limit
        self.waiting = 0
        self.dropped = 0

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if self.waiting >= self._limit:
            self.dropped += 1
            return
        if self.dropped:
            note = f"[lazytools: {self.dropped} progress notifications dropped: the client was not reading]"
            message = f"{message} {note}" if message else note
            self.dropped = 0
        self.waiting += 1
        try:
            await self._send(progress, total, message)
        finally:
            self.waiting -= 1


Notify = Callable[[types.ServerNotification], Awaitable[None]]


class LogGate:
    """Passes log messages on while at most `limit` wait for each target (a session's key, or a request's origin);
    counts what it dropped, and says how many before the next message it passes on to that target."""

    def __init__(self, limit: int = MAX_PENDING_LOGS) -> None:
        self._limit = limit
        self._waiting: dict[object, int] = {}
        self._dropped: dict[object, int] = {}

    def waiting(self, target: object) -> int:
        return self._waiting.get(target, 0)

    async def send(self, target: object, notify: Notify, note: types.LoggingMessageNotification) -> None:
        waiting = self._waiting.get(target, 0)
        if waiting >= self._limit:
            if target not in self._dropped and len(self._dropped) >= MAX_COUNTED_TARGETS:
                self._dropped.clear()
            self._dropped[target] = self._dropped.get(target, 0) + 1
            return
        self._waiting[target] = waiting + 1
        try:
            dropped = self._dropped.pop(target, 0)
            if dropped:
                await notify(types.LoggingMessageNotification(params=types.LoggingMessageNotificationParams(
                    level="warning", logger="lazytools",
                    data=f"{dropped} log messages from upstream servers dropped: the client was not reading")))
            await notify(note)
        finally:
            left = self._waiting[target] - 1
            if left:
                self._waiting[target] = left
            else:
                del self._waiting[target]
