"""The reference server from npm, @modelcontextprotocol/server-everything (pinned in tests/everything/), behind
lazytools: every feature it shows a capable client directly, it shows through lazytools too (issue #15).

Needs Node.js; the package installs from the npm registry once per checkout (`npm ci` in tests/everything/).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from .conftest import text_of
from .helpers import eventually
from .test_gateway_passthrough import Asked, Seen
from .upstreams.helpers import Opened, opened

pytestmark = pytest.mark.process

EVERYTHING = Path(__file__).resolve().parent / "everything"


@pytest.fixture(scope="module")
def everything() -> dict[str, Any]:
    """The config entry that starts server-everything over stdio."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are not installed")
    binary = EVERYTHING / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    if not binary.is_file():
        # Pinned by package-lock.json; .ci/run installs it the same way before the tests.
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=EVERYTHING, check=True, timeout=600,
                       capture_output=True)
    return {"command": node, "args": [str(binary), "stdio"]}


@asynccontextmanager
async def fronted(tmp_path: Path, entry: dict[str, Any], asked: Asked, seen: Seen) -> AsyncIterator[tuple[Opened,
                                                                                                           Client]]:
    async with opened(tmp_path, {"everything": entry}) as o, Client(
            o.server, mode="legacy", message_handler=seen.on_message, **asked.options()) as client:
        yield o, client


async def test_a_capable_client_sees_the_same_tools_through_lazytools(tmp_path: Path,
                                                                      everything: dict[str, Any]) -> None:
    asked = Asked()
    params = StdioServerParameters(command=everything["command"], args=everything["args"])
    async with Client(params, mode="legacy", cache=None, **asked.options()) as direct:
        # Its capability-dependent tools are registered once it is initialized, then announced.
        async def all_listed() -> bool:
            return "trigger-sampling-request" in {t.name for t in (await direct.list_tools()).tools}

        await eventually(all_listed)
        listed = (await direct.list_tools()).tools
    # Less the tools that run only as tasks (lazytools forwards calls without one, so it leaves them out).
    own = {t.name for t in listed if t.execution is None or t.execution.task_support != "required"}
    assert {"trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"} <= own
    async with fronted(tmp_path, everything, Asked(), Seen()) as (o, _):
        await eventually(lambda: {e.upstream_name for e in o.catalog.in_group("everything")} == own)


async def test_progress_sampling_elicitation_roots_logs_prompts_and_links(tmp_path: Path,
                                                                          everything: dict[str, Any]) -> None:
    asked, seen = Asked(), Seen()
    async with fronted(tmp_path, everything, asked, seen) as (o, client):
        await eventually(lambda: "everything__get-roots-list" in o.catalog)

        async def call(tool: str, arguments: dict[str, Any], **options: Any) -> str:
            result = await client.call_tool("invoke_tool", {"tool_name": f"everything__{tool}",
                                                            "arguments": arguments}, **options)
            assert not result.is_error, text_of(result)
            return text_of(result)

        await call("trigger-long-running-operation", {"duration": 0.3, "steps": 3},
                   progress_callback=seen.on_progress)
        assert [p[0] for p in seen.progress] == [1.0, 2.0, 3.0]

        assert "a poem" in await call("trigger-sampling-request", {"prompt": "write", "maxTokens": 20})
        assert any(q.startswith("sampling:") and q.endswith("write") for q in asked.questions)
        assert "Ada" in await call("trigger-elicitation-request", {})

        # It asked for roots 350 ms after it started, before any client; lazytools told it to ask again when this
        # client's session began, and the client answered.
        await eventually(lambda: "roots" in asked.questions)
        assert "file:///work/project" in await call("get-roots-list", {})

        await call("toggle-simulated-logging", {})
        await eventually(lambda: any(log.logger and log.logger.startswith("everything") for log in seen.logs))
        await call("toggle-simulated-logging", {})

        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert {"everything__simple-prompt", "everything__args-prompt"} <= prompts
        got = await client.get_prompt("everything__args-prompt", {"city": "Lyon"})
        assert "Lyon" in str(got.messages[0].content)
        completed = await client.complete(types.PromptReference(name="everything__completable-prompt"),
                                          {"name": "department", "value": "S"})
        assert completed.completion.values == ["Sales", "Support"]

        links = await client.call_tool("invoke_tool", {"tool_name": "everything__get-resource-links",
                                                       "arguments": {"count": 2}})
        uris = [str(block.uri) for block in links.content if block.type == "resource_link"]
        assert len(uris) == 2
        for uri in uris:
            assert str((await client.read_resource(uri)).contents[0].uri) == uri
