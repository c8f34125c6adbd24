"""The SSE stream of an HTTP upstream, passed on one whole event at a time: however the bytes are cut into chunks
and whichever line ends the upstream writes, the events that come out are the events that went in (line ends made
`\\n`), and one past the bounds is replaced by an error for the request the stream answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from lazytools.sources.gateway.httpbounds import _Events
from lazytools.sources.gateway.stdio import MAX_CONTAINERS


class _Chunks:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


async def _through(body: bytes, cuts: list[int], request_id: int | None = 7, most: int = 10_000) -> bytes:
    edges = [0, *cuts, len(body)]
    stream = _Events(_Chunks([body[a:b] for a, b in zip(edges, edges[1:], strict=False)]), request_id, most)
    return b"".join([part async for part in stream])


EVENTS = [b"event: message", b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}', b"",
          b": a comment", b"retry: 100", b"", b"id: 1", b"event: message", b'data: {"jsonrpc":"2.0","id":7,"result":{}}',
          b""]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
async def test_events_come_out_whole_and_alike_however_the_stream_is_cut(end: bytes) -> None:
    body = end.join(EVENTS) + end
    expected = b"\n".join(EVENTS) + b"\n"
    for cut in range(1, len(body)):
        assert await _through(body, [cut]) == expected, cut
    assert await _through(body, list(range(1, len(body)))) == expected  # a byte at a time


async def test_an_event_past_the_bounds_becomes_an_error_for_its_request_and_the_stream_goes_on() -> None:
    long = b"event: message\ndata: " + b"x" * 30_000 + b"\n\n"
    crowded = b"event: message\ndata: [" + b",".join([b"[]"] * (MAX_CONTAINERS + 5)) + b"]\n\n"
    after = b'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\n\n'
    out = await _through(long + after, list(range(4096, len(long), 4096)))
    first, rest = out.split(b"\n\n", 1)
    error = json.loads(first.split(b"data: ", 1)[1])
    assert error["id"] == 7 and "is an event of 30,0" in error["error"]["message"] and rest == after
    out = await _through(crowded + after, [], most=10_000_000)
    error = json.loads(out.split(b"\n\n", 1)[0].split(b"data: ", 1)[1])
    assert f"holds {MAX_CONTAINERS + 6:,} arrays and objects" in error["error"]["message"]
    # A stream that answers no request (the GET stream) drops it.
    assert await _through(long + after, [5000], request_id=None) == after
    assert await _through(long + after, [], request_id=None) == after  # arrived whole in one chunk


def _error_of(out: bytes) -> dict[str, object]:
    assert out.startswith(b"event: message\ndata: ") and out.endswith(b"\n\n"), out[:200]
    error = json.loads(out.split(b"data: ", 1)[1])
    assert isinstance(error, dict)
    return error


@pytest.mark.parametrize("cuts", [[], [100], list(range(4096, 40_000, 4096)), list(range(1, 40_000, 997))])
async def test_on_a_stream_answering_no_one_request_an_event_past_the_bounds_is_an_error_for_its_own_id(
        cuts: list[int]) -> None:
    """On the legacy SSE transport every answer comes on the GET stream: one past the bounds was dropped and its
    call waited for its timeout. Its id is read from the start or end of its data, never holding the whole event."""
    text = b'"result":{"content":[{"type":"text","text":"' + b"x" * 30_000 + b'"}]}'
    first = b'event: message\ndata: {"jsonrpc":"2.0","id":7,' + text + b"}\n\n"
    last = b'event: message\ndata: {"jsonrpc":"2.0",' + text + b',"id":"k"}\nid: 12\n\n'
    split = b'event: message\ndata: {"jsonrpc":"2.0",\ndata: "id": 8,\ndata: ' + text + b"}\n\n"  # data lines joined
    after = b'event: message\ndata: {"jsonrpc":"2.0","id":9,"result":{}}\n\n'
    for event, request_id in [(first, 7), (last, "k"), (split, 8)]:
        out = await _through(event + after, [cut for cut in cuts if cut < len(event)], request_id=None)
        error = _error_of(out[:-len(after)])
        assert error["id"] == request_id and "is an event of 30," in str(error), error
        assert out.endswith(after)
    crowded = b'event: message\ndata: {"jsonrpc":"2.0","id":5,"result":[' + b",".join(
        [b"[]"] * (MAX_CONTAINERS + 5)) + b"]}\n\n"
    error = _error_of(await _through(crowded, cuts, request_id=None, most=10_000_000))
    assert error["id"] == 5 and f"holds {MAX_CONTAINERS + 7:,} arrays and objects" in str(error)


async def test_on_a_stream_answering_no_one_request_a_request_or_notification_past_the_bounds_is_dropped() -> None:
    params = b'"params":{"x":"' + b"x" * 30_000 + b'"}'
    after = b'event: message\ndata: {"jsonrpc":"2.0","id":9,"result":{}}\n\n'
    for data in (b'{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage",' + params + b"}",
                 b'{"jsonrpc":"2.0","method":"notifications/message",' + params + b"}",
                 b'{"jsonrpc":"2.0",' + params + b',"result":{},"more":{"id":4}}'):  # an id neither first nor last
        for cuts in ([], [5000, 20_000]):
            assert await _through(b"event: message\ndata: " + data + b"\n\n" + after, cuts, request_id=None) == after
