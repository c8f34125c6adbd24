"""Interop with a client nobody here wrote: the official TypeScript MCP SDK drives lazytools over stdio and HTTP."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from .helpers import spawned_http_server

pytestmark = pytest.mark.process  # every test here starts lazytools or an upstream as a child process

INTEROP = Path(__file__).resolve().parent / "interop"


@pytest.fixture(scope="session")
def node_client() -> list[str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    assert node and npm, "the interop test needs Node.js and npm on PATH"
    if not (INTEROP / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        # Pinned by package-lock.json; installs from the npm registry once per checkout.
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=INTEROP, check=True, timeout=600,
                       stdout=subprocess.DEVNULL)
    return [node, str(INTEROP / "client.mjs")]


def _drive(node_client: list[str], tmp_path: Path, client_name: str) -> dict[str, object]:
    env = {**os.environ, "INTEROP_CLIENT_NAME": client_name, "INTEROP_CWD": str(tmp_path),
           "INTEROP_QUERY": "convert a temperature from celsius to fahrenheit",
           "INTEROP_TOOL": "convert_temperature",
           "INTEROP_ARGS": json.dumps({"value": 100, "from_unit": "C", "to_unit": "F"})}
    proc = subprocess.run([*node_client, "stdio", sys.executable, "-m", "lazytools", "--files-root", str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_typescript_client_dynamic_session(node_client: list[str], tmp_path: Path) -> None:
    out = _drive(node_client, tmp_path, "Visual Studio Code")
    assert out["capabilities"]["tools"]["listChanged"] is True  # type: ignore[index]
    assert out["first"] == ["search_tools", "invoke_tool"]
    assert out["events"] == ["list_changed", "result"]
    assert "convert_temperature" in out["relisted"]  # type: ignore[operator]
    assert out["direct"] == out["invoked"]  # parity: native call and bridge give the same answer
    assert out["invoked"]["isError"] is False and "212" in out["invoked"]["text"]  # type: ignore[index]
    assert out["unknown"]["isError"] is True and "convert_temperature" in out["unknown"]["text"]  # type: ignore[index]


def test_typescript_client_proxy_session(node_client: list[str], tmp_path: Path) -> None:
    out = _drive(node_client, tmp_path, "claude-ai")
    assert out["first"] == out["relisted"] == ["search_tools", "invoke_tool"]
    assert out["events"] == ["result"]
    assert "input_schema:" in out["search"]  # type: ignore[operator]
    assert "direct" not in out and "212" in out["invoked"]["text"]  # type: ignore[index,operator]


# -- streamable HTTP: a real `lazytools --transport http` process (uvicorn) on 127.0.0.1 ----------------------------


async def _drive_http(node_client: list[str], client_name: str) -> dict[str, object]:
    env = {**os.environ, "INTEROP_CLIENT_NAME": client_name,
           "INTEROP_QUERY": "convert a temperature from celsius to fahrenheit",
           "INTEROP_TOOL": "convert_temperature",
           "INTEROP_ARGS": json.dumps({"value": 100, "from_unit": "C", "to_unit": "F"})}
    async with spawned_http_server() as server:
        with anyio.fail_after(120):
            proc = await anyio.run_process([*node_client, "http", server.url], env=env, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert server.exit_code == 143, server.output[-3000:]  # stopped with SIGTERM
    result: dict[str, object] = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    return result


async def test_typescript_client_dynamic_session_over_http(node_client: list[str]) -> None:
    out = await _drive_http(node_client, "Visual Studio Code")
    assert out["capabilities"]["tools"]["listChanged"] is True  # type: ignore[index]
    assert out["first"] == ["search_tools", "invoke_tool"]
    # The notification comes on the standalone GET stream, the result on the POST's: either may be read first.
    assert sorted(out["events"]) == ["list_changed", "result"]  # type: ignore[arg-type]
    assert "convert_temperature" in out["relisted"]  # type: ignore[operator]
    assert out["direct"] == out["invoked"]
    assert out["invoked"]["isError"] is False and "212" in out["invoked"]["text"]  # type: ignore[index]
    assert out["unknown"]["isError"] is True and "convert_temperature" in out["unknown"]["text"]  # type: ignore[index]


async def test_typescript_client_proxy_session_over_http(node_client: list[str]) -> None:
    out = await _drive_http(node_client, "claude-ai")
    assert out["first"] == out["relisted"] == ["search_tools", "invoke_tool"]
    assert out["events"] == ["result"]
    assert "input_schema:" in out["search"]  # type: ignore[operator]
    assert "direct" not in out and "212" in out["invoked"]["text"]  # type: ignore[index,operator]
