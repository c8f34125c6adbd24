"""The layers in front of `/mcp`, folded into one ASGI app that makes every one of their checks in their order.

For each request: its header count and size (`HeaderCount`, 431), its Host, Origin and token (`HTTPGuard`), then,
with a principal fixed by the settings (the shared token's user, or anonymous), that principal on the scope
(`PrincipalOnScope`), and the count of requests in flight that a drain waits for (`InFlight`). Each layer is
still its own class, which the other routes are served through; here the headers are read once (`Head`) and the
request passes one frame instead of four. The OAuth check (two layers of the SDK's) and CORS, when configured,
keep their own places: `build_app` wires the folded edge in where they leave room.
"""

from __future__ import annotations

from contextlib import nullcontext

from starlette.types import ASGIApp, Receive, Scope, Send

from ..identity import SCOPE_KEY, Principal, acting_as
from .http_drain import InFlight
from .http_guard import HTTPGuard
from .http_head import head_of
from .http_limits import HeaderCount, refuse_head

__all__ = ["Edge"]


class Edge:
    """ASGI app: the checks of `count` (None: made outside this app), then of `guard`; then `principal` (None: set
    by a later layer) on the scope, and `inflight` counting the request (GET streams aside, as `InFlight` does)
    while `app` serves it."""

    def __init__(self, app: ASGIApp, *, guard: HTTPGuard, inflight: InFlight, count: HeaderCount | None = None,
                 principal: Principal | None = None) -> None:
        self.app = app
        self.guard = guard
        self.inflight = inflight
        self.count = count
        self.principal = principal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        head = head_of(scope)
        if self.count is not None:
            too_large = self.count.refusal(head)
            if too_large is not None:
                await refuse_head(send, too_large)
                return
        method = scope["method"]
        refusal = self.guard.refusal(head, scope["path"], method)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        principal = self.principal
        if principal is not None:
            scope[SCOPE_KEY] = principal
        # The principal is current for what runs before the server's middleware (its Mcp-Param check).
        with acting_as(principal) if principal is not None else _AS_BEFORE:
            if method == "GET":
                await self.app(scope, receive, send)
                return
            await self.inflight.counted(self.app, scope, receive, send)


_AS_BEFORE = nullcontext()
"""The current principal left as it is: a later layer sets it (OAuth)."""
