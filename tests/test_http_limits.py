"""Slow HTTP clients (slowloris) cannot hold connections open, and session ids stay out of INFO logs (issue #12).

Raw sockets on 127.0.0.1 against uvicorn running lazytools' app in this event loop; every loop is bounded.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import SocketStream
from mcp import Client

from lazytools import build_server
from lazytools.transports.http import build_app, http_server

from .conftest import make_settings, small_catalog

PARTIAL = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


@asynccontextmanager
async def serving(**settings: Any) -> AsyncIterator[tuple[str, int]]:
    """lazytools' own uvicorn server (its limits from `settings`) on a free port, in this event loop."""
    server = build_server(small_catalog(), make_settings(port=0, log_level="WARNING", **settings))
    http = http_server(build_app(server, server.settings), server.settings)
    async with anyio.create_task_group() as tg:
        tg.start_soon(http.serve)
        with anyio.fail_after(10):
            while not http.started:
                await anyio.sleep(0.005)
        port = http.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}", port
        finally:
            http.should_exit = True


async def closed_by_server(stream: SocketStream, within: float = 30) -> bytes:
    """Everything the server sends until it closes the connection (fails if it does not within `within` s)."""
    received = b""
    with anyio.fail_after(within):
        while True:
            try:
                received += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
                return received


async def test_connections_that_never_finish_their_headers_are_closed() -> None:
    async with serving(header_timeout=1, max_connections=512) as (base, port):
        slow = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(20)]
        for stream in slow:
            await stream.send(PARTIAL)
        async with httpx2.AsyncClient(timeout=10) as http:
            assert (await http.get(base + "/healthz")).status_code == 200
        for stream in slow:
            assert await closed_by_server(stream) == b""  # closed without an answer
            await stream.aclose()


async def test_a_kept_alive_connection_must_finish_its_next_request_too() -> None:
    async with serving(header_timeout=1) as (base, port):
        stream = await anyio.connect_tcp("127.0.0.1", port)
        await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        with anyio.fail_after(10):
            first = await stream.receive()
        assert first.startswith(b"HTTP/1.1 200")
        await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0")  # and nothing more
        assert await closed_by_server(stream) == b""
        await stream.aclose()


async def test_past_the_connection_cap_the_oldest_unfinished_one_makes_room() -> None:
    cap = 16
    async with serving(header_timeout=600, max_connections=cap) as (base, port):
        slow = []
        for _ in range(3 * cap):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.send(PARTIAL)
            slow.append(stream)
        # The first ones were closed to make room, long before their 600 s header deadline.
        for stream in slow[: 2 * cap]:
            assert await closed_by_server(stream) == b""
        async with httpx2.AsyncClient(timeout=10) as http:
            for _ in range(5):
                assert (await http.get(base + "/healthz")).status_code == 200
        for stream in slow:
            await stream.aclose()


async def test_a_body_that_never_arrives_gets_408() -> None:
    async with serving(body_timeout=1) as (base, port):
        stream = await anyio.connect_tcp("127.0.0.1", port)
        await stream.send(PARTIAL + b"Accept: application/json, text/event-stream\r\nContent-Length: 200\r\n\r\n"
                          b'{"jsonrpc"')
        answer = await closed_by_server(stream)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"Request body not received within 1 s" in answer
        await stream.aclose()


async def test_session_ids_are_cut_in_info_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with serving() as (base, _):
        async with Client(base + "/mcp", mode="legacy") as c:
            await c.list_tools()
    created = [r.getMessage() for r in caplog.records if "Created new transport with session ID" in r.getMessage()]
    assert len(created) == 1 and re.search(r"session ID: [0-9a-f]{8}…$", created[0]), created
    for record in caplog.records:
        assert not re.search(r"[0-9a-f]{32}", record.getMessage()), record.getMessage()


async def test_at_the_cap_a_connection_that_sent_part_of_its_headers_goes_before_a_silent_one() -> None:
    cap = 16
    async with serving(header_timeout=600, max_connections=cap) as (base, port):
        slow = []
        for _ in range(cap - 1):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.send(PARTIAL)
            slow.append(stream)
        quiet = await anyio.connect_tcp("127.0.0.1", port)  # connected, nothing sent yet (a client about to write)
        for _ in range(2 * cap):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.send(PARTIAL)
            slow.append(stream)
        for stream in slow[:cap]:
            assert await closed_by_server(stream) == b""
        await quiet.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        with anyio.fail_after(10):
            assert (await quiet.receive()).startswith(b"HTTP/1.1 200")
        for stream in [quiet, *slow]:
            await stream.aclose()


HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def test_at_the_cap_the_connection_idle_longest_makes_room() -> None:
    # Clients that each sent one cheap request and keep their connection alive (repeating it now and then) held
    # every slot: each newcomer, with a token or not, got 503.
    cap = 16
    async with serving(max_connections=cap) as (base, port):
        kept = []
        for _ in range(cap + 4):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.send(HEALTHZ)
            with anyio.fail_after(10):
                assert (await stream.receive()).startswith(b"HTTP/1.1 200")
            kept.append(stream)
        async with httpx2.AsyncClient(timeout=10) as http:
            for _ in range(3):
                assert (await http.get(base + "/healthz")).status_code == 200
        # The first to go idle were closed to make room, in order; the most recent ones still serve.
        for stream in kept[:4]:
            assert await closed_by_server(stream) == b""
        await kept[-1].send(HEALTHZ)
        with anyio.fail_after(10):
            assert (await kept[-1].receive()).startswith(b"HTTP/1.1 200")
        for stream in kept:
            await stream.aclose()


async def test_a_refused_connection_is_closed_once_answered() -> None:
    async with serving(auth_token="s3cret-token", max_connections=512) as (base, port):
        stream = await anyio.connect_tcp("127.0.0.1", port)
        # Two requests in one write: a kept-alive connection would answer both.
        await stream.send(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 2)
        answer = await closed_by_server(stream)
        assert answer.count(b"HTTP/1.1 401") == 1, answer[:500]
        assert b"connection: close" in answer.lower()
        await stream.aclose()


def body_post(length: int) -> bytes:
    """The headers of a `POST /mcp` announcing a body of `length` bytes (no token: the default)."""
    return (PARTIAL + b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n" % length)


async def test_at_the_cap_bodies_sent_a_byte_at_a_time_make_room() -> None:
    # Issue #20, round 2, F1: POSTs whose headers are complete and whose body trickles in (each reopened on its 408)
    # counted as being served and held every slot: every newcomer, /healthz too, got 503.
    cap = 16
    async with serving(max_connections=cap, body_timeout=600) as (base, port):
        slow = []
        for _ in range(cap):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.send(body_post(100_000) + b"{")
            slow.append(stream)
        async with httpx2.AsyncClient(timeout=10) as http:
            for _ in range(3):
                response = await http.get(base + "/healthz", headers={"Connection": "close"})
                assert response.status_code == 200
        # The first newcomer closed the slowest (the oldest on a tie); those after it found that slot free.
        assert await closed_by_server(slow[0]) == b""
        for stream in slow:
            await stream.aclose()


async def test_at_the_cap_the_slowest_body_goes_not_the_oldest_and_a_complete_one_is_served() -> None:
    cap = 8
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'.ljust(60_000)
    async with serving(max_connections=cap, body_timeout=600) as (base, port):
        fast = await anyio.connect_tcp("127.0.0.1", port)  # the oldest, but most of its body is in
        await fast.send(body_post(len(body)) + body[:50_000])
        async with httpx2.AsyncClient(timeout=10) as http:  # once answered, the server has read what came before
            assert (await http.get(base + "/healthz", headers={"Connection": "close"})).status_code == 200
        slow = []
        for _ in range(cap - 1):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.send(body_post(len(body)) + b"{")
            slow.append(stream)
        async with httpx2.AsyncClient(timeout=10) as http:
            assert (await http.get(base + "/healthz", headers={"Connection": "close"})).status_code == 200
        assert await closed_by_server(slow[0]) == b""
        await fast.send(body[50_000:])
        with anyio.fail_after(10):
            assert (await fast.receive()).startswith(b"HTTP/1.1 ")
        for stream in [fast, *slow]:
            await stream.aclose()
