"""Limits on worker threads, one per event loop: anyio's limiters belong to the loop they were made in, and a
process may run several loops one after another (tests, `anyio.run` per command)."""

from __future__ import annotations

import anyio
from anyio.lowlevel import RunVar

__all__ = ["loop_limiter"]


def loop_limiter(var: RunVar[anyio.CapacityLimiter], tokens: int) -> anyio.CapacityLimiter:
    """The running loop's limiter held in `var`, made with `tokens` on first use."""
    try:
        return var.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(tokens)
        var.set(limiter)
        return limiter
