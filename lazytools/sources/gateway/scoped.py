"""Per-session upstreams (`"scope": "session"`): one connection per client session, stopped when it ends.

A shared upstream serves every session from one process (or one HTTP session), so a stateful server (memory,
sequential thinking) would carry one user's state into the next user's calls. With `"scope": "session"` the shared
connection still lists the server's tools, prompts and resources (and serves requests outside any session); each
client session's first request to the server starts a connection of its own, which serves that session only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

import anyio
import anyio.abc
import httpx2
import mcp_types as types

from ...catalog import Catalog
from ...errors import UpstreamUnavailableError
from ...settings import Settings
from .lifecycle import Backoff
from .relay import Relay
from .upstream import Hooks, Upstream

__all__ = ["SessionUpstreams"]

logger = logging.getLogger(__name__)


class SessionUpstreams:
    """The per-session connections of an open gateway, at most `limit` at once."""

    def __init__(self, tg: anyio.abc.TaskGroup, settings: Settings, relay: Relay, *, backoff: Backoff, chain: str,
                 limit: int, level_of: Callable[[str], types.LoggingLevel | None] = lambda key: None) -> None:
        self._tg = tg
        self._settings = settings
        self._relay = relay
        self._backoff = backoff
        self._chain = chain
        self.limit = limit
        self._live: dict[tuple[str, str], tuple[Upstream, anyio.CancelScope]] = {}
        self.level_of = level_of
        """The log level a session asked for (log_levels.py): its own connections get that level."""

    def __len__(self) -> int:
        return len(self._live)

    def of(self, key: str) -> list[Upstream]:
        return [upstream for (_, owner), (upstream, _) in self._live.items() if owner == key]

    async def instance(self, shared: Upstream, key: str, *, auth: httpx2.Auth | None = None) -> Upstream:
        """`shared`'s connection for session `key` (or user, credentials.py), started on first use; `auth` gives
        an HTTP connection's credentials per request."""
        found = self._live.get((shared.name, key))
        if found is not None:
            return found[0]
        if len(self._live) >= self.limit:
            raise UpstreamUnavailableError(shared.name, f"{len(self._live)} per-session connections are open, the "
                                                        "most LAZYTOOLS_MAX_SESSION_UPSTREAMS allows; try again "
                                                        "when a session ends")
        # Its own catalog: the shared connection's entries are the ones served; this one only answers.
        hooks = Hooks(resource_updated=shared.hooks.resource_updated, wanted_level=partial(self.level_of, key))
        upstream = Upstream(shared.config, catalog=Catalog(), settings=self._settings, backoff=self._backoff,
                            chain=self._chain, relay=self._relay, owner=key, auth=auth, hooks=hooks)
        scope = anyio.CancelScope()
        self._live[(shared.name, key)] = (upstream, scope)
        self._tg.start_soon(self._run, upstream, scope, name=f"upstream {shared.name} for session {key[:8]}")
        logger.info("upstream %r: starting a connection for session %s", shared.name, key[:8])
        return upstream

    @staticmethod
    async def _run(upstream: Upstream, scope: anyio.CancelScope) -> None:
        with scope:
            await upstream.run()

    def stop_one(self, name: str, key: str) -> None:
        """Stop the connection of server `name` for `key`, if it runs."""
        found = self._live.pop((name, key), None)
        if found is not None:
            found[1].cancel()
            logger.info("upstream %r: stopped the connection of %s", name, key[:13])

    def stop(self, key: str) -> None:
        """Stop every connection of session `key` (its processes end, its HTTP sessions close)."""
        for (name, owner), (_, scope) in list(self._live.items()):
            if owner == key:
                scope.cancel()
                del self._live[(name, owner)]
                logger.info("upstream %r: stopped the connection of session %s", name, key[:8])
