"""Event stores for `Last-Event-ID` resumption of a session's GET stream on any replica (the SDK's `EventStore`).

One store per session (the SDK names streams by request id, which repeats across sessions). Only the GET stream's
events are kept: they are what a client that reconnects to another replica must not miss (list changes, resource
updates, logs outside a call). A POST's events answer one request on the replica that serves it and are not kept:
with Redis their ids name that replica and the request (event_ids.py), so a resumption at another replica answers
the request with a JSON-RPC error once that replica is dead (it died before answering); elsewhere, and in memory,
a resumption with one finds nothing.
"""

from __future__ import annotations

import itertools
from typing import Any

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import JSONRPCMessage
from pydantic import TypeAdapter

__all__ = ["EVENT_NUMBERS", "GET_STREAM", "MESSAGE", "WENT_AWAY", "MemorySessionEvents", "dump_message", "local_event_id",
           "message_of"]

GET_STREAM = "_GET_stream"
"""The SDK's stream id for a session's GET stream (`mcp.server.streamable_http.GET_STREAM_KEY`)."""

MESSAGE: TypeAdapter[Any] = TypeAdapter(JSONRPCMessage)
EVENT_NUMBERS = itertools.count(1)
"""Numbers this process's unkept events (local ids, and the call-stream ids of redis_events.py), never reused."""

WENT_AWAY = ("the replica serving this call went away before answering; it may or may not have run: check before "
             "repeating it")
"""The error a resumed call stream answers when the call's replica died."""


def local_event_id() -> str:
    """The id of an event no store keeps (a POST's answer stream): a resumption with it finds nothing."""
    return f"local-{next(EVENT_NUMBERS)}"


def dump_message(message: JSONRPCMessage | None) -> bytes:
    if message is None:
        return b""  # a priming event: an id to resume from, nothing to send
    return MESSAGE.dump_json(message, by_alias=True, exclude_none=True)


class MemorySessionEvents(EventStore):
    """The same, in this process (tests; one process serving as several replicas)."""

    def __init__(self, max_events: int = 1000) -> None:
        self._events: list[tuple[str, bytes]] = []
        self._max_events = max_events
        self._next = itertools.count(1)

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        if stream_id != GET_STREAM:
            return local_event_id()
        event_id = f"{next(self._next)}-0"
        self._events = [*self._events, (event_id, dump_message(message))][-self._max_events:]
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        if last_event_id.startswith("local-"):
            return None
        after = int(last_event_id.split("-")[0]) if last_event_id.split("-")[0].isdigit() else 0
        for event_id, raw in list(self._events):
            if int(event_id.split("-")[0]) > after and raw:
                await send_callback(EventMessage(MESSAGE.validate_json(raw), event_id))
        return GET_STREAM


def message_of(method: str, params: dict[str, Any] | None) -> JSONRPCMessage:
    """A notification as the event store keeps it."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        body["params"] = params
    message: JSONRPCMessage = MESSAGE.validate_python(body)
    return message

