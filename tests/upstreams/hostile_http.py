"""A real streamable HTTP MCP server that writes its answers by hand, so that it can send what the SDK would not:
answers of any size, of millions of arrays, compressed though not asked to be, as JSON or as SSE events.

Served in the test's process (`serve`); stateless (no session id). Tools, each with an integer argument `size`:
`big` (`size` bytes of text), `crowded` (structured content of `size` empty arrays; `crowded_odd` the same as
`application/json-rpc`, a type the SDK reads as JSON), `gzip` (a small answer sent gzip-compressed; `gzip_sse` as
an SSE stream), `parts` (`size` text blocks), `never_ends_sse` (an SSE answer that sends one log message and
never ends: `HELD` counts those open and closed) and `echo`. A call's name ending in `_sse` answers as an SSE stream: a progress notification,
then the answer, each an event.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ..helpers import running_http

TOOLS = ["never_ends_sse", "parts", "big", "crowded", "crowded_odd", "gzip", "echo", "big_sse", "crowded_sse",
         "echo_sse", "gzip_sse"]


def _result(name: str, size: int) -> str:
    if name.startswith("big"):
        return json.dumps({"content": [{"type": "text", "text": "x" * size}]})
    if name.startswith("crowded"):
        return '{"content": [{"type": "text", "text": "rows"}], "structuredContent": {"rows": [%s]}}' % ",".join(
            ["[]"] * size)
    if name == "parts":
        return json.dumps({"content": [{"type": "text", "text": f"p{i}"} for i in range(size)]})
    return json.dumps({"content": [{"type": "text", "text": f"{name} {size}"}]})


def _answer(message: dict[str, Any]) -> str:
    ident = json.dumps(message["id"])
    method = message["method"]
    if method == "initialize":
        result = json.dumps({"protocolVersion": message["params"]["protocolVersion"],
                             "capabilities": {"tools": {}}, "serverInfo": {"name": "hostile-http", "version": "1"}})
    elif method == "tools/list":
        schema = {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]}
        result = json.dumps({"tools": [{"name": name, "description": f"The {name} tool.", "inputSchema": schema}
                                       for name in TOOLS]})
    elif method == "tools/call":
        params = message["params"]
        result = _result(params["name"], int(params.get("arguments", {}).get("size", 0)))
    elif method == "ping":
        result = "{}"
    else:
        return '{"jsonrpc": "2.0", "id": %s, "error": {"code": -32601, "message": "no"}}' % ident
    return '{"jsonrpc": "2.0", "id": %s, "result": %s}' % (ident, result)


async def _mcp(request: Request) -> Response:
    if request.method != "POST":
        return Response(status_code=405)
    message = json.loads(await request.body())
    if "id" not in message:
        return Response(status_code=202)
    answer = _answer(message)
    name = message.get("params", {}).get("name", "") if message["method"] == "tools/call" else ""
    if name.startswith("gzip"):
        return Response(gzip.compress(answer.encode()), headers={"Content-Encoding": "gzip"},
                        media_type="text/event-stream" if name.endswith("_sse") else "application/json")
    if name == "crowded_odd":
        return Response(answer.encode(), media_type="application/json-rpc")
    if name == "never_ends_sse":
        return StreamingResponse(_never_ends(), media_type="text/event-stream")
    if name.endswith("_sse"):
        progress = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                               "params": {"level": "info", "data": "working"}})
        # CRLF line ends, as the SSE format allows.
        body = f"event: message\r\ndata: {progress}\r\n\r\nevent: message\r\ndata: {answer}\r\n\r\n"
        return Response(body.encode(), media_type="text/event-stream")
    return Response(answer.encode(), media_type="application/json")


HELD = {"open": 0, "closed": 0}
"""The answers of `never_ends_sse` open now, and those their client closed."""


async def _never_ends() -> AsyncIterator[bytes]:
    HELD["open"] += 1
    try:
        log = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "data": "still working"}})
        yield f"event: message\ndata: {log}\n\n".encode()
        await anyio.sleep_forever()
    finally:
        HELD["open"] -= 1
        HELD["closed"] += 1


@asynccontextmanager
async def serve() -> AsyncIterator[str]:
    """The server on a free port of 127.0.0.1; yields its /mcp URL."""
    app = Starlette(routes=[Route("/mcp", _mcp, methods=["GET", "POST", "DELETE"])])
    async with running_http(app) as base:
        yield base + "/mcp"
