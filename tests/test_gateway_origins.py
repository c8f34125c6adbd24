"""What an upstream sends for a client reaches only the client that caused it, and what a client sets reaches the
upstreams that serve it (issue #20, items 5 and 9), against the features upstream (tests/upstreams/features.py)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from .conftest import text_of
from .helpers import eventually, running_http
from .upstreams.features import build
from .upstreams.helpers import opened

FEATURES = Path(__file__).resolve().parent / "upstreams" / "features.py"
VSCODE = types.Implementation(name="Visual Studio Code", version="1.0")

pytestmark = pytest.mark.process


@asynccontextmanager
async def entry(upstream: str, **options: Any) -> AsyncIterator[dict[str, Any]]:
    if upstream == "stdio":
        yield {"command": sys.executable, "args": [str(FEATURES), "--name", "feat"], **options}
        return
    async with running_http(build("feat").streamable_http_app()) as base:
        yield {"url": base + "/mcp", **options}


async def _call(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
    await client.call_tool("search_tools", {"tool_names": [tool]})
    return await client.call_tool(tool, arguments or {})


# -- item 9: logging/setLevel reaches a session's own upstream --------------------------------------------------------


@pytest.mark.parametrize("upstream", ["stdio", "http"])
async def test_set_level_reaches_the_sessions_own_upstream(tmp_path: Path, upstream: str) -> None:
    async with entry(upstream, scope="session") as server, opened(tmp_path, {"feat": server}) as o:
        async with Client(o.server, mode="legacy", client_info=VSCODE) as first, \
                Client(o.server, mode="legacy", client_info=VSCODE) as second:
            with pytest.warns(MCPDeprecationWarning):
                await first.set_logging_level("error")
            # Set before its own connection started: that connection gets it when it comes up.
            assert text_of(await _call(first, "feat__level")) == "error meta="
            with pytest.warns(MCPDeprecationWarning):
                await first.set_logging_level("warning")
            # Set while it serves: sent at once.
            assert text_of(await _call(first, "feat__level")) == "warning meta="
            assert text_of(await _call(first, "feat__log", {"level": "notice", "message": "x"})) == "below the level"
            if upstream == "stdio":  # (over HTTP the features server keeps one level for all its sessions)
                # Another session's own connection hears only its own session's level (it set none).
                assert text_of(await _call(second, "feat__level")) == "debug meta="


# -- item 5: a request from an upstream never goes to a client that did not cause it ---------------------------------


class Sampler:
    """A client's sampling callback that records what it was asked and answers with its own words."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    async def __call__(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        content = params.messages[0].content
        self.prompts.append(content.text if isinstance(content, types.TextContent) else "?")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=self.answer), model="a")


async def test_a_stateless_callers_sampling_request_never_reaches_a_session(tmp_path: Path) -> None:
    # One shared stdio upstream: nothing on the wire says which call its request belongs to.
    async with entry("stdio") as server, opened(tmp_path, {"feat": server}) as o:
        upstream = o.gateway["feat"]
        session_a = Sampler("A's private answer")
        async with Client(o.server, mode="legacy", client_info=VSCODE, sampling_callback=session_a) as a, \
                Client(o.server, mode="2026-07-28") as stateless, anyio.create_task_group() as tg:
            await a.call_tool("search_tools", {"tool_names": ["feat__wait_forever"]})
            tg.start_soon(a.call_tool, "feat__wait_forever", {})
            await eventually(lambda: len(upstream.inflight.origins) == 1)  # A's call is in flight
            result = await stateless.call_tool("invoke_tool", {"tool_name": "feat__ask_sampling",
                                                               "arguments": {"prompt": "S's private text"}})
            tg.cancel_scope.cancel()
        assert session_a.prompts == []  # A's client never saw S's text
        assert result.is_error and "cannot tell which client" in text_of(result), text_of(result)
        assert "A's private answer" not in text_of(result)


async def test_a_sessions_sampling_request_is_refused_while_a_stateless_call_is_in_flight(tmp_path: Path) -> None:
    async with entry("stdio") as server, opened(tmp_path, {"feat": server}) as o:
        upstream = o.gateway["feat"]
        session_a = Sampler("A's answer")
        async with Client(o.server, mode="legacy", client_info=VSCODE, sampling_callback=session_a) as a, \
                Client(o.server, mode="2026-07-28") as stateless, anyio.create_task_group() as tg:
            tg.start_soon(stateless.call_tool, "invoke_tool", {"tool_name": "feat__wait_forever", "arguments": {}})
            await eventually(lambda: len(upstream.inflight.origins) == 1)  # S's call is in flight
            result = await _call(a, "feat__ask_sampling", {"prompt": "A's text"})
            tg.cancel_scope.cancel()
        # The request may as well be S's: refused rather than guessed.
        assert session_a.prompts == []
        assert result.is_error and "cannot tell which client" in text_of(result), text_of(result)
        # Alone again, A's own question reaches A.
        async with Client(o.server, mode="legacy", client_info=VSCODE, sampling_callback=session_a) as a:
            assert text_of(await _call(a, "feat__ask_sampling", {"prompt": "again"})) == \
                "sampled: A's answer (model a)"
        assert session_a.prompts == ["again"]


async def test_a_shared_upstream_gets_the_level_again_after_it_reconnects(tmp_path: Path) -> None:
    async with entry("stdio") as server, opened(tmp_path, {"feat": server}) as o:
        upstream = o.gateway["feat"]
        async with Client(o.server, mode="legacy", client_info=VSCODE) as client:
            with pytest.warns(MCPDeprecationWarning):
                await client.set_logging_level("error")
            assert text_of(await _call(client, "feat__level")) == "error meta="
            pid = int(text_of(await _call(client, "feat__count")).split("pid=")[1])
            os.kill(pid, signal.SIGKILL)
            await eventually(lambda: upstream.connections == 2 and upstream.serving)
            assert text_of(await _call(client, "feat__level")) == "error meta="  # a new process, told again
