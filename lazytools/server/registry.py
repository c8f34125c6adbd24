"""Each connection's session state: made on its first request after the handshake, dropped when it closes.

The surface a session gets is chosen here, once, from the client's name and the protocol version (surface.py).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext

from ..modes import Surface
from ..safetext import clip
from ..sdk import connection_of
from ..settings import Settings
from ..state.sessions import SessionState, SessionStore
from .access import Gate
from .clients import client_table
from .metrics import Metrics
from .passthrough import SessionClient, UpstreamFeatures
from .surface import choose_surface, is_stateless_era

__all__ = ["SessionRegistry", "session_key"]

logger = logging.getLogger(__name__)

_SESSION_KEY = "lazytools.session"


def session_key(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The key of the request's session, if it has one yet (its `Mcp-Session-Id` over HTTP)."""
    connection = connection_of(ctx)
    key = connection.session_id or connection.state.get(_SESSION_KEY)
    return key if isinstance(key, str) else None


class SessionRegistry:
    """The live sessions of this process, by connection: the one place a request finds its `SessionState`."""

    def __init__(self, store: SessionStore, settings: Settings, gate: Gate, *, front: UpstreamFeatures | None = None,
                 metrics: Metrics | None = None) -> None:
        self.store = store
        self.settings = settings
        self.gate = gate
        self.front = front
        self.metrics = metrics
        self._table = client_table(settings.client_surfaces)

    async def may_hear(self, key: str, uri: str) -> bool:
        """Whether session `key` may still hear of `uri`'s updates: the policy in force (re-read when its file
        changed) lets the principal that subscribed see it. A subscription to a resource the policy hides since
        is left, as the resource no longer exists for that principal."""
        state = self.store.get(key)
        client = state.client if state is not None else None
        principal = client.principal if isinstance(client, SessionClient) else None
        if principal is None or self.front is None:
            return True
        return self.gate.access(principal).resource(uri, self.front.uri_server(uri))

    def session_for(self, ctx: ServerRequestContext[Any, Any]) -> SessionState | None:
        """This request's session state, created on first sight; None where the protocol allows no session."""
        if is_stateless_era(ctx.protocol_version):
            return None
        connection = connection_of(ctx)
        if ctx.request is not None and connection.session_id is None:
            return None  # stateless HTTP in the handshake era: every request is a new connection
        return self.session_of(connection, ctx.protocol_version)

    def session_of(self, connection: Connection, protocol_version: str) -> SessionState | None:
        """The session state of a handshake-era connection, created on first sight (also outside a request: a
        shared session's GET stream); None before its handshake."""
        key = connection.state.get(_SESSION_KEY)
        state = self.store.get(key) if key is not None else None
        if state is not None:
            return state
        if not connection.initialize_accepted:
            return None  # a request the SDK will refuse before the handshake (OriginMiddleware sees it first)
        key = connection.session_id or uuid.uuid4().hex
        info = connection.client_params.client_info if connection.client_params is not None else None
        client_name = info.name if info is not None else None
        surface = self.surface_for(client_name, protocol_version)

        async def notify() -> None:
            await connection.outbound.notify("notifications/tools/list_changed", None)

        state = SessionState(key=key, surface=surface, client_name=client_name, notify=notify,
                             client=SessionClient(key, connection))
        connection.state[_SESSION_KEY] = key
        self.store.put(state)
        connection.exit_stack.callback(self.store.drop, key)
        if self.metrics is not None:
            connection.exit_stack.callback(self.metrics.closed, key)
        if self.front is not None:
            connection.exit_stack.push_async_callback(self.front.session_closed, key)
        logger.info("session %s: client %s, %s surface", key[:8], clip(repr(client_name)), surface)
        return state

    def surface_for(self, client_name: str | None, protocol_version: str) -> Surface:
        """The surface a handshake-era session of this client gets (also what a shared store records for it)."""
        return choose_surface(mode=self.settings.mode, protocol_version=protocol_version, has_session=True,
                              client_name=client_name, table=self._table, default=self.settings.default_surface)
