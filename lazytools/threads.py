"""Limits on worker threads: one limiter per event loop (anyio's limiters belong to the loop they were made in, and
a process may run several loops one after another: tests, `anyio.run` per command), and the pool in-process tools
run in, of which each session holds at most its share."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

__all__ = ["TOOL_THREADS", "in_tool_thread", "loop_limiter", "threads_for"]


def loop_limiter(var: RunVar[anyio.CapacityLimiter], tokens: int) -> anyio.CapacityLimiter:
    """The running loop's limiter held in `var`, made with `tokens` on first use."""
    try:
        return var.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(tokens)
        var.set(limiter)
        return limiter


TOOL_THREADS = 32
"""Worker threads in-process tools may use at once, per event loop: a pool of their own, so that tools that
block cannot take the threads searches and argument checks run in."""
_TOOL_LIMITER: RunVar[anyio.CapacityLimiter] = RunVar("lazytools_tool_threads")
_CALLER_THREADS: ContextVar[anyio.CapacityLimiter | None] = ContextVar("lazytools_caller_threads", default=None)


@contextmanager
def threads_for(limiter: anyio.CapacityLimiter | None) -> Iterator[None]:
    """Tool calls made inside this block also take a token of `limiter` (the calling session's share of the
    pool) while their thread runs, so one session's slow calls cannot take every thread of the pool."""
    token = _CALLER_THREADS.set(limiter)
    try:
        yield
    finally:
        _CALLER_THREADS.reset(token)


def _pool() -> anyio.CapacityLimiter:
    return loop_limiter(_TOOL_LIMITER, TOOL_THREADS)


async def in_tool_thread(run: Callable[[], Any]) -> Any:
    """`run` in a thread of the tool pool, holding a token of the caller's share meanwhile (see `threads_for`)."""
    share = _CALLER_THREADS.get()
    if share is None:
        return await anyio.to_thread.run_sync(run, limiter=_pool())
    async with share:
        return await anyio.to_thread.run_sync(run, limiter=_pool())
