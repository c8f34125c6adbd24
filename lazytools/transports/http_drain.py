"""Readiness (`/readyz`) and drain on SIGTERM, for a load balancer that rolls replicas without a failed call.

`/healthz` says the process is alive; `/readyz` says it should get traffic: 503 while starting, while draining, and
while the shared store (when configured) does not answer. On SIGTERM readiness turns 503 at once; connections keep
being accepted and requests served for at least `grace` seconds (the balancer's checks see the 503 meanwhile), then
until none is in flight and none has started for a moment, or until `drain_seconds`; then the server stops as
uvicorn does.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from .http_limits import GuardedServer

__all__ = ["DrainingServer", "InFlight", "Readiness"]

logger = logging.getLogger(__name__)

_QUIET = 1.0
"""Seconds without a new request after which a draining replica takes it that the balancer sends no more."""


class Readiness:
    """Whether this replica should get traffic, and why not."""

    def __init__(self, check: Callable[[], Awaitable[bool]] | None = None) -> None:
        self.check = check
        self.started = False
        self.draining = False

    async def endpoint(self, request: Request) -> JSONResponse:
        if not self.started:
            return JSONResponse({"status": "starting"}, status_code=503)
        if self.draining:
            return JSONResponse({"status": "draining"}, status_code=503)
        if self.check is not None and not await self.check():
            return JSONResponse({"status": "session store unreachable"}, status_code=503)
        return JSONResponse({"status": "ready"})


class InFlight:
    """ASGI middleware counting requests being served (GET streams aside: they never end by themselves)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.count = 0
        self.last_started = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] == "GET":
            await self.app(scope, receive, send)
            return
        await self.counted(self.app, scope, receive, send)

    async def counted(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """`app` serving a request that counts (the caller has left GET streams out)."""
        self.count += 1
        self.last_started = time.monotonic()
        try:
            await app(scope, receive, send)
        finally:
            self.count -= 1


class DrainingServer(GuardedServer):
    """uvicorn's server, that on SIGTERM drains before it stops (a second signal, or SIGINT, stops at once)."""

    def __init__(self, config: uvicorn.Config, readiness: Readiness, inflight: InFlight | None, drain_seconds: float,
                 on_drained: Callable[[], Awaitable[None]] | None = None, *, grace: float = 0.0) -> None:
        super().__init__(config)
        self.grace = min(grace, drain_seconds)
        """Seconds after SIGTERM during which the replica serves whatever comes (the balancer has not seen the 503
        yet), however quiet it is."""
        self.readiness = readiness
        self.inflight = inflight
        self.drain_seconds = drain_seconds
        self.on_drained = on_drained
        self._draining = False
        self._drain: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: Any = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.readiness.draining = True
        if sig != signal.SIGTERM or self._draining or self.drain_seconds <= 0 or self._loop is None:
            super().handle_exit(sig, frame)
            return
        self._draining = True
        logger.info("SIGTERM: draining (up to %g s) before stopping", self.drain_seconds)
        loop = self._loop

        def start() -> None:
            self._drain = loop.create_task(self._drained_then_exit(sig, frame))

        loop.call_soon_threadsafe(start)

    async def _drained_then_exit(self, sig: int, frame: FrameType | None) -> None:
        begun = time.monotonic()
        deadline = begun + self.drain_seconds
        inflight = self.inflight
        while time.monotonic() < deadline and not self.should_exit:
            now = time.monotonic()
            quiet = inflight is None or (inflight.count == 0 and now - inflight.last_started >= _QUIET)
            if quiet and now - begun >= self.grace:
                break
            await asyncio.sleep(0.05)
        if inflight is not None and inflight.count:
            logger.warning("drain time over with %d requests in flight", inflight.count)
        if self.on_drained is not None:
            try:
                await self.on_drained()
            except Exception:
                logger.exception("closing streams at the end of the drain failed")
        super().handle_exit(sig, frame)
