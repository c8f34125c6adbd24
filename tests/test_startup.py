"""What a `lazytools` process says as it starts and stops: the rules in force in one block, a session store that
does not answer at once, replicas that disagree named with what differs, one line for the signal that stops it."""

from __future__ import annotations

import re
import signal
import socket
from pathlib import Path

import anyio
import pytest

from .cluster import Replica, free_port, running_redis
from .helpers import eventually, spawned_http_server

pytestmark = pytest.mark.process


async def test_start_up_says_which_policy_audit_and_session_store_are_in_force(tmp_path: Path) -> None:
    """Before: nothing said which policy file, audit file or state URL a process took (a variable not exported
    looked like one in force), and a dead Redis was heard of at the first refused session."""
    policy = tmp_path / "policy.toml"
    policy.write_text('default = "allow"\n')
    audit = tmp_path / "audit.jsonl"
    dead = free_port()  # nothing listens here
    env = {"LAZYTOOLS_POLICY": str(policy), "LAZYTOOLS_AUDIT": str(audit),
           "LAZYTOOLS_STATE_URL": f"redis://:S3cretPW@127.0.0.1:{dead}/0"}
    async with spawned_http_server(log_level="INFO", env=env) as server:
        said = server.log.read_text()  # up and answering /healthz: no request has been made
    block = re.search(r"INFO lazytools: serving \d+ tools over http\n((?:  .*\n)+)", said)
    assert block is not None, said[-3000:]
    assert block.group(1).splitlines() == [
        f"  policy (LAZYTOOLS_POLICY): {policy}",
        f"  audit (LAZYTOOLS_AUDIT): {audit}",
        f"  sessions (LAZYTOOLS_STATE_URL): shared in Redis at redis://***@127.0.0.1:{dead}/0",
        "  rate limit (LAZYTOOLS_RATE_LIMIT): none, and the calls_per_minute of the policy's rules",
    ], block.group(1)
    warning = said.index("WARNING lazytools: the session store (LAZYTOOLS_STATE_URL) does not answer yet")
    assert warning < said.index("serving"), said[-3000:]  # at start, before anything is served
    assert "S3cretPW" not in said


async def test_without_settings_the_block_says_so(tmp_path: Path) -> None:
    async with spawned_http_server(log_level="INFO") as server:
        said = server.log.read_text()
    assert "  policy (LAZYTOOLS_POLICY): none: everyone may use everything\n" in said, said[-3000:]
    assert "  audit (LAZYTOOLS_AUDIT): off\n" in said and "  sessions (LAZYTOOLS_STATE_URL): in this process\n" in said


async def test_sigterm_is_logged_once_and_exits_143() -> None:
    """A second SIGTERM while the first is being handled (a wrapper that forwards the signal to its child, which
    the process group's signal reached too): "received SIGTERM, shutting down" came out twice."""
    async with spawned_http_server(log_level="INFO") as server:
        server.process.send_signal(signal.SIGTERM)
        # The second once the first is being handled (two pending at once would be delivered as one).
        await eventually(lambda: "Shutting down" in server.log.read_text(), timeout=60)
        server.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(60):
            while server.process.poll() is None:
                await anyio.sleep(0.05)
    assert server.exit_code == 143, server.output[-3000:]
    assert server.output.count("received SIGTERM, shutting down") == 1, server.output[-3000:]


async def test_replicas_that_disagree_are_named_with_the_setting_that_differs(tmp_path: Path) -> None:
    async with running_redis() as redis:
        common = {"LAZYTOOLS_STATE_URL": redis.url, "LAZYTOOLS_LOG_LEVEL": "WARNING"}
        first = Replica(free_port(), tmp_path, {**common, "LAZYTOOLS_MAX_ENABLED": "8"})
        second = Replica(free_port(), tmp_path, {**common, "LAZYTOOLS_MAX_ENABLED": "2"})
        await first.start()
        try:
            await second.start()
            try:
                assert first.process is not None
                await eventually(lambda: "REPLICAS DISAGREE" in second.output(), timeout=60)
                line = next(line for line in second.output().splitlines() if "REPLICAS DISAGREE" in line)
                assert f"replica {socket.gethostname()}:{first.port} (pid {first.process.pid})" in line, line
                assert "LAZYTOOLS_MAX_ENABLED=8 there, 2 here" in line, line
                assert "LAZYTOOLS_SESSION_IDLE_TIMEOUT" not in line and "tools," not in line, line  # those agree
            finally:
                await second.stop()
        finally:
            await first.stop()
