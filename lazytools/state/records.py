"""A session's record: every piece of per-session state that outlives a request, as plain JSON-ready data.

The server keeps a live `SessionState` per session it serves; with a shared store it loads this record at the start
of each request and writes back what the request changed, so any replica can serve the next one.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["SessionRecord"]


@dataclass(slots=True)
class SessionRecord:
    key: str
    """The session id (`Mcp-Session-Id`)."""
    surface: str
    """"dynamic" or "proxy", chosen once at initialize."""
    protocol_version: str
    """The handshake era version negotiated at initialize."""
    client_params: dict[str, Any] | None = None
    """What the server reads again of the client's `initialize` params: its name and version, its capability flags
    (bounded: server/middleware/shared_sessions.py)."""
    enabled: list[str] = field(default_factory=list)
    """Tools enabled by search, in the order they were enabled."""
    used_at: dict[str, int] = field(default_factory=dict)
    """When each enabled tool was last found or called (a counter): least recent leave first at the cap."""
    clock: int = 0
    log_level: str | None = None
    """The client's `logging/setLevel`, if it sent one."""
    uris: dict[str, list[str]] = field(default_factory=dict)
    """Resource URIs the session's calls and prompts named, by upstream name (where to read them), newest last."""
    subscriptions: list[str] = field(default_factory=list)
    """The resource URIs the session subscribed to (`resources/subscribe`), oldest first: every replica that serves
    the session subscribes at its own upstream connection for them."""
    owner: dict[str, str | None] | None = None
    """The credential that opened the session (the SDK's `AuthorizationContext`: client id, issuer, subject), when
    the request carried a verified token: every request of the session must carry the same."""
    last_search: dict[str, Any] | None = None
    """Learning from use: the session's latest search that returned tools, `{"id", "terms", "returned"}` (its hashed
    terms and the tools it returned, bounded: server/learning.py), so that a call served by any replica is linked
    to it."""
    last_called: str | None = None
    """Learning from use: the catalog tool the session called last, wherever it was served."""
    rev: int = 0
    """Bumped by every write: a write made from an older revision is refused and redone on the newer one."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> SessionRecord:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a session record is a JSON object")
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)
