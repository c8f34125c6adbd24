"""`lazytools --transport http` as a user runs it: a real process, a real client, logs on stderr only."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client

from lazytools.transports.http import MCP_PATH

from .conftest import make_settings
from .helpers import eventually, spawned_http_server


@pytest.mark.process
async def test_cli_serves_streamable_http_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("LAZYTOOLS_")}
    command = [sys.executable, "-m", "lazytools", "--transport", "http", "--port", "0", "--files-root", str(tmp_path)]
    process = await anyio.open_process(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stderr: list[str] = []
    stdout: list[str] = []

    async def collect(stream: anyio.abc.ByteReceiveStream, into: list[str]) -> None:
        async for text in TextReceiveStream(stream):
            into.append(text)

    async with process, anyio.create_task_group() as tg:
        assert process.stdout is not None and process.stderr is not None
        tg.start_soon(collect, process.stderr, stderr)
        tg.start_soon(collect, process.stdout, stdout)
        await eventually(lambda: re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", "".join(stderr)) is not None,
                         timeout=60)
        match = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", "".join(stderr))
        assert match is not None
        base = match.group(1)
        async with httpx2.AsyncClient(timeout=60) as http:
            assert (await http.get(base + "/healthz")).json() == {"status": "ok"}
        async with Client(base + "/mcp", mode="legacy",
                          client_info=types.Implementation(name="Visual Studio Code", version="1")) as client:
            assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed
            listed = await client.list_tools()
            assert [tool.name for tool in listed.tools] == ["search_tools", "invoke_tool"]
            found = await client.call_tool("search_tools", {"query": "convert a temperature"})
            assert not found.is_error
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(30):
            code = await process.wait()
    assert code == 130  # uvicorn shuts down gracefully on SIGINT, then lazytools stops cleanly, as interrupted
    assert "".join(stdout) == ""  # stdout carries nothing on HTTP either: every log line went to stderr
    assert "Application shutdown complete" in "".join(stderr)
    # one server, one start line: the SDK's two managers (sessions, stateless requests) each used to say it
    for line in ("StreamableHTTP session manager started", "StreamableHTTP session manager shutting down"):
        assert "".join(stderr).count(line) == 1, line


def test_the_http_client_entry_and_the_readme_point_at_the_default_address() -> None:
    root = Path(__file__).resolve().parent.parent
    defaults = make_settings()
    address = f"http://{defaults.host}:{defaults.port}{MCP_PATH}"
    readme = (root / "README.md").read_text().split("## HTTP transport", 1)[1].split("\n## ", 1)[0]
    assert f"`{address}`" in readme and "(docs/http.md)" in readme
    section = (root / "docs" / "http.md").read_text().split("## Serving over HTTP", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```json\n(.*?)```", section, flags=re.DOTALL)
    (server,) = json.loads(block)["servers"].values()
    assert server["type"] == "http" and server["url"] == address
    assert server["headers"]["Authorization"].startswith("Bearer ")


@pytest.mark.process
def test_a_port_in_use_is_one_line_and_status_2(tmp_path: Path) -> None:
    import socket

    env = {key: value for key, value in os.environ.items() if not key.startswith("LAZYTOOLS_")}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "lazytools", "--transport", "http", "--port", str(port),
                               "--files-root", str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert done.stderr.rstrip().splitlines()[-1] == f"lazytools: cannot listen on 127.0.0.1:{port} (the error above; --host, --port)"
    assert "address already in use" in done.stderr


@pytest.mark.process
async def test_what_start_up_built_is_frozen_out_of_the_collector_before_serving() -> None:
    """The catalog, the index and the modules live as long as the process: the collector's full collections do not
    walk them again during requests (heap.settle, called once the index is ready)."""
    async with spawned_http_server(log_level="DEBUG") as child:
        await eventually(lambda: "objects frozen out of the collector" in child.log.read_text(errors="replace"))
        line = next(line for line in child.log.read_text(errors="replace").splitlines() if "objects frozen" in line)
        assert int(re.search(r"(\d+) objects frozen", line).group(1)) > 10_000  # type: ignore[union-attr]
        async with Client(child.url) as client:
            assert "search_tools" in {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.process
async def test_a_call_over_the_body_limit_gets_its_error_and_the_session_goes_on() -> None:
    """A client still sending when the 413 came saw its connection reset instead, and the SDK's client then ended
    the whole session: the rest of the body is read, up to a bound, before the answer. (Only with the server in a
    process of its own: one event loop for both hid it.)"""
    from mcp.shared.exceptions import MCPError

    limit = 1 << 20
    async with spawned_http_server(env={"LAZYTOOLS_MAX_BODY_BYTES": str(limit), "LAZYTOOLS_LEARN": "false"}) as child:
        async with Client(child.url, mode="legacy", client_info=types.Implementation(name="mcp", version="1")) as client:
            for size in (2 * limit, 6 * limit):  # far past what loopback buffers while the server answers
                with pytest.raises(MCPError, match=f"larger than {limit} bytes"):
                    await client.call_tool("invoke_tool", {"tool_name": "reverse_text", "arguments": {"text": "x" * size}})
                result = await client.call_tool("invoke_tool", {"tool_name": "reverse_text", "arguments": {"text": "ok"}})
                assert not result.is_error and "ko" in result.content[0].text  # the same session answers
