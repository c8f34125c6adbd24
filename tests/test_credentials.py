"""Per-user upstream credentials (sources/gateway/credentials.py): a real HTTP upstream that records the
Authorization it received, reached through lazytools over HTTP by two users with tokens of a real IdP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import httpx2
import jwt
import mcp_types as types
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from lazytools.app import build_server
from lazytools.audit import AuditLog, open_audit
from lazytools.auth.exchange import ExchangeRequest, TokenExchanger
from lazytools.auth.fetch import Fetcher
from lazytools.auth.issuer import Issuer
from lazytools.catalog import Catalog
from lazytools.identity import principal_from_claims
from lazytools.origin import CallOrigin, calling
from lazytools.sources.gateway.gateway import open_gateway
from lazytools.sources.gateway.relay import USER_OWNER, Inflight, Relay
from lazytools.transports.http import build_app

from .conftest import make_settings
from .helpers import _free_port, eventually, running_http
from .idp import EXCHANGE_CLIENT, IdP, running_idp
from .upstreams.helpers import FAST
from .upstreams.recorder import Recorder

UPSTREAM_AUDIENCE = "https://recorder.test"


@dataclass
class Stack:
    idp: IdP
    url: str
    forward: Recorder
    exchange: Recorder
    audit: AuditLog
    audit_path: Path
    server: Any


@asynccontextmanager
async def stack(tmp_path: Path, **overrides: Any) -> AsyncIterator[Stack]:
    forward, exchange = Recorder(), Recorder()
    async with running_idp() as idp, running_http(forward.app()) as one, running_http(exchange.app()) as two:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {
            "fwd": {"url": one + "/mcp", "headers": {"Authorization": "Bearer service-token"}, "identity": "forward"},
            "xch": {"url": two + "/mcp", "headers": {"Authorization": "Bearer service-token"},
                    "identity": {"exchange": {"audience": UPSTREAM_AUDIENCE, "scope": "read"}}},
        }}))
        port = _free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        settings = make_settings(config=config, transport="http", port=port, auth_issuer=idp.issuer,
                                 auth_audience=url, auth_client_id=EXCHANGE_CLIENT[0],
                                 auth_client_secret=EXCHANGE_CLIENT[1], **overrides)
        audit_path = tmp_path / "audit.jsonl"
        audit = open_audit(str(audit_path))
        assert audit is not None
        catalog = Catalog()
        async with open_gateway(settings, catalog, backoff=FAST) as gateway:
            server = build_server(catalog, settings, front=gateway.front, audit=audit)
            async with running_http(build_app(server, settings), port=port):
                yield Stack(idp, url, forward, exchange, audit, audit_path, server)
        audit.close()


async def _call(url: str, token: str, tool: str, *, mode: str, timeout: float = 60.0) -> str:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
            result = await client.call_tool("invoke_tool", {"tool_name": tool, "arguments": {}})
    assert not result.is_error, result
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


async def test_forward_sends_each_user_their_own_token_only(tmp_path: Path) -> None:
    async with stack(tmp_path) as s:
        alice = s.idp.sign(audience=s.url, sub="alice")
        bob = s.idp.sign(audience=s.url, sub="bob")
        listed = list(s.forward.seen)
        assert listed and set(listed) == {"Bearer service-token"}  # the shared connection lists with the config's
        # alice with a session (its own connection, keyed by the session), bob without (keyed by the user)
        assert await _call(s.url, alice, "fwd__whoami", mode="legacy") == f"Bearer {alice}"
        assert await _call(s.url, bob, "fwd__whoami", mode="2026-07-28") == f"Bearer {bob}"
        assert await _call(s.url, bob, "fwd__whoami", mode="2026-07-28") == f"Bearer {bob}"
        later = s.forward.seen[len(listed):]
        assert set(later) == {f"Bearer {alice}", f"Bearer {bob}"}  # never the service token, never mixed up
        lines = await anyio.to_thread.run_sync(_audit_lines, s)
        calls = [line for line in lines if line["target"] == "fwd__whoami"]
        assert [line["principal"] for line in calls] == ["alice", "bob", "bob"]
        assert {line["upstream"] for line in calls} == {"fwd"} and {line["outcome"] for line in calls} == {"ok"}
        assert calls[0]["session"] is not None and calls[1]["session"] is None


def _audit_lines(s: Stack) -> list[dict[str, Any]]:
    s.audit.drain()
    return [json.loads(line) for line in s.audit_path.read_text().splitlines()]


async def test_exchange_sends_a_token_for_the_upstreams_audience_cached_per_user(tmp_path: Path) -> None:
    async with stack(tmp_path) as s:
        alice = s.idp.sign(audience=s.url, sub="alice")
        bob = s.idp.sign(audience=s.url, sub="bob")
        first = await _call(s.url, alice, "xch__whoami", mode="2026-07-28")
        claims = jwt.decode(first.removeprefix("Bearer "), options={"verify_signature": False})
        assert claims["aud"] == UPSTREAM_AUDIENCE and claims["sub"] == "alice" and claims["scope"] == "read"
        assert first != f"Bearer {alice}"
        assert await _call(s.url, alice, "xch__whoami", mode="2026-07-28") == first  # cached: no second exchange
        assert len(s.idp.exchanges) == 1
        assert s.idp.exchanges[0]["subject_token"] == alice and s.idp.exchanges[0]["audience"] == UPSTREAM_AUDIENCE
        other = await _call(s.url, bob, "xch__whoami", mode="legacy")
        assert jwt.decode(other.removeprefix("Bearer "), options={"verify_signature": False})["sub"] == "bob"
        assert len(s.idp.exchanges) == 2


async def test_first_calls_waiting_for_their_exchange_keep_their_credentials(tmp_path: Path) -> None:
    """Sessions of many users make their first call at once while the issuer holds every exchange: each new
    session's sweep saw the others' credentials without a connection yet and forgot them ("this user's connection
    has ended": the issue saw 15 of 96 fail without the hold; with every exchange held, 24 of 24 did, and 12 of 12
    do); none may fail. Holding every exchange until all wait makes each first call overlap every other, so a dozen
    users show what 96 unheld ones showed only sometimes (96 took ~4 min of a loaded machine)."""
    users = 12
    # The issuer holds every exchange until all of them wait: the timeouts are the test's, not the machine's speed.
    async with stack(tmp_path, auth_fetch_timeout=600.0, connect_timeout=600.0, call_timeout=600.0,
                     session_idle_timeout=3600.0) as s:
        s.idp.exchange_gate = anyio.Event()
        results: dict[int, str | BaseException] = {}

        async def first_call(number: int) -> None:
            token = s.idp.sign(audience=s.url, sub=f"user{number}")
            try:
                # The client waits as long as the issuer holds the exchange: the test's bound, not the machine's.
                results[number] = await _call(s.url, token, "xch__whoami", mode="legacy", timeout=600.0)
            except Exception as exc:  # every failure is counted below
                results[number] = exc

        async with anyio.create_task_group() as group:
            for number in range(users):
                group.start_soon(first_call, number)
            await eventually(lambda: s.idp.exchange_waiting == users, timeout=300)  # all waiting at once
            s.idp.exchange_gate.set()
        failed = {number: repr(result)[:120] for number, result in results.items() if not isinstance(result, str)}
        assert len(results) == users and failed == {}
        subjects = {jwt.decode(text.removeprefix("Bearer "), options={"verify_signature": False})["sub"]
                    for text in results.values() if isinstance(text, str)}
        assert subjects == {f"user{number}" for number in range(users)}  # each got their own token


async def test_a_user_without_a_token_of_their_own_cannot_reach_it(tmp_path: Path) -> None:
    async with stack(tmp_path) as s:
        # In memory (as over stdio) the request acts for the named local user, who holds no token.
        async with Client(s.server, mode="legacy") as client:
            result = await client.call_tool("invoke_tool", {"tool_name": "fwd__whoami", "arguments": {}})
        assert result.is_error
        content = result.content[0]
        assert isinstance(content, types.TextContent) and "no token of its own" in content.text
        assert "Bearer" not in content.text


async def test_prompts_and_resources_go_with_the_users_token_and_are_audited(tmp_path: Path) -> None:
    async with stack(tmp_path) as s:
        alice = s.idp.sign(audience=s.url, sub="alice")
        async with httpx2.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {alice}"}) as http:
            async with Client(streamable_http_client(s.url, http_client=http), mode="legacy") as client:
                prompt = await client.get_prompt("fwd__greeting")
                resource = await client.read_resource("memo://me")
        content = prompt.messages[0].content
        assert isinstance(content, types.TextContent) and content.text == f"Bearer {alice}"
        text = resource.contents[0]
        assert isinstance(text, types.TextResourceContents) and text.text == f"Bearer {alice}"
        lines = await anyio.to_thread.run_sync(_audit_lines, s)
        assert [(line["method"], line["target"], line["upstream"], line["principal"], line["outcome"])
                for line in lines] == [("prompts/get", "fwd__greeting", "fwd", "alice", "ok"),
                                       ("resources/read", "memo://me", "fwd", "alice", "ok")]
        assert lines[0]["argument_bytes"] == 0 and lines[1]["argument_sha256"] is None


async def test_another_user_cannot_use_a_session_or_its_connection(tmp_path: Path) -> None:
    """The SDK binds a session to the credential that opened it: bob presenting alice's session id is told it
    does not exist, and never reaches alice's connection to the upstream."""
    async with stack(tmp_path) as s:
        alice = s.idp.sign(audience=s.url, sub="alice")
        bob = s.idp.sign(audience=s.url, sub="bob")
        async with httpx2.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {alice}"}) as http:
            async with Client(streamable_http_client(s.url, http_client=http), mode="legacy") as client:
                await client.call_tool("invoke_tool", {"tool_name": "fwd__whoami", "arguments": {}})
                session = http.headers.get("mcp-session-id") or _session_of(s)
                async with httpx2.AsyncClient(timeout=60) as other:
                    call = {"name": "invoke_tool", "arguments": {"tool_name": "fwd__whoami", "arguments": {}}}
                    answer = await other.post(
                        s.url, json={"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call},
                        headers={"Authorization": f"Bearer {bob}", "mcp-session-id": session,
                                 "Accept": "application/json, text/event-stream",
                                 "mcp-protocol-version": "2025-11-25"})
                assert answer.status_code == 404
        assert f"Bearer {bob}" not in s.forward.seen


def _session_of(s: Stack) -> str:
    keys = [state.key for state in s.server.store]
    assert len(keys) == 1
    return str(keys[0])


async def test_concurrent_first_calls_of_a_user_share_one_exchange() -> None:
    async with running_idp() as idp:
        fetcher = Fetcher(timeout=60.0)  # the in-process issuer answers; 60 s is for a busy machine
        exchanger = TokenExchanger(Issuer(idp.issuer, fetcher), fetcher)
        request = ExchangeRequest(audience=UPSTREAM_AUDIENCE, client_id=EXCHANGE_CLIENT[0],
                                  client_secret=EXCHANGE_CLIENT[1])
        token = idp.sign(audience="http://lazytools.test/mcp", sub="alice")
        alice = principal_from_claims(jwt.decode(token, options={"verify_signature": False}), token=token)
        got: list[str] = []

        async def one() -> None:
            got.append(await exchanger.token_for(alice, request))

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(one)
        assert len(got) == 8 and len(set(got)) == 1
        assert len(idp.exchanges) == 1  # what the identity provider was asked: one exchange for all eight


class _Session:
    """A client session as the relay sees it, keeping what it is sent."""

    key = "session-1"
    capabilities = None

    def __init__(self) -> None:
        self.got: list[types.ServerNotification] = []

    def wants_log(self, level: types.LoggingLevel) -> bool:
        return True

    async def notify(self, notification: types.ServerNotification) -> None:
        self.got.append(notification)

    async def request(self, request: types.ServerRequest, result_type: type[Any]) -> Any:
        raise AssertionError("not asked")


class _Sessions:
    def __init__(self, *sessions: _Session) -> None:
        self.sessions = {s.key: s for s in sessions}

    def __iter__(self) -> Any:
        return iter(self.sessions.values())

    def get(self, key: str) -> _Session | None:
        return self.sessions.get(key)


async def test_a_users_connection_logs_to_that_users_request_and_never_to_other_sessions() -> None:
    relay = Relay()
    other = _Session()
    relay.clients = _Sessions(other)
    params = types.LoggingMessageNotificationParams(level="info", data="hello")
    mine: list[types.ServerNotification] = []

    async def keep(notification: types.ServerNotification) -> None:
        mine.append(notification)

    user = USER_OWNER + "oauth:https://idp#alice"
    with calling(CallOrigin(client=None, notify=keep)):  # alice's sessionless request, in flight
        await relay.log("fwd", Inflight(), user, params)
    assert len(mine) == 1 and other.got == []
    await relay.log("fwd", Inflight(), user, params)  # outside any request: nobody
    assert len(mine) == 1 and other.got == []
    await relay.log("fwd", Inflight(), None, params)  # a shared connection's message outside a request: everyone
    assert len(other.got) == 1




class _Restartable:
    """A recorder served by uvicorn in a task of `tg`, which `stop` ends (its sessions die with it)."""

    def __init__(self, tg: anyio.abc.TaskGroup, port: int) -> None:
        self.tg, self.port = tg, port
        self.server: uvicorn.Server | None = None
        self.done = anyio.Event()

    async def start(self, recorder: Recorder) -> None:
        config = uvicorn.Config(recorder.app(), host="127.0.0.1", port=self.port, lifespan="on", log_config=None,
                                log_level="critical", access_log=False, timeout_graceful_shutdown=1)
        server, done = uvicorn.Server(config), anyio.Event()
        self.server, self.done = server, done

        async def serve() -> None:
            try:
                await server.serve()
            finally:
                done.set()

        self.tg.start_soon(serve)
        await eventually(lambda: server.started)

    async def stop(self) -> None:
        assert self.server is not None
        self.server.should_exit = True
        await self.done.wait()


async def test_a_users_forwarded_connection_recovers_after_the_upstream_restarts(tmp_path: Path) -> None:
    """The restarted server forgot every session: each user's own connection gets 404 `Session not found`, drops
    it, reconnects with the user's token and sends the call once more (the server had not run it)."""
    upstream_port, port = _free_port(), _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"fwd": {
        "url": f"http://127.0.0.1:{upstream_port}/mcp", "headers": {"Authorization": "Bearer service-token"},
        "identity": "forward"}}}))

    async def whoami(client: Client) -> str:
        return _tool_text(await client.call_tool("invoke_tool", {"tool_name": "fwd__whoami", "arguments": {}}))

    async with running_idp() as idp, anyio.create_task_group() as tg:
        upstream = _Restartable(tg, upstream_port)
        await upstream.start(Recorder())
        settings = make_settings(config=config, transport="http", port=port, auth_issuer=idp.issuer,
                                 auth_audience=url)
        alice, bob = idp.sign(audience=url, sub="alice"), idp.sign(audience=url, sub="bob")
        catalog = Catalog()
        async with open_gateway(settings, catalog, backoff=FAST) as gateway, \
                running_http(build_app(build_server(catalog, settings, front=gateway.front), settings), port=port), \
                httpx2.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {alice}"}) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as session:  # type: ignore[arg-type]
            assert await whoami(session) == f"Bearer {alice}"  # a connection keyed by alice's session
            assert await _call(url, bob, "fwd__whoami", mode="2026-07-28") == f"Bearer {bob}"  # keyed by bob
            await upstream.stop()
            restarted = Recorder()
            await upstream.start(restarted)  # back, knowing no session
            assert await whoami(session) == f"Bearer {alice}"
            assert await _call(url, bob, "fwd__whoami", mode="2026-07-28") == f"Bearer {bob}"
            assert {f"Bearer {alice}", f"Bearer {bob}"} <= set(restarted.seen)
        await upstream.stop()


def _tool_text(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text
