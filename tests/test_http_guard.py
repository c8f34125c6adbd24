"""HTTP safety: bearer token, Host and Origin checks, body limit, and JSON-RPC errors for malformed requests."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from lazytools.transports.http_guard import HTTPGuard

from .helpers import tool_names
from .test_http import ACCEPT, decode, lazy, open_raw_session, rpc, serving, session

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def assert_jsonrpc_error(response: httpx2.Response, status: int, code: int, fragment: str,
                         request_id: int | None = None) -> None:
    assert response.status_code == status
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id  # the id only where it could be read
    assert body["error"]["code"] == code and fragment in body["error"]["message"]


async def test_default_settings_bind_loopback_only() -> None:
    server = lazy()
    assert server.settings.host == "127.0.0.1" and server.settings.auth_token is None
    async with serving(server) as url:
        assert url.startswith("http://127.0.0.1:")


# -- bearer token --------------------------------------------------------------------------------------------------


async def test_token_is_required_when_set() -> None:
    server = lazy(auth_token="s3cret-token")
    async with serving(server) as url, httpx2.AsyncClient(timeout=60) as http:
        missing = await http.post(url, json=LIST, headers={"accept": ACCEPT})
        assert_jsonrpc_error(missing, 401, -32600, "missing token")
        assert missing.headers["www-authenticate"] == 'Bearer realm="lazytools"'
        wrong = await http.post(url, json=LIST, headers={"accept": ACCEPT, "authorization": "Bearer s3cret-tokem"})
        assert_jsonrpc_error(wrong, 401, -32600, "valid bearer token")
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
        basic = await http.post(url, json=LIST, headers={"accept": ACCEPT, "authorization": "Basic s3cret-token"})
        assert basic.status_code == 401
        # GET and DELETE are guarded too, not only POST.
        assert (await http.get(url, headers={"accept": "text/event-stream"})).status_code == 401
        assert (await http.delete(url, headers={"mcp-session-id": "x"})).status_code == 401
        # The health check stays open for probes.
        assert (await http.get(url.removesuffix("/mcp") + "/healthz")).status_code == 200
        assert len(server.store) == 0


async def test_real_client_with_the_token_works_and_without_it_fails() -> None:
    server = lazy(auth_token="s3cret-token")
    async with serving(server) as url:
        async with session(url, headers={"Authorization": "Bearer s3cret-token"}) as client:
            await client.call_tool("search_tools", {"tool_names": ["word_count"]})
            assert "word_count" in await tool_names(client)
        async with httpx2.AsyncClient(timeout=60) as http:
            with pytest.raises(BaseException) as refused:  # the 401 reaches the caller as an error, not a hang
                async with Client(streamable_http_client(url, http_client=http), mode="legacy"):
                    pass
        assert refused.group_contains(MCPError, match="Unauthorized: missing token")


# -- Host and Origin -----------------------------------------------------------------------------------------------


async def test_an_unsupported_protocol_version_is_a_400_naming_the_supported_ones() -> None:
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        for version in ("2099-01-01", "garbage", "x" * 5000):
            refused = await http.post(url, json=LIST, headers={"accept": ACCEPT, "mcp-protocol-version": version})
            assert_jsonrpc_error(refused, 400, -32600, "unsupported MCP-Protocol-Version")
            assert "2025-06-18" in refused.text and "2026-07-28" in refused.text and len(refused.text) < 1000
        refused = await http.get(url, headers={"accept": "text/event-stream", "mcp-protocol-version": "2099-01-01"})
        assert refused.status_code == 400
        for version in ("2025-06-18", "2025-11-25"):
            accepted = await http.post(url, json=LIST, headers={"accept": ACCEPT, "mcp-protocol-version": version})
            assert accepted.status_code == 200, version


async def test_foreign_origin_is_refused() -> None:
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        for era in ({}, {"mcp-protocol-version": "2026-07-28"}):
            refused = await http.post(url, json=LIST, headers={"accept": ACCEPT, "origin": "http://evil.example",
                                                               **era})
            assert_jsonrpc_error(refused, 403, -32600, "Origin 'http://evil.example' is not allowed")
        for origin in ("null", "http://localhost.evil.example:8000", "file://"):
            refused = await http.post(url, json=LIST, headers={"accept": ACCEPT, "origin": origin})
            assert refused.status_code == 403, origin
        for origin in ("http://localhost:6274", "http://127.0.0.1:3000", "https://[::1]"):
            accepted = await http.post(url, json=LIST, headers={"accept": ACCEPT, "origin": origin})
            assert accepted.status_code == 200, origin
        # a second Origin header is checked too: an allowed first one does not carry it past
        for pair in (["http://localhost:6274", "http://evil.example"], ["http://evil.example", "http://localhost:1"]):
            refused = await http.post(url, json=LIST, headers=[("accept", ACCEPT), *(("origin", o) for o in pair)])
            assert_jsonrpc_error(refused, 403, -32600, "Origin 'http://evil.example' is not allowed")


async def test_configured_origin_is_allowed_and_gets_cors_headers() -> None:
    async with serving(lazy(allowed_origins="https://app.example")) as url, httpx2.AsyncClient(timeout=60) as http:
        ok = await http.post(url, json=LIST, headers={"accept": ACCEPT, "origin": "https://app.example"})
        assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "https://app.example"
        assert "mcp-session-id" in ok.headers["access-control-expose-headers"].lower()
        preflight = await http.options(url, headers={
            "origin": "https://app.example", "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, mcp-session-id, content-type"})
        assert preflight.status_code == 200
        assert "mcp-session-id" in preflight.headers["access-control-allow-headers"].lower()
        other = await http.post(url, json=LIST, headers={"accept": ACCEPT, "origin": "https://other.example"})
        assert other.status_code == 403


async def test_foreign_host_is_refused_unless_configured() -> None:
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        rebound = await http.post(url, json=LIST, headers={"accept": ACCEPT, "host": "attacker.example:8000"})
        assert_jsonrpc_error(rebound, 421, -32600, "Host 'attacker.example:8000' is not accepted")
        health = await http.get(url.removesuffix("/mcp") + "/healthz", headers={"host": "attacker.example"})
        assert health.status_code == 421
        for host in ("localhost", "localhost:8000", "127.0.0.1:1", "[::1]:8000"):
            assert (await http.post(url, json=LIST, headers={"accept": ACCEPT, "host": host})).status_code == 200
        # two Host headers (HTTP clients refuse to send them; a raw socket does): refused, whichever is first
        port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
        body = json.dumps(LIST).encode()
        for first, second in (("localhost", "attacker.example"), ("attacker.example", "localhost")):
            async with await anyio.connect_tcp("127.0.0.1", port) as raw:
                await raw.send(b"POST /mcp HTTP/1.1\r\nHost: %s\r\nHost: %s\r\nContent-Type: application/json\r\n"
                               b"Accept: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                               % (first.encode(), second.encode(), ACCEPT.encode(), len(body), body))
                answer = b""
                with anyio.move_on_after(30):
                    while True:
                        try:
                            answer += await raw.receive()
                        except anyio.EndOfStream:
                            break
            assert answer.split(b"\r\n", 1)[0] in (b"HTTP/1.1 400 Bad Request", b"HTTP/1.1 421 Misdirected Request"), \
                answer[:200]
        # A Host that is not a name and a port is refused even when it starts like an allowed one.
        for host in ("127.0.0.1:8000@evil.example", "localhost:x", "[::1]evil.example", "[::1]:80x"):
            assert (await http.post(url, json=LIST, headers={"accept": ACCEPT, "host": host})).status_code == 421, host
    async with serving(lazy(allowed_hosts="mcp.internal")) as url, httpx2.AsyncClient(timeout=60) as http:
        named = await http.post(url, json=LIST, headers={"accept": ACCEPT, "host": "mcp.internal:8000"})
        assert named.status_code == 200
        assert (await http.post(url, json=LIST, headers={"accept": ACCEPT, "host": "x.internal"})).status_code == 421


@pytest.mark.parametrize(("options", "host", "expected"), [
    ({"bind_host": "0.0.0.0"}, "10.1.2.3:8000", False),
    ({"bind_host": "10.1.2.3"}, "10.1.2.3:8000", True),
    ({"bind_host": "0.0.0.0", "allowed_hosts": ["*"]}, "anything.example", True),
    ({"bind_host": "::"}, "[fe80::1]:8000", False),
    ({"bind_host": "127.0.0.1"}, "", False),
])
def test_host_rules(options: dict[str, Any], host: str, expected: bool) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("not called")

    guard = HTTPGuard(app, **options)
    assert guard._host_allowed(host) is expected  # the rule table, without a server per row


# -- body limit and malformed requests -----------------------------------------------------------------------------


async def test_oversized_body_is_refused_with_or_without_content_length() -> None:
    server = lazy(max_body_bytes=2048)
    big = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"pad": "x" * 4096}}}
    async with serving(server) as url, httpx2.AsyncClient(timeout=60) as http:
        declared = await http.post(url, json=big, headers={"accept": ACCEPT})
        assert_jsonrpc_error(declared, 413, -32600, "larger than 2048 bytes")

        async def chunks() -> Any:
            for _ in range(8):
                yield b" " * 512
            yield b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'

        streamed = await http.post(url, content=chunks(), headers={"accept": ACCEPT,
                                                                     "content-type": "application/json"})
        assert "content-length" not in streamed.request.headers
        assert_jsonrpc_error(streamed, 413, -32600, "larger than 2048 bytes")
        small = await http.post(url, json=LIST, headers={"accept": ACCEPT})
        assert small.status_code == 200


@pytest.mark.parametrize(("content", "content_type", "status", "code", "fragment"), [
    (b"{not json", "application/json", 400, -32700, "Parse error"),
    (b"", "application/json", 400, -32700, "Parse error"),
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]', "application/json", 400, -32600, "batches"),
    (b'{"id": 1, "method": "tools/list"}', "application/json", 400, -32600, "Invalid Request"),
    (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', "application/json", 400, -32600, "Invalid Request"),
    (b'"tools/list"', "application/json", 400, -32600, "Invalid Request"),
    (b"[" * 5_000 + b"]" * 5_000, "application/json", 400, -32700, "nested too deeply"),
    (b"[" * 100_000 + b"]" * 100_000, "application/json", 400, -32600, "holds 100,000 arrays and objects"),
    # Ids the SDK would take for a notification (202, never answered): the client would wait forever.
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', "application/json", 400, -32600, "an id must"),
    (b'{"jsonrpc": "2.0", "id": [1], "method": "tools/list"}', "application/json", 400, -32600, "an id must"),
    (b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', "application/json", 400, -32600, "an id must"),
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', "application/json", 400, -32600, "an id must"),
    (b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": [1, 2]}', "application/json", 400, -32600,
     "params must be an object"),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', "text/plain", 415, -32600, "Content-Type"),
    (b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_tools", "arguments": '
     b'{"query": "a \\ud800 b"}}}', "application/json", 400, -32700, "unpaired surrogate escape"),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"n": ' + b"9" * 5000 + b"}}",
     "application/json", 400, -32700, "an integer of more than 4,300 digits"),
])

async def test_malformed_requests_get_jsonrpc_errors(content: bytes, content_type: str, status: int, code: int,
                                                     fragment: str) -> None:
    server = lazy()
    async with serving(server) as url, httpx2.AsyncClient(timeout=60) as http:
        session_id = await open_raw_session(http, url)
        for headers in ({}, {"mcp-session-id": session_id}):
            response = await http.post(url, content=content, headers={"accept": ACCEPT,
                                                                       "content-type": content_type, **headers})
            # Only a request refused for its params or a string in them has an id that could be read (and is
            # answered with it).
            readable = fragment.startswith(("params", "unpaired"))
            assert_jsonrpc_error(response, status, code, fragment, 2 if readable else None)
        # The session survives bad requests next to it.
        _, listed = await rpc(http, url, "tools/list", session_id=session_id)
        assert [t["name"] for t in listed["result"]["tools"]] == ["search_tools", "invoke_tool"]


@pytest.mark.parametrize("content_type", ["Application/JSON", "APPLICATION/json; charset=UTF-8", "application/Json;charset=utf-8"])
async def test_the_media_type_is_read_without_regard_to_case(content_type: str) -> None:
    """RFC 9110 8.3.1: media types are case-insensitive. The SDK compares the exact spelling."""
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        response = await http.post(url, content=json.dumps(LIST).encode(),
                                   headers={"accept": ACCEPT, "content-type": content_type})
        assert response.status_code == 200, response.text
        assert [t["name"] for t in decode(response)["result"]["tools"]] == ["search_tools", "invoke_tool"]


async def test_a_refused_request_names_no_session() -> None:
    """The SDK made a session for an initialize it then refused (406) and for a GET without one, and named it in the
    answer: a session no request could use (found by the README-only review)."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "mcp", "version": "1"}}}
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        refused = await http.post(url, json=initialize, headers={"accept": "text/html"})
        assert refused.status_code == 406 and "mcp-session-id" not in refused.headers
        stray = await http.get(url, headers={"accept": "text/event-stream"})
        assert stray.status_code >= 400 and "mcp-session-id" not in stray.headers
        opened = await http.post(url, json=initialize, headers={"accept": ACCEPT})  # an accepted one still has it
        assert opened.status_code == 200 and opened.headers["mcp-session-id"]

async def test_protocol_level_mistakes_get_jsonrpc_errors() -> None:
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        unknown_session, message = await rpc(http, url, "tools/list", session_id="no-such-session")
        assert unknown_session.status_code == 404 and message["error"]["code"] == -32600
        session_id = await open_raw_session(http, url)
        _, unknown_method = await rpc(http, url, "tools/destroy", session_id=session_id)
        assert unknown_method["error"]["code"] == -32601
        _, bad_params = await rpc(http, url, "tools/call", {"arguments": {}}, session_id=session_id)
        assert bad_params["error"]["code"] == -32602
        not_acceptable = await http.post(url, json=LIST, headers={"accept": "text/html",
                                                                  "mcp-session-id": session_id})
        assert not_acceptable.status_code == 406 and not_acceptable.json()["error"]["code"] == -32600
        wrong_verb = await http.put(url, json=LIST, headers={"mcp-session-id": session_id})
        assert wrong_verb.status_code == 405
