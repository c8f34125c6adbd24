"""One user cannot take every session (issue #30, item 3): an OAuth principal holds at most
LAZYTOOLS_MAX_SESSIONS_PER_PRINCIPAL sessions, across replicas sharing a real Redis, and each `initialize` counts
against its calls per minute. Through the real HTTP server with tokens of a real identity provider (tests/idp.py)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest

from lazytools.app import build_server, open_state
from lazytools.policy.limits import WINDOW, RedisRateLimiter
from lazytools.server.middleware.shared_sessions import SharedSessions
from lazytools.transports.http import build_app

from .cluster import running_redis
from .conftest import make_settings, small_catalog
from .helpers import running_http
from .idp import IdP, running_idp
from .test_auth import served

AUDIENCE = "http://lazytools.test/mcp"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


async def initialize(http: httpx2.AsyncClient, url: str, token: str) -> httpx2.Response:
    return await http.post(url, content=json.dumps(INITIALIZE), headers={**HEADERS, "authorization": f"Bearer {token}"})


async def test_one_user_holds_at_most_its_share_of_sessions_and_others_still_open_theirs() -> None:
    """Before: alice opened every session the server holds (LAZYTOOLS_MAX_SESSIONS) and bob's initialize got 503."""
    async with served(max_sessions=6, max_sessions_per_principal=3) as s, httpx2.AsyncClient(timeout=30) as http:
        alice, bob = s.idp.sign(audience=s.url), s.idp.sign(audience=s.url, sub="bob")
        answers = [await initialize(http, s.url, alice) for _ in range(5)]
        assert [a.status_code for a in answers] == [200, 200, 200, 429, 429], [a.text[:200] for a in answers]
        assert "at most 3 at once" in answers[3].json()["error"]["message"]
        assert answers[3].json()["id"] == 1
        assert (await initialize(http, s.url, bob)).status_code == 200
        # alice ends a session: she may open one again.
        first = answers[0].headers["mcp-session-id"]
        ended = await http.delete(s.url, headers={"mcp-session-id": first, "authorization": f"Bearer {alice}"})
        assert ended.status_code == 200
        assert (await initialize(http, s.url, alice)).status_code == 200
        assert (await initialize(http, s.url, alice)).status_code == 429


async def test_initialize_counts_against_the_calls_per_minute() -> None:
    """Before: a user limited to 5 calls a minute opened 40 sessions."""
    async with served(rate_limit=5, max_sessions_per_principal=100) as s, httpx2.AsyncClient(timeout=30) as http:
        alice = s.idp.sign(audience=s.url)
        for _ in range(2):  # a second try when the minute turned while counting (its counts start again)
            began = int(time.time() // WINDOW)
            statuses = [(await initialize(http, s.url, alice)).status_code for _ in range(8)]
            if int(time.time() // WINDOW) == began:
                break
        assert statuses.count(200) <= 5 and 429 in statuses, statuses
        refused = await initialize(http, s.url, alice)
        assert refused.status_code == 429 and "Rate limit" in refused.json()["error"]["message"]
        assert int(refused.headers["retry-after"]) >= 1


@asynccontextmanager
async def replica(idp: IdP, redis_url: str, **overrides: Any) -> AsyncIterator[str]:
    """A replica on the shared Redis, in this process: its /mcp URL."""
    settings = make_settings(transport="http", state_url=redis_url, auth_issuer=idp.issuer, auth_audience=AUDIENCE,
                             auth_fetch_timeout=60.0, **overrides)
    async with open_state(settings) as state:
        server = build_server(small_catalog(), settings,
                              limiter=RedisRateLimiter(state.client, prefix=settings.state_prefix))
        SharedSessions(server, state).install()
        async with running_http(build_app(server, settings, state=state)) as base:
            yield base + "/mcp"


@pytest.mark.process
async def test_a_users_share_of_sessions_holds_across_replicas_sharing_redis() -> None:
    async with running_redis() as redis, running_idp() as idp, \
            replica(idp, redis.url, max_sessions_per_principal=3) as one, \
            replica(idp, redis.url, max_sessions_per_principal=3) as two, httpx2.AsyncClient(timeout=30) as http:
        alice, bob = idp.sign(audience=AUDIENCE), idp.sign(audience=AUDIENCE, sub="bob")
        opened = [await initialize(http, url, alice) for url in (one, two, one, two, one)]
        assert [a.status_code for a in opened] == [200, 200, 200, 429, 429], [a.text[:200] for a in opened]
        assert (await initialize(http, two, bob)).status_code == 200
        # A session that ended (DELETE on either replica) frees its place on every replica.
        key = opened[1].headers["mcp-session-id"]
        assert (await http.delete(one, headers={"mcp-session-id": key, "authorization": f"Bearer {alice}"})) \
            .status_code == 200
        assert (await initialize(http, two, alice)).status_code == 200
        assert (await initialize(http, one, alice)).status_code == 429
