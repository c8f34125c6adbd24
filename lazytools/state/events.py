"""Event stores for `Last-Event-ID` resumption of a session's GET stream on any replica (the SDK's `EventStore`).

One store per session (the SDK names streams by request id, which repeats across sessions). Only the GET stream's
events are kept: they are what a client that reconnects to another replica must not miss (list changes, resource
updates, logs outside a call). A POST's events answer one request on the replica that serves it and are not kept:
with Redis their ids name that replica and the request (liveness.py), so a resumption at another replica answers
the request with a JSON-RPC error once that replica is dead (it died before answering); elsewhere, and in memory,
a resumption with one finds nothing.
"""

from __future__ import annotations

import itertools
import logging
import re
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import JSONRPCMessage
from pydantic import TypeAdapter
from redis.exceptions import RedisError

from .liveness import CallEvent, Liveness, call_event_id, parse_call_event_id

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["GET_STREAM", "WENT_AWAY", "MemorySessionEvents", "RedisSessionEvents", "message_of"]

GET_STREAM = "_GET_stream"
"""The SDK's stream id for a session's GET stream (`mcp.server.streamable_http.GET_STREAM_KEY`)."""

logger = logging.getLogger(__name__)

_MESSAGE: TypeAdapter[Any] = TypeAdapter(JSONRPCMessage)
_STREAM_ID = re.compile(r"\d{1,20}-\d{1,20}")
"""A Redis stream entry id; a `Last-Event-ID` of any other form is no position (and never reaches XRANGE)."""
_LOCAL_IDS = itertools.count(1)

WENT_AWAY = ("the replica serving this call went away before answering; it may or may not have run: check before "
             "repeating it")
"""The error a resumed call stream answers when the call's replica died."""


def _local_id() -> str:
    return f"local-{next(_LOCAL_IDS)}"


def _dump(message: JSONRPCMessage | None) -> bytes:
    if message is None:
        return b""  # a priming event: an id to resume from, nothing to send
    return _MESSAGE.dump_json(message, by_alias=True, exclude_none=True)


class RedisSessionEvents(EventStore):
    """A session's GET stream events in a Redis stream (capped, expiring with the session)."""

    def __init__(self, client: Redis, key: str, *, ttl: float, max_events: int,
                 liveness: Liveness | None = None) -> None:
        self._client = client
        self._key = key
        self._ttl = max(1, int(ttl))
        self._max_events = max_events
        self._liveness = liveness

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        if stream_id != GET_STREAM:
            if self._liveness is None:
                return _local_id()
            return call_event_id(self._liveness.replica, next(_LOCAL_IDS), stream_id) or _local_id()
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.xadd(self._key, {"m": _dump(message)}, maxlen=self._max_events, approximate=True)
                pipe.expire(self._key, self._ttl)
                added, _ = await pipe.execute()
        except (RedisError, OSError, TimeoutError) as exc:
            # The SDK's message router calls this and dies on an exception, leaving the session's GET stream open
            # but silent. Without Redis the message still goes out live, with no id: the client's resumption point
            # stays the last stored event. A priming event (no message) has nothing to deliver: the stream it would
            # open fails and the client reconnects.
            if message is None:
                raise
            logger.warning("GET-stream event not stored, sent without an id (no resumption past it): %s",
                           type(exc).__name__)
            return ""
        return added.decode() if isinstance(added, bytes) else str(added)

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        if last_event_id.startswith("local-"):
            return None
        call = parse_call_event_id(last_event_id)
        if call is not None:
            await self._resume_call(call, send_callback)
            return None
        if not _STREAM_ID.fullmatch(last_event_id):
            return GET_STREAM  # not an id this server gave: as if the client sent none
        try:
            entries: Any = await self._client.xrange(self._key, min=f"({last_event_id}", max="+",
                                                     count=self._max_events)
        except (RedisError, OSError, TimeoutError) as exc:
            logger.warning("GET-stream events not replayed (session store unavailable): %s", type(exc).__name__)
            return GET_STREAM
        for event_id, fields in entries or ():
            raw = fields.get(b"m", b"") if fields else b""
            if raw:
                message = _MESSAGE.validate_json(raw)
                await send_callback(EventMessage(message, bytes(event_id).decode()))
        # Events past the cap or the TTL are gone; the stream still goes live from here.
        return GET_STREAM

    async def _resume_call(self, call: CallEvent, send_callback: EventCallback) -> None:
        """A request's answer stream resumed here: held while the replica serving the request is alive, then its
        answer is that replica's death (a JSON-RPC error, the stream ends). Resumed on that replica itself, or with
        Redis away, it ends at once with nothing: the client resumes again (another replica, a moment later)."""
        liveness = self._liveness
        if liveness is None or call.replica == liveness.replica:
            return
        if not await liveness.gone(call.replica):
            return
        logger.warning("request %s of a session ran on replica %s, which went away before answering: answered "
                       "with an error", str(call.request_id)[:16], call.replica)
        error = types.JSONRPCError(jsonrpc="2.0", id=call.request_id,
                                   error=types.ErrorData(code=types.INTERNAL_ERROR, message=WENT_AWAY))
        await send_callback(EventMessage(error, None))


class MemorySessionEvents(EventStore):
    """The same, in this process (tests; one process serving as several replicas)."""

    def __init__(self, max_events: int = 1000) -> None:
        self._events: list[tuple[str, bytes]] = []
        self._max_events = max_events
        self._next = itertools.count(1)

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        if stream_id != GET_STREAM:
            return _local_id()
        event_id = f"{next(self._next)}-0"
        self._events = [*self._events, (event_id, _dump(message))][-self._max_events:]
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        if last_event_id.startswith("local-"):
            return None
        after = int(last_event_id.split("-")[0]) if last_event_id.split("-")[0].isdigit() else 0
        for event_id, raw in list(self._events):
            if int(event_id.split("-")[0]) > after and raw:
                await send_callback(EventMessage(_MESSAGE.validate_json(raw), event_id))
        return GET_STREAM


def message_of(method: str, params: dict[str, Any] | None) -> JSONRPCMessage:
    """A notification as the event store keeps it."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        body["params"] = params
    message: JSONRPCMessage = _MESSAGE.validate_python(body)
    return message

