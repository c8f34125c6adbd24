"""In-process tools have a time limit (LAZYTOOLS_CALL_TIMEOUT); a timed-out thread keeps its slot until it ends."""

from __future__ import annotations

import threading

import anyio

from lazytools import Catalog, FunctionGroup, build_server

from .conftest import client, make_settings, text_of


async def test_a_sync_tool_past_its_time_answers_a_timeout_and_keeps_its_thread_until_it_ends() -> None:
    release = threading.Event()
    ran: list[str] = []
    group = FunctionGroup("slow", summary="Tools that block.")

    @group.tool
    def wait_for_release() -> str:
        """Block until the test releases it."""
        ran.append("wait")
        release.wait(120)
        return "released"

    @group.tool
    def count() -> str:
        """Say how many times it ran."""
        ran.append("count")
        return str(ran.count("count"))

    catalog = Catalog()
    catalog.add(group)
    settings = make_settings(call_timeout=0.5, max_session_tool_threads=1,
                             always_available_tools=["wait_for_release", "count"])
    async with client(build_server(catalog, settings), "claude-ai") as c:
        with anyio.fail_after(60):  # on a call without a time limit, the first call never returns
            stuck = await c.call_tool("wait_for_release", {})
        assert stuck.is_error and "timed out: the tool did not return within 0.5 s" in text_of(stuck)
        assert ran == ["wait"] and not release.is_set()
        # The thread still runs and holds the session's only slot: the next call waits for it, times out too,
        # and never runs later.
        waiting = await c.call_tool("count", {})
        assert waiting.is_error and "timed out" in text_of(waiting)
        release.set()
        with anyio.fail_after(60):
            while True:  # the slot comes back once the first thread ends
                answer = await c.call_tool("count", {})
                if not answer.is_error:
                    break
        assert text_of(answer) == "1" and ran.count("wait") == 1


async def test_an_async_tool_past_its_time_is_cancelled() -> None:
    cancelled = anyio.Event()
    group = FunctionGroup("slow", summary="Tools that wait.")

    @group.tool
    async def wait_forever() -> str:
        """Wait for an event that never comes."""
        try:
            await anyio.Event().wait()
        finally:
            cancelled.set()
        return "never"

    catalog = Catalog()
    catalog.add(group)
    settings = make_settings(call_timeout=0.5, always_available_tools=["wait_forever"])
    async with client(build_server(catalog, settings), "claude-ai") as c:
        with anyio.fail_after(60):
            result = await c.call_tool("wait_forever", {})
    assert result.is_error and "timed out" in text_of(result) and cancelled.is_set()
