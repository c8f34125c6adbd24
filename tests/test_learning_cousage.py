"""Co-usage (#32 item 2): a tool that past sessions used together with a search's top match takes a place after the
ranked ones, through a real client; it never takes a ranked place nor goes past the session's cap."""

from __future__ import annotations

from pathlib import Path

import anyio.to_thread
import pytest

from lazytools.server.core import LazyServer

from .conftest import client, text_of
from .test_learning import QUERY, learning_server

pytestmark = pytest.mark.anyio

TOGETHER = "often used together with search_notes, from past sessions"


async def _sessions(server: LazyServer, count: int) -> None:
    """Sessions that search their notes, then send an email: send_email is used with search_notes."""
    for number in range(count):
        async with client(server) as session:
            await session.call_tool("search_tools", {"query": QUERY})
            assert not (await session.call_tool("search_notes", {"words": "budget"})).is_error
            await session.call_tool("search_tools", {"tool_names": ["send_email"]})
            assert not (await session.call_tool("send_email", {"to": f"friend-{number}@example.com"})).is_error
        assert server.usage is not None and await anyio.to_thread.run_sync(server.usage.flushed)


def _enabled(text: str) -> list[str]:
    line = text.split("\n", 1)[0]
    assert line.startswith("Enabled: "), text
    return [name.strip() for name in line.removeprefix("Enabled: ").split(".")[0].split(",")]


async def test_a_tool_used_with_the_top_match_takes_a_place_after_the_ranked_ones(tmp_path: Path) -> None:
    server = learning_server(tmp_path)
    async with client(server) as session:
        before = text_of(await session.call_tool("search_tools", {"query": QUERY, "limit": 1}))
    assert _enabled(before) == ["search_notes"] and TOGETHER not in before
    await _sessions(server, 3)
    async with client(server) as session:
        after = text_of(await session.call_tool("search_tools", {"query": QUERY, "limit": 1}))
        listed = [tool.name for tool in (await session.list_tools()).tools]
    # The one ranked place stays search_notes'; send_email comes after it, labelled as learnt, and is enabled
    # (without co-usage it was only suggested, as the tool usually called next).
    assert _enabled(after) == ["search_notes", "send_email"], after
    assert TOGETHER in after
    assert {"search_notes", "send_email"} <= set(listed)


async def test_co_usage_never_goes_past_the_cap_nor_takes_a_ranked_place(tmp_path: Path) -> None:
    first = learning_server(tmp_path)
    await _sessions(first, 3)
    assert first.usage is not None
    first.usage.close()
    server = learning_server(tmp_path, max_enabled=1)  # learns it from the store's history
    assert server.usage is not None and server.usage.loaded.wait(10)
    assert server.usage.prior.co_used(["search_notes"]) == [("send_email", "search_notes")]
    async with client(server) as session:
        found = text_of(await session.call_tool("search_tools", {"query": QUERY}))
    assert _enabled(found) == ["search_notes"] and TOGETHER not in found


async def test_co_usage_needs_enough_other_sessions(tmp_path: Path) -> None:
    server = learning_server(tmp_path)
    await _sessions(server, 2)  # two others: under the floor of three
    async with client(server) as session:
        found = text_of(await session.call_tool("search_tools", {"query": QUERY, "limit": 1}))
    assert _enabled(found) == ["search_notes"] and TOGETHER not in found
