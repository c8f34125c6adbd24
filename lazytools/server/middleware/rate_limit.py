"""The server middleware that holds each principal to its calls per minute (policy/limits.py) on tools/call,
prompts/get and resources/read, whatever the route: a refused tool call is an `isError` result naming the limit
and when to try again, a refused prompt or resource a JSON-RPC error with the same message."""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

from ...audit import note_reason
from ...errors import RateLimitedError
from ...identity import Principal
from ...policy.limits import RateLimiter, Verdict
from ...safetext import clip
from ..access import Gate

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

    def limit_of(self, principal: Principal) -> int | None:
        """The principal's calls per minute: its policy grant's, else the default; None for no limit."""
        grant = self.gate.grant(principal)
        return grant.calls_per_minute if grant is not None and grant.calls_per_minute else self.default

    async def count(self, principal: Principal, what: str, *, counter: str = "") -> tuple[int, Verdict] | None:
        """Count one `what` (a method) of `principal`; (its limit, the verdict) when refused, else None. A `counter`
        counts apart from the principal's calls, against the same limit (new sessions: opening one is no call)."""
        limit = self.limit_of(principal)
        if limit is None:
            return None
        try:
            verdict = await self.limiter.hit(f"{counter}{principal.key}", limit)
        except Exception as exc:  # the shared store is down: serve (a limit is not worth an outage), say so
            logger.warning("rate limit not counted for %s: %s: %s", clip(principal.key), type(exc).__name__,
                           clip(str(exc)))
            return None
        if verdict.allowed:
            return None
        self.refusals += 1
        # The principal's name is the token's to choose: escaped, cut, like any untrusted text in a log line.
        logger.info("%s refused for %s: %d calls this minute, limit %d", what, clip(principal.key), verdict.count,
                    limit)
        return limit, verdict

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method not in LIMITED_METHODS or ctx.request_id is None:
            return await call_next(ctx)
        principal = self.gate.principal()
        refused = await self.count(principal, ctx.method)
        if refused is None:
            return await call_next(ctx)
        limit, verdict = refused
        note_reason("rate_limited")
        error = RateLimitedError(principal.name, limit, verdict.retry_after)
        if ctx.method == "tools/call":
            return types.CallToolResult(content=[types.TextContent(text=str(error))], is_error=True)
        raise MCPError(code=RATE_LIMITED, message=str(error), data={"retryAfter": round(verdict.retry_after)})
