"""The server middleware that holds each principal to its calls per minute (policy/limits.py) on tools/call,
prompts/get and resources/read, whatever the route: a refused tool call is an `isError` result naming the limit
and when to try again, a refused prompt or resource a JSON-RPC error with the same message."""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

from ..audit import note_reason
from ..errors import RateLimitedError
from ..policy.limits import RateLimiter
from .access import Gate

__all__ = ["LIMITED_METHODS", "RATE_LIMITED", "RateLimitMiddleware"]

logger = logging.getLogger(__name__)

LIMITED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read", "completion/complete"})
RATE_LIMITED = -32029
"""The JSON-RPC error code of a refused prompt or resource (implementation-defined range, as HTTP's 429)."""


class RateLimitMiddleware:
    """`ServerMiddleware`: counts each limited request against its principal's limit (the policy's for it, else
    `default` calls per minute; none when both are unset)."""

    def __init__(self, limiter: RateLimiter, gate: Gate, *, default: int | None) -> None:
        self.limiter = limiter
        self.gate = gate
        self.default = default or None
        self.refusals = 0
        """Requests refused so far (the metrics read it)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method not in LIMITED_METHODS or ctx.request_id is None:
            return await call_next(ctx)
        principal = self.gate.principal()
        grant = self.gate.grant(principal)
        limit = grant.calls_per_minute if grant is not None and grant.calls_per_minute else self.default
        if limit is None:
            return await call_next(ctx)
        try:
            verdict = await self.limiter.hit(principal.key, limit)
        except Exception as exc:  # the shared store is down: serve (a limit is not worth an outage), say so
            logger.warning("rate limit not counted for %s: %s: %s", principal.key, type(exc).__name__, exc)
            return await call_next(ctx)
        if verdict.allowed:
            return await call_next(ctx)
        self.refusals += 1
        note_reason("rate_limited")
        error = RateLimitedError(principal.name, limit, verdict.retry_after)
        logger.info("%s refused for %s: %d calls this minute, limit %d", ctx.method, principal.key, verdict.count,
                    limit)
        if ctx.method == "tools/call":
            return types.CallToolResult(content=[types.TextContent(text=str(error))], is_error=True)
        raise MCPError(code=RATE_LIMITED, message=str(error), data={"retryAfter": round(verdict.retry_after)})
