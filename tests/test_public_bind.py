"""Start-up refusals of `lazytools --transport http`, as a user meets them in real processes: a bind other than
loopback with no authentication refuses to start (issue #30: a doc block pasted with unexported variables started an
open gateway on 0.0.0.0 with only a warning), and a refused OAuth start names the setting and the reason (#31)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest

from .helpers import _free_port


def _env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("LAZYTOOLS_")}
    return {**env, **extra}


def _command(tmp_path: Path, host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "lazytools", "--transport", "http", "--host", host, "--port", str(port),
            "--files-root", str(tmp_path)]


@pytest.mark.process
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_a_public_bind_without_authentication_refuses_to_start_naming_the_settings(tmp_path: Path,
                                                                                    host: str) -> None:
    port = _free_port()
    done = subprocess.run(_command(tmp_path, host, port), cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and done.stdout == ""
    for name in ("LAZYTOOLS_AUTH_TOKEN", "LAZYTOOLS_AUTH_ISSUER", "LAZYTOOLS_ALLOW_UNAUTHENTICATED_PUBLIC"):
        assert name in done.stderr, done.stderr
    with socket.socket() as probe:  # nothing listened
        assert probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.process
async def test_a_public_bind_starts_with_a_token_or_when_explicitly_allowed(tmp_path: Path) -> None:
    for extra, status in (({"LAZYTOOLS_AUTH_TOKEN": "s3cret-token"}, 401),
                          ({"LAZYTOOLS_ALLOW_UNAUTHENTICATED_PUBLIC": "true"}, 200)):
        port = _free_port()
        process = await anyio.open_process(_command(tmp_path, "0.0.0.0", port), cwd=tmp_path, env=_env(**extra),
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            async with httpx2.AsyncClient(timeout=5) as http:
                with anyio.fail_after(90):
                    while True:
                        try:
                            answer = await http.post(f"http://127.0.0.1:{port}/mcp", json={
                                "jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                headers={"Accept": "application/json, text/event-stream"})
                            break
                        except httpx2.TransportError:
                            assert process.returncode is None, extra
                            await anyio.sleep(0.2)
            assert answer.status_code == status, (extra, answer.text[:200])
        finally:
            process.terminate()
            with anyio.move_on_after(30):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            await process.aclose()


@pytest.mark.process
@pytest.mark.parametrize(("variable", "value", "reason"), [
    ("LAZYTOOLS_AUTH_AUDIENCE", "http://tools.example.com:99999/mcp", "invalid port number"),
    ("LAZYTOOLS_AUTH_ISSUER", "https://[::1/idp", "invalid IPv6 address"),
])
def test_a_refused_oauth_start_names_the_setting_and_the_reason(tmp_path: Path, variable: str, value: str,
                                                                 reason: str) -> None:
    """Before: "invalid settings: Input should be a valid URL, invalid port number", naming no setting."""
    env = _env(LAZYTOOLS_AUTH_ISSUER="https://idp.example.com/realms/team",
               LAZYTOOLS_AUTH_AUDIENCE="https://tools.example.com/mcp")
    env[variable] = value
    done = subprocess.run(_command(tmp_path, "127.0.0.1", _free_port()), cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if variable in line]
    assert reason in line, done.stderr
