"""A session's GET-stream events kept in Redis, for `Last-Event-ID` resumption at any replica (events.py says which
events are kept). A POST's events get ids that name the replica serving the request (event_ids.py): resumed at
another replica, the request is answered with an error once that replica is gone (liveness.py).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import JSONRPCMessage
from redis.exceptions import RedisError

from .event_ids import CallEvent, call_event_id, parse_call_event_id
from .events import EVENT_NUMBERS, GET_STREAM, MESSAGE, WENT_AWAY, dump_message, local_event_id

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from .liveness import Liveness

__all__ = ["RedisSessionEvents"]

logger = logging.getLogger(__name__)

_STREAM_ID = re.compile(r"\d{1,20}-\d{1,20}")
"""A Redis stream entry id; a `Last-Event-ID` of any other form is no position (and never reaches XRANGE)."""


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
                return local_event_id()
            return call_event_id(self._liveness.replica, next(EVENT_NUMBERS), stream_id) or local_event_id()
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.xadd(self._key, {"m": dump_message(message)}, maxlen=self._max_events, approximate=True)
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
                message = MESSAGE.validate_json(raw)
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
