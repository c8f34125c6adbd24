"""The request's `Access` made ready before its handler reads it (access.py)."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from ..access import Gate

__all__ = ["AccessMiddleware"]


class AccessMiddleware:
    """`ServerMiddleware`: makes the request's Access ready before its handler reads it, in a worker thread when
    that means work (a policy file to look at or read, a principal's view to build: a quarter of a second for
    1,000 rules that all apply), so the event loop never does it."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        principal = self.gate.principal()
        if not self.gate.warm(principal):
            await anyio.to_thread.run_sync(self.gate.access, principal)
        return await call_next(ctx)
