"""Helpers shared by the tests (and by the soak script in benchmarks/): servers started for real, polling with a
deadline, the names a client sees listed. Tests never import benchmarks/; this file is the one way between them."""

from __future__ import annotations

import gc
import os
import signal
import socket
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import uvicorn
from mcp import Client
from starlette.types import ASGIApp

__all__ = ["HeldStreams", "ServerChild", "eventually", "free_port", "running_http", "spawned_http_server", "tool_names"]


async def tool_names(client: Client) -> list[str]:
    """The names in a fresh tools/list (the client's cache bypassed)."""
    return [tool.name for tool in (await client.list_tools(cache_mode="bypass")).tools]


async def eventually(condition: Callable[[], Any], timeout: float = 120.0) -> None:
    """Poll `condition` (a function, or a coroutine function) until it is true; fail after `timeout` seconds.

    The timeout only ends a wait for what never happens: a condition that comes true returns at once, so it is
    generous (20 s ran out on a machine at load 25 while an upstream was still starting)."""
    pause = 0.005
    with anyio.fail_after(timeout):
        while True:
            value = condition()
            if hasattr(value, "__await__"):
                value = await value
            if value:
                return
            await anyio.sleep(pause)
            # Polls thin out to 10 a second: fifty sessions each polling every 10 ms kept the event loop they wait
            # on busy with polling.
            pause = min(pause * 1.5, 0.1)


async def leaves_behind(act: Callable[[], Awaitable[None]], most: int) -> None:
    """Run `act` with tracemalloc on, then wait until this process holds at most `most` bytes more than before it
    (garbage collected): what a request leaves behind once the server has let go of it."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        await act()

        def held() -> int:
            gc.collect()
            return tracemalloc.get_traced_memory()[0] - before

        await eventually(lambda: held() <= most)
    finally:
        tracemalloc.stop()


@asynccontextmanager
async def running_http(app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0,
                       startup_timeout: float = 10.0) -> AsyncIterator[str]:
    """Run `app` with uvicorn in this event loop (port 0: a free port); yields its base URL, stops on exit."""
    # uvicorn closes a kept-alive connection after 5 idle seconds by default: on a busy machine a client then sent its
    # next request on a connection closed under it (httpx ReadError). Idle connections here live as long as the test.
    config = uvicorn.Config(app, host=host, port=port, lifespan="on", log_config=None, log_level="warning",
                            access_log=False, timeout_graceful_shutdown=5, timeout_keep_alive=600)
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(startup_timeout):
            while not server.started:
                await anyio.sleep(0.005)
        bound = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://{f'[{host}]' if ':' in host else host}:{bound}"
        finally:
            server.should_exit = True



class HeldStreams:
    """Sessions' GET streams at `url` (a `/mcp` URL), each held open in a task: which opened (200) and which ended,
    in order."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.opened: list[str] = []
        self.ended: list[str] = []

    async def listen(self, http: httpx2.AsyncClient, key: str) -> None:
        """Hold the stream of session `key` until the server ends it."""
        async with http.stream("GET", self.url, headers={"accept": "text/event-stream",
                                                        "mcp-session-id": key}) as stream:
            assert stream.status_code == 200
            self.opened.append(key)
            async for _ in stream.aiter_lines():
                pass
        self.ended.append(key)


@dataclass
class ServerChild:
    url: str
    """The `/mcp` URL."""
    process: subprocess.Popen[bytes]
    log: Path
    """Its stderr and stdout, while it runs (the file goes with its scratch directory)."""
    exit_code: int | None = None
    output: str = ""
    """The end of that log, kept once it has stopped."""


_GIVEN: set[int] = set()
"""Ports `free_port` handed out in this process: a server stopped a moment ago may still hold its port."""


def free_port() -> int:
    """A loopback port nothing listens on, for a server that must be told its port before it starts.

    Under pytest-xdist each worker takes only ports of its own share (by `port // 2`: Linux gives bind() even ports
    while there are any), so two workers never hand out the same port, and no process hands out one port twice."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    mine = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % workers
    for _ in range(10_000):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port // 2 % workers == mine and port not in _GIVEN:
            _GIVEN.add(port)
            return port
    raise RuntimeError("no free loopback port of this worker's share")


_free_port = free_port  # the name the tests import


@asynccontextmanager
async def spawned_http_server(*extra: str, log_level: str = "WARNING", env: dict[str, str] | None = None,
                              startup_timeout: float = 60.0) -> AsyncIterator[ServerChild]:
    """`python -m lazytools --transport http` on a free port of 127.0.0.1, in a scratch directory (no .env), ready
    once /healthz answers; stopped with SIGTERM (then SIGKILL if it hangs) on exit, its exit status recorded."""
    with tempfile.TemporaryDirectory(prefix="lazytools-http-") as scratch:
        port = free_port()
        log = Path(scratch) / "server.log"
        clean = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
        command = [sys.executable, "-m", "lazytools", "--transport", "http", "--host", "127.0.0.1", "--port",
                   str(port), "--files-root", scratch, "--log-level", log_level, *extra]
        with log.open("wb") as sink:
            process = subprocess.Popen(command, cwd=scratch, env={**clean, **(env or {})}, stdin=subprocess.DEVNULL,
                                       stdout=sink, stderr=sink)
        child = ServerChild(f"http://127.0.0.1:{port}/mcp", process, log)
        try:
            await _wait_healthy(child, startup_timeout)
            yield child
        finally:
            child.exit_code = await stop_process(process)
            child.output = log.read_text(errors="replace")[-20_000:]


async def _wait_healthy(child: ServerChild, timeout: float) -> None:
    health = child.url.removesuffix("/mcp") + "/healthz"
    async with httpx2.AsyncClient(timeout=2) as http:
        with anyio.fail_after(timeout):
            while True:
                if child.process.poll() is not None:
                    raise RuntimeError(f"lazytools exited with {child.process.returncode} at start-up:\n"
                                       f"{child.log.read_text(errors='replace')[-2000:]}")
                try:
                    if (await http.get(health)).status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                await anyio.sleep(0.1)


async def stop_process(process: subprocess.Popen[bytes], grace: float = 30.0) -> int:
    """SIGTERM, `grace` seconds to exit, then SIGKILL; the exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with anyio.move_on_after(grace):
            while process.poll() is None:
                await anyio.sleep(0.05)
        if process.poll() is None:
            process.kill()
    return await anyio.to_thread.run_sync(process.wait)


def ranked_afresh(index: Any) -> Any:
    """`index` (a `SearchIndex`) with its kept answers forgotten: a test that changes a ranking rule with monkeypatch
    then searches again must not be answered with what was ranked under the old rule."""
    index._recent.clear()
    return index
