"""Upstream faults the gateway tests leave out: junk on an upstream's stdout, a kill in the middle of a call, and
lazytools as a process stopping (SIGTERM, end of stdin) with none of its upstream processes left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest

from .conftest import client, text_of
from .helpers import eventually, spawned_http_server, tool_names
from .upstreams.faulty import GARBAGE, entry
from .upstreams.helpers import opened

pytestmark = pytest.mark.process  # every test here starts lazytools or an upstream as a child process

# -- junk on the wire --------------------------------------------------------------------------------------------


async def test_junk_on_an_upstreams_stdout_is_dropped_and_its_tools_keep_answering(tmp_path: Path) -> None:
    servers = {"noisy": entry("noisy", "--tools", "echo,pid,garble", "--banner", timeout=20),
               "calm": entry("calm", "--tools", "echo")}
    async with opened(tmp_path, servers) as o:  # the banner came before the initialize answer: still connected
        noisy = o.gateway["noisy"]
        assert noisy.state == "serving" and o.gateway["calm"].state == "serving"
        pid = text_of(await o.catalog.get("noisy__pid").call({}))
        async with client(o.server, "claude-ai") as c:
            for kind in [k for k in GARBAGE if k != "bad_result"]:
                garbled = await c.call_tool("invoke_tool", {"tool_name": "noisy__garble", "arguments": {"kind": kind}})
                assert not garbled.is_error and text_of(garbled) == f"garbled {kind}", kind
                after = await c.call_tool("invoke_tool", {"tool_name": "noisy__echo", "arguments": {"text": kind}})
                assert not after.is_error and text_of(after) == kind, kind
            calm = await c.call_tool("invoke_tool", {"tool_name": "calm__echo", "arguments": {"text": "calm"}})
            assert text_of(calm) == "calm"
        # Nothing above cost a reconnection: the same process answered every call.
        assert noisy.connections == 1 and text_of(await o.catalog.get("noisy__pid").call({})) == pid


async def test_an_answer_of_the_wrong_shape_is_a_clear_error_and_the_next_call_works(tmp_path: Path) -> None:
    async with opened(tmp_path, {"noisy": entry("noisy", "--tools", "echo,garble")}) as o:
        async with client(o.server) as c:
            await c.call_tool("search_tools", {"tool_names": ["noisy__garble", "noisy__echo"]})
            bad = await c.call_tool("noisy__garble", {"kind": "bad_result"})
            assert bad.is_error
            assert text_of(bad).startswith("Upstream server 'noisy': 'garble' returned a malformed result:")
            assert text_of(await c.call_tool("noisy__echo", {"text": "fine"})) == "fine"
        assert o.gateway["noisy"].connections == 1


# -- killed in the middle of a call ------------------------------------------------------------------------------


async def test_an_upstream_killed_mid_call_fails_that_call_at_once_and_comes_back(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    servers = {"alpha": entry("alpha", "--tools", "echo,pid,stall", pid_dir=pids),
               "beta": entry("beta", "--tools", "echo", pid_dir=pids)}
    # A call timeout far beyond the test's own bound: the error must come from the kill, not from waiting it out.
    async with opened(tmp_path, servers, call_timeout=600) as o:
        async with client(o.server) as c:
            await c.call_tool("search_tools", {"tool_names": ["alpha__stall", "alpha__echo", "beta__echo"]})
            outcome: dict[str, str] = {}

            async def stall() -> None:
                result = await c.call_tool("alpha__stall", {})
                assert result.is_error
                outcome["stall"] = text_of(result)

            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(stall)
                    stalled = pids / "alpha-stalled.pid"
                    await eventually(stalled.exists)  # the upstream is inside the call now
                    os.kill(int(stalled.read_text()), signal.SIGKILL)
            assert outcome["stall"].startswith("Upstream server 'alpha': the connection closed during 'stall'")
            assert text_of(await c.call_tool("beta__echo", {"text": "unaffected"})) == "unaffected"
            again = await c.call_tool("alpha__echo", {"text": "back"})
            assert not again.is_error and text_of(again) == "back"
            assert {"alpha__stall", "alpha__echo", "beta__echo"} <= set(await tool_names(c))
        assert o.gateway["alpha"].connections == 2
        assert int(text_of(await o.catalog.get("alpha__pid").call({}))) != int((pids / "alpha-stalled.pid").read_text())


# -- lazytools stopping: no upstream process outlives it ---------------------------------------------------------


def _three_upstreams(tmp_path: Path) -> tuple[Path, Path]:
    """A config with a plain upstream, one that prints junk, and one that ignores SIGTERM and the end of stdin."""
    pids = tmp_path / "pids"
    pids.mkdir()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "plain": entry("plain", "--tools", "echo", pid_dir=pids),
        "noisy": entry("noisy", "--tools", "echo", "--banner", pid_dir=pids),
        "stubborn": entry("stubborn", "--tools", "echo", "--stubborn", pid_dir=pids),
    }}))
    return config, pids


def _upstream_pids(pids: Path) -> dict[str, int]:
    found = {path.stem: int(path.read_text()) for path in pids.glob("*.pid")}
    assert set(found) == {"plain", "noisy", "stubborn"}, found
    return found


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # Exited but not yet reaped by whoever inherited it counts as gone: it runs no code and holds no resources.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


async def _all_gone(pids: dict[str, int]) -> None:
    await eventually(lambda: all(_gone(pid) for pid in pids.values()), timeout=30)


@contextmanager
def _lazytools_stdio(config: Path, cwd: Path) -> Iterator[subprocess.Popen[str]]:
    with subprocess.Popen([sys.executable, "-m", "lazytools", "--config", str(config)], cwd=cwd, text=True,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        watchdog = threading.Timer(120, proc.kill)  # a hung lazytools fails the test instead of hanging it
        watchdog.start()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            handshake = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
            proc.stdin.write(json.dumps(handshake) + "\n")
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["id"] == 1  # serving, with every upstream connected
            yield proc
        finally:
            watchdog.cancel()
            proc.kill()


@pytest.mark.parametrize("stop", ["SIGTERM", "end of stdin"])
async def test_lazytools_over_stdio_stops_cleanly_and_leaves_no_upstream_running(tmp_path: Path, stop: str) -> None:
    config, pid_dir = _three_upstreams(tmp_path)
    with _lazytools_stdio(config, tmp_path) as proc:
        pids = _upstream_pids(pid_dir)
        assert not any(_gone(pid) for pid in pids.values())
        if stop == "SIGTERM":
            proc.send_signal(signal.SIGTERM)
        else:
            assert proc.stdin is not None
            proc.stdin.close()
        code = await anyio.to_thread.run_sync(lambda: proc.wait(timeout=60))
    assert code == (143 if stop == "SIGTERM" else 0)
    await _all_gone(pids)


async def test_sigterm_after_the_end_of_stdin_still_leaves_no_upstream_running(tmp_path: Path) -> None:
    """As the SDK's stdio client stops a server: stdin closed, SIGTERM ~2 s later. The SIGTERM lands while lazytools
    waits out the grace of an upstream still busy in a call that timed out (stubborn: it outlives its stdin). It
    used to kill lazytools there (-15), leaving that upstream running under init."""
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "hung": entry("hung", "--tools", "stall", "--stubborn", pid_dir=pid_dir, timeout=1)}}))
    with _lazytools_stdio(config, tmp_path) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        pid = int((pid_dir / "hung.pid").read_text())
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "invoke_tool", "arguments": {"tool_name": "hung__stall", "arguments": {}}}}
        proc.stdin.write(json.dumps(call) + "\n")
        proc.stdin.flush()
        answer = json.loads(await anyio.to_thread.run_sync(proc.stdout.readline))
        assert answer["id"] == 2 and "did not answer within 1 s" in json.dumps(answer), answer
        proc.stdin.close()
        calls = pid_dir / "hung.calls"
        await eventually(lambda: "end of stdin" in calls.read_text())  # lazytools is stopping it: its grace runs
        proc.send_signal(signal.SIGTERM)
        code = await anyio.to_thread.run_sync(lambda: proc.wait(timeout=60))
    await _all_gone({"hung": pid})
    assert code == 143  # 128 + SIGTERM, as after a SIGTERM while serving


async def test_lazytools_over_http_exits_143_on_sigterm_and_leaves_no_upstream_running(tmp_path: Path) -> None:
    config, pid_dir = _three_upstreams(tmp_path)
    async with spawned_http_server("--config", str(config)) as server:
        pids = _upstream_pids(pid_dir)
        async with httpx2.AsyncClient(timeout=60) as http:
            assert (await http.get(server.url.removesuffix("/mcp") + "/healthz")).status_code == 200
    # Leaving the block sent SIGTERM. uvicorn re-raises it once it has stopped; lazytools must still stop the
    # gateway (the stubborn upstream ignores the end of its stdin) and exit 143 (128 + SIGTERM).
    assert server.exit_code == 143, server.output[-3000:]
    await _all_gone(pids)
