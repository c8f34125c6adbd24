"""Log levels through the gateway: each session is filtered at the level it asked for; shared upstreams are asked
for the most verbose level any session wants (a session that set none wants everything: `debug`); a session's own
connections (`"scope": "session"`) for its level, since their logs reach no other session."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import mcp_types as types

from ...errors import LazyToolsError
from ...origin import LOG_LEVELS
from .relay import Relay
from .upstream import Upstream

__all__ = ["LogLevels"]

logger = logging.getLogger(__name__)


class LogLevels:
    """The levels sessions asked for, and the one the shared upstreams were sent."""

    def __init__(self, upstreams: list[Upstream], relay: Relay) -> None:
        self.upstreams = upstreams
        self.relay = relay
        self._levels: dict[str, types.LoggingLevel] = {}
        self._shared: types.LoggingLevel | None = None

    def of(self, key: str) -> types.LoggingLevel | None:
        """The level session `key` asked for: its own connections get it from the start."""
        return self._levels.get(key)

    def shared(self) -> types.LoggingLevel | None:
        """The level the shared upstreams were asked for: a reconnected upstream gets it again."""
        return self._shared

    async def set(self, key: str, level: types.LoggingLevel, own: Sequence[Upstream] = ()) -> None:
        """Session `key`'s `logging/setLevel`; `own` are its own connections."""
        self._levels[key] = level
        await self.apply()
        for upstream in own:
            await _send_level(upstream, level)

    async def forget(self, key: str) -> None:
        self._levels.pop(key, None)
        await self.apply(gone=key)

    async def apply(self, gone: str | None = None) -> None:
        """Ask the shared upstreams for the most verbose level the sessions (but `gone`) want, if it changed."""
        if not self._levels:
            return  # no session ever asked: upstreams keep their own default
        keys = {c.key for c in self.relay.clients if c.key != gone} | set(self._levels)
        lowest = min((self._levels.get(key, "debug") for key in keys), key=LOG_LEVELS.index, default=None)
        if lowest is None or lowest == self._shared:
            return
        self._shared = lowest
        for upstream in self.upstreams:
            await _send_level(upstream, lowest)


async def _send_level(upstream: Upstream, level: types.LoggingLevel) -> None:
    if not upstream.logs:
        return
    try:
        # No progressToken: setLevel is not a call that reports progress.
        await upstream.request(types.SetLevelRequest(params=types.SetLevelRequestParams(level=level)),
                               types.EmptyResult, "logging/setLevel", progress=False)
    except LazyToolsError as exc:
        logger.info("upstream %r: setting its log level failed: %s", upstream.name, exc)
