"""Real parts for the replica tests (and the scaling benchmark): redis-server, lazytools replicas, haproxy.

Each is started on free loopback ports in a scratch directory and stopped on exit. The binaries come from Debian's
packages (`apt-get install -y redis-server haproxy`); where one is missing, `require` fails naming the package.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2

from .helpers import free_port, stop_process

__all__ = ["Cluster", "Redis", "Replica", "cluster", "haproxy_config", "require", "running_redis"]

EXAMPLE_CONFIG = Path(__file__).resolve().parent.parent / "examples" / "haproxy.cfg"


class MissingBinaryError(RuntimeError):
    pass


def require(binary: str, package: str) -> str:
    """The path of `binary`, or an error that says what to install (never a skip: CI installs both)."""
    found = shutil.which(binary) or next((p for p in (f"/usr/sbin/{binary}", f"/usr/bin/{binary}")
                                          if os.access(p, os.X_OK)), None)
    if found is None:
        raise MissingBinaryError(f"{binary} is not installed: the replica tests need Debian's {package} package "
                                 f"(sudo apt-get install -y {package}; .ci/run installs it)")
    return found


async def _answers_200(http: httpx2.AsyncClient, url: str) -> bool:
    try:
        return (await http.get(url)).status_code == 200
    except httpx2.TransportError:
        return False


async def _wait(condition_name: str, check: object, timeout: float, process: subprocess.Popen[bytes] | None = None,
                log: Path | None = None) -> None:
    with anyio.fail_after(timeout):
        while True:
            if process is not None and process.poll() is not None:
                tail = log.read_text(errors="replace")[-3000:] if log is not None else ""
                raise RuntimeError(f"{condition_name}: exited with {process.returncode}\n{tail}")
            if await check():  # type: ignore[operator]
                return
            await anyio.sleep(0.05)


# -- Redis ------------------------------------------------------------------------------------------------------------


@dataclass
class Redis:
    port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        binary = require("redis-server", "redis-server")
        log = self.directory / "redis.log"
        # Append-only with fsync on every write: a Redis killed with -9 and started again has what was written.
        command = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
                   "--appendfsync", "always", "--dir", str(self.directory), "--logfile", str(log)]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        await _wait("redis-server", self._answers, 20, self.process, log)

    async def _answers(self) -> bool:
        try:
            async with await anyio.connect_tcp("127.0.0.1", self.port) as stream:
                await stream.send(b"PING\r\n")
                return (await stream.receive()).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    async def stop(self) -> None:
        if self.process is not None:
            await stop_process(self.process)


@asynccontextmanager
async def running_redis() -> AsyncIterator[Redis]:
    with tempfile.TemporaryDirectory(prefix="lazytools-redis-") as scratch:
        redis = Redis(free_port(), Path(scratch))
        await redis.start()
        try:
            yield redis
        finally:
            await redis.stop()


# -- lazytools replicas -----------------------------------------------------------------------------------------------


@dataclass
class Replica:
    port: int
    directory: Path
    env: dict[str, str]
    extra: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.directory / f"replica-{self.port}.log"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
        command = [sys.executable, "-m", "lazytools", "--transport", "http", "--host", "127.0.0.1", "--port",
                   str(self.port), "--files-root", str(self.directory), *self.extra]
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(command, cwd=self.directory, env={**clean, **self.env},
                                            stdin=subprocess.DEVNULL, stdout=sink, stderr=sink)
        await self.wait_ready(90)

    async def wait_ready(self, timeout: float) -> None:
        # One client for the whole wait: a client made per poll (20 a second) cost more CPU than the replica's start.
        async with httpx2.AsyncClient(timeout=2) as http:
            await _wait(f"lazytools on {self.port}", lambda: self.ready(http), timeout, self.process, self.log)

    async def ready(self, http: httpx2.AsyncClient) -> bool:
        return await _answers_200(http, f"{self.base}/readyz")

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    async def stop(self) -> int:
        assert self.process is not None
        return await stop_process(self.process)

    def mark(self) -> int:
        """Where its log ends now: `output(since=...)` of it is what the replica wrote after this."""
        return self.log.stat().st_size

    def output(self, since: int = 0) -> str:
        with self.log.open("rb") as log:
            log.seek(since)
            return log.read().decode(errors="replace")


# -- haproxy ----------------------------------------------------------------------------------------------------------


def haproxy_config(listen: int, servers: list[int], *, sticky: bool = False) -> str:
    """examples/haproxy.cfg with its ports replaced (and, with `sticky`, its optional stickiness switched on)."""
    text = EXAMPLE_CONFIG.read_text()
    text = re.sub(r"bind 127\.0\.0\.1:\d+", f"bind 127.0.0.1:{listen}", text)
    text = re.sub(r"\n    server [rb]\d .*", "", text)
    text = text.rstrip("\n") + "\n" + "".join(f"    server r{i + 1} 127.0.0.1:{port}\n"
                                              for i, port in enumerate(servers))
    text += "".join(f"    server b{i + 1} 127.0.0.1:{port} backup no-check\n" for i, port in enumerate(servers))
    if sticky:
        text = text.replace("    balance roundrobin\n", "    balance hdr(Mcp-Session-Id)\n    hash-type consistent\n")
    return text


@dataclass
class Cluster:
    redis: Redis
    replicas: list[Replica]
    url: str
    """The `/mcp` URL of haproxy in front of the replicas."""
    haproxy: subprocess.Popen[bytes]
    haproxy_log: Path
    """haproxy's own messages (servers going up and down)."""

    async def all_ready_through_proxy(self) -> None:
        """Wait until haproxy's checks see every live replica ready (new sessions spread over all of them)."""
        for replica in self.replicas:
            await replica.wait_ready(60)

    def marks(self) -> list[int]:
        """Where each replica's log ends now (`Replica.mark`)."""
        return [replica.mark() for replica in self.replicas]


@asynccontextmanager
async def cluster(size: int = 3, *, env: dict[str, str] | None = None, sticky: bool = False,
                  extra: tuple[str, ...] = ()) -> AsyncIterator[Cluster]:
    """Redis, `size` lazytools replicas sharing it, and haproxy round robin in front (examples/haproxy.cfg)."""
    haproxy_binary = require("haproxy", "haproxy")
    async with AsyncExitStack() as stack:
        redis = await stack.enter_async_context(running_redis())
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lazytools-cluster-")))
        settings = {"LAZYTOOLS_STATE_URL": redis.url, "LAZYTOOLS_DRAIN_SECONDS": "15",
                    "LAZYTOOLS_LOG_LEVEL": "WARNING", **(env or {})}
        replicas = [Replica(free_port(), scratch, settings, extra) for _ in range(size)]
        async with anyio.create_task_group() as tg:
            for replica in replicas:
                tg.start_soon(replica.start)
        for replica in replicas:
            stack.push_async_callback(_stop_replica, replica)
        listen = free_port()
        config = scratch / "haproxy.cfg"
        config.write_text(haproxy_config(listen, [r.port for r in replicas], sticky=sticky))
        log = scratch / "haproxy.log"
        with log.open("wb") as sink:
            haproxy = subprocess.Popen([haproxy_binary, "-f", str(config), "-db"], stdin=subprocess.DEVNULL,
                                       stdout=sink, stderr=sink)
        stack.push_async_callback(stop_process, haproxy)
        base = f"http://127.0.0.1:{listen}"
        async with httpx2.AsyncClient(timeout=2) as http:
            await _wait("haproxy", lambda: _answers_200(http, f"{base}/readyz"), 30, haproxy, log)
        yield Cluster(redis, replicas, f"{base}/mcp", haproxy, log)


async def _stop_replica(replica: Replica) -> None:
    if replica.process is not None and replica.process.poll() is None:
        await replica.stop()
