"""Request headers are bounded in size and count, for both of uvicorn's HTTP parsers (issue #30, item 2): endless
header lines get a 431 and a closed connection long before any token check, and do not grow the process.

Raw sockets on 127.0.0.1 against lazytools' own uvicorn server in this event loop; every loop is bounded.
"""

from __future__ import annotations

import anyio
import httpx2
import pytest
from anyio.abc import SocketStream

from .test_http_limits import closed_by_server, serving

IMPLEMENTATIONS = ["httptools", "h11"]
LINE = b"X-Filler: " + b"a" * 1000 + b"\r\n"


async def _send_until_refused(stream: SocketStream, total: int) -> None:
    """Header lines up to `total` bytes (or until the server stops reading)."""
    sent = 0
    try:
        while sent < total:
            await stream.send(LINE * 64)
            sent += len(LINE) * 64
    except (anyio.BrokenResourceError, ConnectionResetError, BrokenPipeError):
        pass


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
async def test_endless_headers_get_431_before_the_token_is_checked(implementation: str) -> None:
    """Before: httptools kept every line (16 connections of 50 MiB each: 120 → 933 MB), h11 answered 400 at
    16 KiB. After: 431 once the headers pass LAZYTOOLS_MAX_HEADER_BYTES, with either parser."""
    async with serving(http_implementation=implementation, max_header_bytes=32 * 1024, header_timeout=600,
                       auth_token="s3cret-token") as (base, port):
        stream = await anyio.connect_tcp("127.0.0.1", port)
        await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        async with anyio.create_task_group() as tg:
            tg.start_soon(_send_until_refused, stream, 4 * 1024 * 1024)
            answer = await closed_by_server(stream)
            tg.cancel_scope.cancel()
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:300]
        assert b"LAZYTOOLS_MAX_HEADER_BYTES" in answer
        await stream.aclose()
        async with httpx2.AsyncClient(timeout=10) as http:  # the server goes on
            assert (await http.get(base + "/healthz")).status_code == 200
            # A request as large as a real one (a 16 KiB token, a few cookies) is served.
            big = await http.post(base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                  headers={"Authorization": "Bearer " + "t" * 16_000, "Cookie": "c=" + "v" * 8000})
            assert big.status_code == 401  # refused by the token check, not by the header cap


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
async def test_too_many_header_fields_get_431(implementation: str) -> None:
    async with serving(http_implementation=implementation, max_header_count=50,
                       auth_token="s3cret-token") as (base, port):
        async with httpx2.AsyncClient(timeout=10) as http:
            many = {f"x-h{number}": "v" for number in range(60)}
            answer = await http.post(base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                     headers=many)
            assert answer.status_code == 431, answer.text[:200]
            assert "LAZYTOOLS_MAX_HEADER_COUNT" in answer.json()["error"]["message"]
            answer = await http.get(base + "/healthz", headers=many)
            assert answer.status_code == 431
            fewer = {f"x-h{number}": "v" for number in range(30)}
            assert (await http.get(base + "/healthz", headers=fewer)).status_code == 200


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
async def test_a_kept_alive_connection_is_bounded_on_its_next_request_too(implementation: str) -> None:
    async with serving(http_implementation=implementation, max_header_bytes=32 * 1024,
                       header_timeout=600) as (base, port):
        stream = await anyio.connect_tcp("127.0.0.1", port)
        await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        with anyio.fail_after(10):
            assert (await stream.receive()).startswith(b"HTTP/1.1 200")
        await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        async with anyio.create_task_group() as tg:
            tg.start_soon(_send_until_refused, stream, 4 * 1024 * 1024)
            answer = await closed_by_server(stream)
            tg.cancel_scope.cancel()
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:300]
        await stream.aclose()


_PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
_POST = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         b"Accept: application/json, text/event-stream\r\n")


async def _answered(stream: SocketStream) -> bytes:
    """A whole response, chunked (an event stream) or with a Content-Length; its head is returned."""
    data = b""
    with anyio.fail_after(10):
        while b"\r\n\r\n" not in data:
            data += await stream.receive()
        head, _, rest = data.partition(b"\r\n\r\n")
        fields = head.lower().split(b"\r\n")
        if b"transfer-encoding: chunked" in fields:
            while not rest.endswith(b"0\r\n\r\n"):
                rest += await stream.receive()
        else:
            length = next(int(field.split(b":", 1)[1]) for field in fields if field.startswith(b"content-length:"))
            while len(rest) < length:
                rest += await stream.receive()
    return head


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
async def test_the_request_after_a_post_with_a_body_is_bounded_too(implementation: str) -> None:
    """Before: with httptools, the headers of a request that arrived while the POST before it on the same connection
    was being served were not counted (one header of 20 MB got a 200, +20-60 MB of RSS). After: a 431 once that
    POST's answer is out."""
    async with serving(http_implementation=implementation, max_header_bytes=16 * 1024,
                       header_timeout=600) as (_base, port):
        stream = await anyio.connect_tcp("127.0.0.1", port)
        # The next request right behind the POST's body, in one piece, as a client sends it without waiting for the
        # answer: the server reads it all before that answer is complete.
        await stream.send(_POST + b"Content-Length: %d\r\n\r\n" % len(_PING) + _PING
                          + b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + LINE * 40 + b"\r\n")
        answer = await closed_by_server(stream)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]  # the POST's answer, whole, then the 431
        assert answer.count(b"HTTP/1.1 ") == 2 and b"\r\n0\r\n\r\nHTTP/1.1 431 " in answer, answer[-300:]
        await stream.aclose()
        # The same headers sent after the POST's answer, a line at a time.
        stream = await anyio.connect_tcp("127.0.0.1", port)
        await stream.send(_POST + b"Content-Length: %d\r\n\r\n" % len(_PING) + _PING)
        assert (await _answered(stream)).startswith(b"HTTP/1.1 200 ")
        await stream.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        async with anyio.create_task_group() as tg:
            tg.start_soon(_send_until_refused, stream, 4 * 1024 * 1024)
            answer = await closed_by_server(stream)
            tg.cancel_scope.cancel()
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:300]
        await stream.aclose()


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
async def test_endless_trailers_of_a_chunked_body_get_431(implementation: str) -> None:
    """Before: with httptools, a chunked POST followed by 20 MB of trailer lines got a 200 (+22 MB of RSS)."""
    async with serving(http_implementation=implementation, max_header_bytes=32 * 1024,
                       header_timeout=600) as (_base, port):
        stream = await anyio.connect_tcp("127.0.0.1", port)
        await stream.send(_POST + b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(_PING) + _PING
                          + b"\r\n0\r\n")
        async with anyio.create_task_group() as tg:
            tg.start_soon(_send_until_refused, stream, 4 * 1024 * 1024)
            answer = await closed_by_server(stream)
            tg.cancel_scope.cancel()
        if implementation == "httptools":
            assert answer.startswith(b"HTTP/1.1 431 "), answer[:300]
        else:  # h11 stops reading the trailers (then the body's deadline answers) or refuses them past its buffer
            assert answer[:13] in (b"HTTP/1.1 431 ", b"HTTP/1.1 400 ", b"HTTP/1.1 408 "), answer[:300]
        await stream.aclose()


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("size", [66_000, 72_000, 80_000])
async def test_one_large_header_on_the_first_request_of_a_connection_gets_431(implementation: str, size: int) -> None:
    """Before (httptools): one header of 66-80 KB, the first request of its connection, was served: the parser held
    the header's first part uncounted (no callback yet) and the connection's own byte count stopped with the
    headers' end. Now the part the parser holds counts too."""
    async with serving(http_implementation=implementation, header_timeout=600) as (base, port):
        async with httpx2.AsyncClient(timeout=10) as http:
            answer = await http.get(base + "/healthz", headers={"X-Big": "b" * size})
            assert answer.status_code == 431, (answer.status_code, answer.text[:200])
            assert "LAZYTOOLS_MAX_HEADER_BYTES" in answer.text
            assert (await http.get(base + "/healthz", headers={"X-Big": "b" * 60_000})).status_code == 200
