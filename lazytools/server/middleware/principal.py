"""Whose request this is: the server middleware that makes the request's `Principal` the current one.

Over HTTP the edge (transports/http_auth.py) leaves the principal on the request's ASGI scope; a request without
one there acts as `ANONYMOUS`. Over stdio, and in memory, there is no request object: the principal is the
settings' named stdio user. Everything the handler awaits (upstream calls and their credentials, audit, policy)
reads it with `identity.current_principal()`.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext

from ...identity import ANONYMOUS, SCOPE_KEY, Principal, acting_as, current_principal
from ...sdk import CallNext, HandlerResult

__all__ = ["PrincipalMiddleware", "principal_of"]


def principal_of(ctx: ServerRequestContext[Any, Any], local: Principal) -> Principal:
    """The principal of `ctx`: from its HTTP request, else `local` (stdio, memory)."""
    request = ctx.request
    if request is None:
        return local
    scope = getattr(request, "scope", None)
    found = scope.get(SCOPE_KEY) if isinstance(scope, dict) else None
    return found if isinstance(found, Principal) else ANONYMOUS


class PrincipalMiddleware:
    """`ServerMiddleware`: runs every request as its principal."""

    def __init__(self, local: Principal) -> None:
        self.local = local

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        principal = principal_of(ctx, self.local)
        if current_principal() is principal:  # the HTTP edge made it current already
            return await call_next(ctx)
        with acting_as(principal):
            return await call_next(ctx)
