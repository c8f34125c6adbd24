"""The session table and the stream budget of one process (transports/http_sessions.py), end to end over HTTP in
test_http.py and test_http_shared.py; here the budget's own accounting."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from anyio.abc import TaskGroup
from starlette.types import Message

from lazytools.transports.http_sessions import StreamBudget, stream_budget

from .helpers import HeldStreams, eventually
from .test_http import ACCEPT, lazy, open_raw_session, rpc, serving


async def test_a_stream_past_the_budget_closes_the_oldest_of_the_address_holding_the_most() -> None:
    budget = StreamBudget(2)
    closed: list[str] = []

    @asynccontextmanager
    async def held(address: str, name: str) -> AsyncIterator[None]:
        """A GET of `address` whose answer opened a stream (200), held until the block ends."""
        async def sent(message: Message) -> None:
            pass

        with budget.holding_once_open(address, lambda: closed.append(name), sent) as sending:
            await sending({"type": "http.response.start", "status": 200, "headers": []})
            yield

    async with held("a", "a1"), held("a", "a2"):
        async with held("b", "b1"):
            assert closed == ["a1"]
            async with held("c", "c1"):
                assert closed == ["a1", "a2"]  # a and b hold one each: the first address of the most goes
    assert closed == ["a1", "a2"] and budget.closed == 2
    async with held("a", "again"), held("b", "b2"):
        assert closed == ["a1", "a2"]  # every stream above ended: the count is back to nothing


def test_the_stream_budget_keeps_connections_for_everything_else() -> None:
    assert [stream_budget(n) for n in (1, 8, 20, 512)] == [1, 4, 16, 448]


async def test_a_flood_of_held_streams_closes_its_own_oldest_and_leaves_the_other_address_its_stream() -> None:
    # Before, a client that opened sessions each with its GET stream held a connection per stream until none was
    # left for anyone else: the fifth review's 512 streams got a newcomer's connection reset.
    async with _two_addresses() as (url, flood, other, tg, streams):
        listen, opened, ended = streams.listen, streams.opened, streams.ended

        floods = [await open_raw_session(flood, url) for _ in range(8)]
        for number, key in enumerate(floods):
            tg.start_soon(listen, flood, key)
            await eventually(lambda count=number + 1: len(opened) == count)  # in order: the first is the oldest
        mine = await open_raw_session(other, url)
        tg.start_soon(listen, other, mine)
        await eventually(lambda: ended == [floods[0]] and mine in opened)
        for key in (*floods, mine):  # a stream closed, never a session
            assert (await rpc(flood, url, "tools/list", session_id=key))[0].status_code == 200


@pytest.mark.process
def test_the_stream_budget_follows_the_connection_cap_lowered_to_the_open_file_limit() -> None:
    # A process allowed 300 open files serves far fewer connections than the default 512: its streams must leave room
    # below that, not below 512. Measured in a child, where the limit is lowered for it alone.
    code = ("import logging, resource, sys; logging.basicConfig(stream=sys.stderr)\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (300, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
            "from lazytools.transports.http_limits import fd_bounded\n"
            "print(fd_bounded(512, quiet=True)[0], fd_bounded(512)[0])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    quiet, said = (int(n) for n in done.stdout.split())
    assert quiet == said < 512 and stream_budget(quiet) < quiet
    assert done.stderr.count("does not fit the open-file limit") == 1  # the second call only


async def test_a_get_refused_closes_no_one_elses_stream() -> None:
    # Before, a GET counted against the budget before the SDK had looked at it: one the SDK then refused (a second
    # stream of a session: 409, no text/event-stream in Accept: 406, an unknown protocol version: 400) still closed
    # the oldest stream of the busiest address. One client with one session closed everyone's streams, one request
    # each, while holding none itself.
    async with _two_addresses() as (url, hostile, victim, tg, streams):
        listen, opened, ended = streams.listen, streams.opened, streams.ended

        mine = await open_raw_session(hostile, url)
        tg.start_soon(listen, hostile, mine)
        await eventually(lambda: mine in opened)
        theirs = [await open_raw_session(victim, url) for _ in range(7)]  # the budget is full
        for key in theirs:
            tg.start_soon(listen, victim, key)
        await eventually(lambda: len(opened) == 8)
        refused = [{"accept": ACCEPT}, {"accept": "application/json"},
                   {"accept": ACCEPT, "mcp-protocol-version": "1999-01-01"}]
        for headers in refused:
            response = await hostile.get(url, headers={**headers, "mcp-session-id": mine})
            assert response.status_code in (400, 406, 409)
        assert (await rpc(victim, url, "ping", session_id=theirs[0]))[0].status_code == 200  # a round trip
        assert ended == []


@asynccontextmanager
async def _two_addresses() -> AsyncIterator[tuple[str, httpx2.AsyncClient, httpx2.AsyncClient, TaskGroup,
                                                  HeldStreams]]:
    """A server with room for 8 streams (12 connections less 4), its `/mcp` URL, a client from 10.0.0.1 and one
    from 10.0.0.2 (uvicorn reads X-Forwarded-For from the loopback proxy), a task group for their streams."""
    async with serving(lazy(max_connections=12)) as url, \
            httpx2.AsyncClient(timeout=60, headers={"x-forwarded-for": "10.0.0.1"}) as first, \
            httpx2.AsyncClient(timeout=60, headers={"x-forwarded-for": "10.0.0.2"}) as second, \
            anyio.create_task_group() as tg:
        yield url, first, second, tg, HeldStreams(url)
        tg.cancel_scope.cancel()  # the streams still held
