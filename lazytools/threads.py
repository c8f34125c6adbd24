"""Limits on worker threads: one limiter per event loop (anyio's limiters belong to the loop they were made in, and
a process may run several loops one after another: tests, `anyio.run` per command), and the pool in-process tools
run in, of which each session holds at most its share, and the time a call of one may take.

A thread cannot be stopped from outside. When a call's time is up its caller stops waiting (and answers with a
timeout error at once), but the thread runs on to its end and keeps its token of the pool and of the session's share
until then: a tool that runs past its time costs its session a thread for as long as it really runs, no more, and
no number of timed-out calls can start more threads than the pool has."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

__all__ = ["TOOL_THREADS", "call_time_limit", "in_tool_thread", "loop_limiter", "threads_for"]


def loop_limiter(var: RunVar[anyio.CapacityLimiter], tokens: float) -> anyio.CapacityLimiter:
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
_UNBOUNDED: RunVar[anyio.CapacityLimiter] = RunVar("lazytools_tool_threads_unbounded")
"""What anyio is told to limit tool threads by: nothing (our own tokens, held until the thread ends, do)."""
_CALLER_THREADS: ContextVar[anyio.CapacityLimiter | None] = ContextVar("lazytools_caller_threads", default=None)
_TIME_LIMIT: ContextVar[float | None] = ContextVar("lazytools_call_time_limit", default=None)


@contextmanager
def threads_for(limiter: anyio.CapacityLimiter | None, *, time_limit: float | None = None) -> Iterator[None]:
    """Tool calls made inside this block also take a token of `limiter` (the calling session's share of the
    pool) while their thread runs, so one session's slow calls cannot take every thread of the pool; in-process
    tools get `time_limit` seconds (see `call_time_limit`)."""
    token = _CALLER_THREADS.set(limiter)
    limit = _TIME_LIMIT.set(time_limit)
    try:
        yield
    finally:
        _TIME_LIMIT.reset(limit)
        _CALLER_THREADS.reset(token)


def call_time_limit() -> float | None:
    """Seconds an in-process tool called now may take (None: no limit, outside a server's call)."""
    return _TIME_LIMIT.get()


def _pool() -> anyio.CapacityLimiter:
    return loop_limiter(_TOOL_LIMITER, TOOL_THREADS)


async def in_tool_thread(run: Callable[[], Any]) -> Any:
    """`run` in a thread of the tool pool, holding a token of the caller's share meanwhile (see `threads_for`).

    Cancelled (a time limit), it returns at once; the tokens stay taken until `run` ends (the module's docstring),
    and a `run` that had not started yet never starts."""
    limiters = [limiter for limiter in (_CALLER_THREADS.get(), _pool()) if limiter is not None]
    slot = _Slot(limiters, asyncio.get_running_loop())
    await slot.take()
    try:
        return await anyio.to_thread.run_sync(slot.runner(run), abandon_on_cancel=True,
                                              limiter=loop_limiter(_UNBOUNDED, math.inf))
    finally:
        slot.caller_done()


class _Slot:
    """The tokens one tool thread holds, given back by whichever ends last: the thread, or its caller."""

    def __init__(self, limiters: list[anyio.CapacityLimiter], loop: asyncio.AbstractEventLoop) -> None:
        self._limiters = limiters
        self._loop = loop
        self._lock = threading.Lock()
        self._started = self._finished = self._abandoned = False

    async def take(self) -> None:
        taken: list[anyio.CapacityLimiter] = []
        try:
            for limiter in self._limiters:
                await limiter.acquire_on_behalf_of(self)
                taken.append(limiter)
        except BaseException:
            for limiter in reversed(taken):
                limiter.release_on_behalf_of(self)
            raise

    def _give_back(self) -> None:
        for limiter in reversed(self._limiters):
            limiter.release_on_behalf_of(self)

    def runner(self, run: Callable[[], Any]) -> Callable[[], Any]:
        def body() -> Any:
            with self._lock:
                if self._abandoned:
                    return None  # its caller is gone and has given the tokens back
                self._started = True
            try:
                return run()
            finally:
                with self._lock:
                    self._finished = True
                    orphaned = self._abandoned
                if orphaned:
                    try:
                        self._loop.call_soon_threadsafe(self._give_back)
                    except RuntimeError:  # the loop is closed: its limiters are gone with it
                        pass
        return body

    def caller_done(self) -> None:
        """On the loop, once the caller stops waiting: give the tokens back now unless the thread still runs."""
        with self._lock:
            running = self._started and not self._finished
            self._abandoned = running or not self._started
        if not running:
            self._give_back()
