"""Resource subscriptions through the gateway: each session's subscriptions, each held on the upstream connection
that serves that session, and each update delivered to the sessions subscribed through that very connection."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types

from ...errors import LazyToolsError
from ...origin import ClientSide
from .offerings import MAX_NAMED_URI
from .relay import Relay, deliver
from .resources import ResourceRoutes
from .upstream import Upstream

__all__ = ["MAX_SUBSCRIPTIONS", "ResourceSubscriptions"]

logger = logging.getLogger(__name__)

MAX_SUBSCRIPTIONS = 1_000
"""Resource subscriptions one session may hold at once; past it a new one is refused (unsubscribing makes room). Each
is kept here and on the upstream: a client subscribing to templated URIs one after another grew both without end
(20,000 held 8 MiB more in each)."""


class ResourceSubscriptions:
    """Which session is subscribed to which URI, through which connection."""

    def __init__(self, routes: ResourceRoutes, relay: Relay) -> None:
        self.routes = routes
        self.relay = relay
        self._subscribers: dict[str, dict[str, Upstream]] = {}
        """By subscribed URI: the sessions subscribed, each with the connection its subscription went through (the
        session's own for `"scope": "session"`); only that connection's updates of that URI reach it."""
        self._by_session: dict[str, set[str]] = {}
        """The same subscriptions by session: what one session holds here."""
        self._wanted: Callable[[str, str], Awaitable[bool]] | None = None

    async def subscribe(self, uri: str, client: ClientSide) -> None:
        if len(uri) > MAX_NAMED_URI:
            # The count alone bounded nothing: 1,000 URIs of a request body's size each were kept here and on the
            # upstream. Replicas refuse the same (state/sync.py, MAX_SUBSCRIPTION_URI).
            raise LazyToolsError(f"Cannot subscribe: the URI is longer than {MAX_NAMED_URI} characters")
        upstream = self.routes.upstream_for(uri)
        if not upstream.offerings.subscribe:
            raise LazyToolsError(f"Upstream server {upstream.name!r} does not offer resource subscriptions")
        # The connection that serves this session: its own for `"scope": "session"`, else the shared one.
        per_session = upstream.hooks.per_session
        connection = await per_session(upstream, client.key) if per_session is not None else upstream
        keys = self._subscribers.get(uri, {})
        if keys.get(client.key) is connection:
            return
        held = self._by_session.get(client.key, set())
        if uri not in held and len(held) >= MAX_SUBSCRIPTIONS:
            raise LazyToolsError(f"A session may hold at most {MAX_SUBSCRIPTIONS:,} resource subscriptions at once; "
                                 "unsubscribe from one first")
        if client.key in keys:  # the URI moved to another server since: leave the old subscription first
            await self.unsubscribe(uri, client)
            keys = self._subscribers.get(uri, {})
        if not any(other is connection for other in keys.values()):  # one upstream subscription per connection
            await connection.request(types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)),
                                     types.EmptyResult, f"subscribing to {uri!r}")
        self._subscribers.setdefault(uri, {})[client.key] = connection
        self._by_session.setdefault(client.key, set()).add(uri)

    async def unsubscribe(self, uri: str, client: ClientSide) -> None:
        keys = self._subscribers.get(uri)
        if keys is None or client.key not in keys:
            return
        connection = keys.pop(client.key)
        if not keys:
            del self._subscribers[uri]
        held = self._by_session.get(client.key)
        if held is not None:
            held.discard(uri)
            if not held:
                del self._by_session[client.key]
        if not any(other is connection for other in keys.values()):
            await connection.request(types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri)),
                                     types.EmptyResult, f"unsubscribing from {uri!r}")

    async def resource_updated(self, upstream: Upstream, uri: str) -> None:
        """An update reaches only the sessions whose subscription to `uri` went through this very connection:
        not another session of a per-session server, not a session subscribed to another server's URI."""
        note = types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))
        keys = [key for key, connection in self._subscribers.get(uri, {}).items() if connection is upstream]
        if not keys:
            logger.debug("upstream %r announced an update of %.200r, which no session subscribed to through it",
                         upstream.name, uri)
        for key in keys:
            if self._wanted is not None and not await self._wanted(key, uri):
                # Shared sessions: the session unsubscribed on another replica, or ended there. Dropped here now.
                await self.leave(uri, key)
                continue
            client = self.relay.clients.get(key)
            if client is not None:
                await deliver(client, note)

    def subscribed(self, key: str) -> set[str]:
        """The URIs session `key` is subscribed to through this process's connections."""
        return set(self._by_session.get(key, ()))

    def check_updates(self, wanted: Callable[[str, str], Awaitable[bool]]) -> None:
        """Ask `wanted(key, uri)` before an update reaches a session (shared sessions: whether the session's record
        still holds the subscription); a session that no longer wants it is unsubscribed here."""
        self._wanted = wanted

    async def leave(self, uri: str, key: str) -> None:
        try:
            await self.unsubscribe(uri, _Gone(key))
        except Exception as exc:  # the upstream may be gone too
            logger.debug("unsubscribing %.200r for session %s failed: %s", uri, key[:8], exc)


class _Gone:
    """A session that has ended, known only by its key."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.capabilities: types.ClientCapabilities | None = None

    def wants_log(self, level: types.LoggingLevel) -> bool:
        return False

    async def notify(self, notification: types.ServerNotification) -> None:
        return None

    async def request(self, request: types.ServerRequest, result_type: type[Any]) -> Any:
        raise LazyToolsError("the session has ended")
