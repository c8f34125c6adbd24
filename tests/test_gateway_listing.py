"""An upstream's tools/list with malformed tools in it: those are skipped, the rest served (sources/gateway/listing.py)."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from lazytools.sources.gateway.listing import screen_listing

from .conftest import client, text_of
from .upstreams.helpers import Opened, opened

HOSTILE = Path(__file__).resolve().parent / "upstreams" / "hostile.py"


@asynccontextmanager
async def serving_hostile(tmp_path: Path, *flags: str) -> AsyncIterator[Opened]:
    """The gateway over the hand-written hostile upstream (named h), started with `flags`, once it serves."""
    entry = {"command": sys.executable, "args": [str(HOSTILE), *flags], "timeout": 20}
    async with opened(tmp_path, {"h": entry}) as o:
        assert o.gateway["h"].state == "serving", o.gateway["h"].error
        yield o


@pytest.mark.process
async def test_a_tool_listed_without_an_input_schema_is_skipped_not_its_server(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with serving_hostile(tmp_path, "--no-schema") as o:
        assert "h__echo" in o.catalog and "h__no_schema" not in o.catalog
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("skipping tool 'no_schema'" in m and "inputSchema" in m for m in messages), messages


@pytest.mark.process
@pytest.mark.parametrize("levels", [110, 200])
async def test_a_tool_whose_schema_nests_too_deep_is_skipped_not_its_server(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, levels: int) -> None:
    # At 200 levels the SDK's validation gives up ("Maximum serialization depth exceeded"); at 110 it passes, but the
    # SDK's client refuses the tools/list that carries the tool. Either way that tool alone goes.
    async with serving_hostile(tmp_path, "--deep-schema", str(levels)) as o:
        assert "h__echo" in o.catalog and "h__deep" not in o.catalog
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("skipping tool 'deep'" in m and "levels deep" in m for m in messages), messages


@pytest.mark.process
async def test_lone_surrogates_in_a_listing_are_replaced_so_the_list_can_still_be_written(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with serving_hostile(tmp_path, "--surrogate-listing") as o:
        assert o.catalog.get("h__echo").description == "Echoes its arguments \ufffd back."
        odd = [name for name in o.catalog.names() if name.startswith("h__odd")]
        assert len(odd) == 1 and o.catalog.get(odd[0]).upstream_name == "odd\ufffdname"
        async with client(o.server) as c:
            await c.call_tool("search_tools", {"tool_names": ["h__echo", *odd]})
            listed = await c.list_tools()
            assert "\ufffd" in listed.model_dump_json()  # what the stdio and HTTP writers do with it
            assert text_of(await c.call_tool("h__echo", {"text": "hi"})) == 'echo got {"text": "hi"}'
    assert "upstream 'h': 3 lone surrogate(s) in its tool list replaced with U+FFFD" in caplog.text


def test_a_real_schema_of_many_levels_is_kept() -> None:
    from lazytools.sources.gateway.listing import MAX_TOOL_DEPTH

    schema: dict[str, object] = {"type": "string"}
    for _ in range(MAX_TOOL_DEPTH // 2 - 2):  # two levels a wrap (the object, its properties); the tool adds two
        schema = {"type": "object", "properties": {"x": schema}}
    page = {"tools": [GOOD, {"name": "nested", "inputSchema": schema}]}
    assert _names(screen_listing(_listing(**page), upstream="h", version="2025-11-25")) == ["good", "nested"]


GOOD = {"name": "good", "inputSchema": {"type": "object"}}
BAD = {"name": "bad", "description": "no inputSchema"}


def _listing(**result: object) -> SessionMessage:
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=1, result=result))


def _names(item: SessionMessage) -> list[str]:
    assert isinstance(item.message, types.JSONRPCResponse)
    return [tool["name"] for tool in item.message.result["tools"]]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
def test_the_screen_drops_only_the_malformed_tool_in_every_era(version: str,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    page: dict[str, object] = {"tools": [GOOD, BAD, {**GOOD, "name": "also_good"}]}
    if version == "2026-07-28":  # that era's pages carry their cache rules
        page.update(resultType="complete", cacheScope="shared", ttlMs=0)
    screened = screen_listing(_listing(**page), upstream="h", version=version)
    assert _names(screened) == ["good", "also_good"]
    assert [r.getMessage() for r in caplog.records if "skipping tool 'bad'" in r.getMessage()]
