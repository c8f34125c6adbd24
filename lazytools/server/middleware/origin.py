"""Each request an upstream may serve runs as its origin (`lazytools.origin`)."""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext

from ...origin import calling
from ...sdk import CallNext, HandlerResult
from ..passthrough import FORWARDED, SessionOf, origin_of

__all__ = ["OriginMiddleware"]


class OriginMiddleware:
    """`ServerMiddleware`: each request that an upstream may serve runs as its origin (`lazytools.origin`), so
    what the upstream sends meanwhile (progress, logs, requests for the client) goes back to that request."""

    def __init__(self, session_of: SessionOf) -> None:
        self._session_of = session_of

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None or ctx.method not in FORWARDED:
            return await call_next(ctx)
        state = self._session_of(ctx)
        with calling(origin_of(ctx, state.client if state is not None else None)):
            return await call_next(ctx)
