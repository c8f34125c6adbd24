"""An upstream on the older HTTP+SSE transport whose stream cannot be used: the reason, at once, not a timeout."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from .helpers import running_http
from .upstreams.helpers import opened


def _sse_app(first: bytes | None) -> Starlette:
    """An SSE endpoint that sends `first` (an event) and then holds the stream open, or (None) ends it at once."""

    async def events(request: Request) -> StreamingResponse:
        async def body():  # type: ignore[no-untyped-def]
            if first is None:
                return
            yield first
            await anyio.sleep_forever()

        return StreamingResponse(body(), media_type="text/event-stream")

    return Starlette(routes=[Route("/sse", events)])


@pytest.mark.parametrize(("first", "reason"), [
    (b"event: endpoint\ndata: http://127.0.0.2:9/messages\n\n",
     "its SSE stream could not be used: Endpoint origin does not match connection origin: "
     "http://127.0.0.2:9/messages"),
    (None, "its SSE stream ended before it named the endpoint to send messages to"),
])
async def test_an_sse_stream_that_cannot_be_used_fails_its_start_with_why(tmp_path: Path, first: bytes | None,
                                                                          reason: str) -> None:
    # The start-up deadline is long: without the reason, the upstream would wait it out and say only that it did
    # not start in time.
    async with running_http(_sse_app(first)) as base:
        async with opened(tmp_path, {"old": {"url": base + "/sse"}}, connect_timeout=120) as o:
            upstream = o.gateway["old"]
            assert upstream.state == "failed" and upstream.error == reason
            assert o.catalog.names() == []
