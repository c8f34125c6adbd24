"""Event ids of a call's answer stream that name the replica serving it, and the replica ids they carry.

A request answered as SSE (a `tools/call` with progress, or any POST with the priming event) gets event ids
`c.<replica>.<n>.<request id, base64url>`: when that replica dies the client resumes the stream with `Last-Event-ID`
at another replica, which reads from the id whose request it was and where it ran, waits until that replica is gone
(liveness.py), and answers the request with a JSON-RPC error (redis_events.py). Nothing is run again: a resumed
stream only ever answers.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from uuid import uuid4

__all__ = ["CallEvent", "call_event_id", "new_replica_id", "parse_call_event_id"]

_MAX_REQUEST_ID = 128
"""Characters of a request id an event id carries; a longer id gets a local event id (no resumption elsewhere)."""

_CALL_EVENT = re.compile(r"c\.([0-9a-f]{16})\.(\d{1,20})\.([A-Za-z0-9_-]{1,172})")
"""`c.<replica>.<n>.<request id>`: 172 base64url characters hold 128 bytes."""

_INTEGER = re.compile(r"-?(?:0|[1-9]\d{0,18})")


def new_replica_id() -> str:
    """A replica's id for its process's lifetime (a restarted replica is another one: its calls did not survive)."""
    return uuid4().hex[:16]


@dataclass(frozen=True, slots=True)
class CallEvent:
    """What a call stream's event id says: the replica that served the request, and the request's id."""

    replica: str
    request_id: str | int


def call_event_id(replica: str, n: int, stream_id: str) -> str | None:
    """The id of event `n` of request `stream_id`'s answer stream on `replica`; None for a request id too long to
    carry."""
    if not stream_id or len(stream_id) > _MAX_REQUEST_ID:
        return None
    encoded = base64.urlsafe_b64encode(stream_id.encode()).decode().rstrip("=")
    if len(encoded) > 172:
        return None  # a request id of wide characters
    return f"c.{replica}.{n}.{encoded}"


def parse_call_event_id(value: str) -> CallEvent | None:
    """The replica and request a `Last-Event-ID` names, if it is a call stream's id (else None)."""
    found = _CALL_EVENT.fullmatch(value)
    if found is None:
        return None
    encoded = found.group(3)
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    # The SDK names a request's stream str(id): an id that reads as an integer was one (what clients send).
    request_id: str | int = int(raw) if _INTEGER.fullmatch(raw) else raw
    return CallEvent(found.group(1), request_id)
