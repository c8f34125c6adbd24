"""The checks in front of `/mcp`, folded into one pass (transports/http_edge.py), in every wiring `build_app` makes:
each still refuses what its own layer refused, in the same order, and counts a request in flight while it is served.
The app is driven as uvicorn drives it (an ASGI scope, receive and send), without a lifespan: every request below
is answered before it would reach the SDK."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from starlette.applications import Starlette

from lazytools import build_server
from lazytools.identity import ANONYMOUS, SCOPE_KEY, Principal
from lazytools.transports.http import build_app

from .conftest import make_settings, small_catalog
from .helpers import eventually

TOKEN = "s3cret-token"
WIRINGS: dict[str, dict[str, Any]] = {
    "anonymous": {},
    "token": {"auth_token": TOKEN},
    "cors and token": {"auth_token": TOKEN, "allowed_origins": ["https://app.example"]},
    "oauth": {"auth_issuer": "https://idp.example", "auth_audience": "http://127.0.0.1:8000/mcp"},
    "cors and oauth": {"auth_issuer": "https://idp.example", "auth_audience": "http://127.0.0.1:8000/mcp",
                       "allowed_origins": ["https://app.example"]},
}
CALL = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'


def _app(wiring: str) -> Starlette:
    settings = make_settings(transport="http", max_header_count=20, max_header_bytes=8 * 1024, **WIRINGS[wiring])
    return build_app(build_server(small_catalog(), settings), settings)


def _scope(headers: dict[str, str] | list[tuple[str, str]], method: str = "POST") -> dict[str, Any]:
    pairs = headers.items() if isinstance(headers, dict) else headers
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
            "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "", "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8000), "state": {},
            "headers": [(name.lower().encode(), value.encode()) for name, value in pairs]}


def _headers(wiring: str, **extra: str) -> dict[str, str]:
    headers = {"host": "127.0.0.1:8000", "content-type": "application/json",
               "accept": "application/json, text/event-stream", **extra}
    if "auth_token" in WIRINGS[wiring]:
        headers.setdefault("authorization", f"Bearer {TOKEN}")
    return headers


async def _status(app: Starlette, scope: dict[str, Any], body: bytes = CALL) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])


@pytest.mark.parametrize("wiring", WIRINGS)
async def test_each_check_still_refuses_what_its_layer_refused(wiring: str) -> None:
    app = _app(wiring)
    many = [*_headers(wiring).items(), *((f"x-h{number}", "v") for number in range(30))]
    status, body = await _status(app, _scope(many))
    assert status == 431 and b"LAZYTOOLS_MAX_HEADER_COUNT" in body
    status, body = await _status(app, _scope(_headers(wiring, cookie="c" * 9000)))
    assert status == 431 and b"LAZYTOOLS_MAX_HEADER_BYTES" in body
    status, body = await _status(app, _scope(_headers(wiring, host="attacker.example")))
    assert status == 421 and b"DNS rebinding" in body
    status, body = await _status(app, _scope([*_headers(wiring).items(), ("host", "127.0.0.1")]))
    assert status == 400 and b"more than one Host" in body
    status, body = await _status(app, _scope(_headers(wiring, origin="http://evil.example")))
    assert status == 403 and b"is not allowed" in body
    if wiring != "anonymous":
        status, _ = await _status(app, _scope(_headers(wiring, authorization="Bearer wrong")))
        assert status == 401
    status, body = await _status(app, _scope(_headers(wiring, **{"content-type": "text/plain"})))
    assert status == (415 if wiring in ("anonymous", "token", "cors and token") else 401)


@pytest.mark.parametrize("wiring", ["anonymous", "token", "cors and token"])
async def test_a_request_is_counted_in_flight_and_acts_for_its_principal(wiring: str) -> None:
    app = _app(wiring)
    inflight = app.state.inflight
    scope = _scope(_headers(wiring, **{"content-type": "Application/JSON"}))
    arrived = anyio.Event()
    answered: list[int] = []

    async def receive() -> dict[str, Any]:
        await arrived.wait()
        return {"type": "http.request", "body": b"[1, 2]", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answered.append(message["status"])

    async with anyio.create_task_group() as tg:
        tg.start_soon(app, scope, receive, send)
        await eventually(lambda: inflight.count == 1)
        principal = scope[SCOPE_KEY]
        assert isinstance(principal, Principal)
        assert principal == ANONYMOUS if wiring == "anonymous" else principal.kind == "token"
        arrived.set()
    assert answered == [400]  # a batch, refused by the endpoint once the body came
    assert inflight.count == 0 and inflight.last_started > 0


@pytest.mark.parametrize("wiring", ["oauth", "cors and oauth"])
async def test_without_a_token_oauth_refuses_before_the_body_is_read(wiring: str) -> None:
    app = _app(wiring)
    status, body = await _status(app, _scope(_headers(wiring)))
    assert status == 401 and b"missing bearer token" in body
    assert app.state.inflight.count == 0
