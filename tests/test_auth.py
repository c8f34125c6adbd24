"""The OAuth 2.1 resource server (auth/, transports/http_auth.py) against a real authorization server (tests/idp.py):
metadata, challenges, the SDK client's own OAuth flow end to end, and every kind of bad token refused."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import ValidationError

from lazytools.app import build_server
from lazytools.auth.fetch import Fetcher
from lazytools.auth.issuer import Issuer
from lazytools.auth.verifier import MAX_TOKEN_BYTES, TokenChecks, Verifier
from lazytools.identity import ClaimNames, principal_from_claims
from lazytools.transports.http import build_app

from .conftest import make_settings, small_catalog
from .helpers import _free_port, running_http
from .idp import EXCHANGE_CLIENT, IdP, new_key, running_idp

AUDIENCE_PATH = "/mcp"


@dataclass
class Served:
    idp: IdP
    url: str
    """lazytools' /mcp URL, which is also its audience."""
    base: str


@asynccontextmanager
async def served(tmp_path: Any = None, **overrides: Any) -> AsyncIterator[Served]:
    """The IdP, and lazytools over HTTP checking its tokens."""
    async with running_idp() as idp:
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        settings = make_settings(transport="http", port=port, auth_issuer=idp.issuer, auth_audience=base + "/mcp",
                                 auth_scopes=["tools"], auth_fetch_timeout=60.0, **overrides)
        server = build_server(small_catalog(), settings)
        async with running_http(build_app(server, settings), port=port):
            yield Served(idp, base + "/mcp", base)


def verifier(idp: IdP, **checks: Any) -> Verifier:
    fetcher = Fetcher(timeout=checks.pop("timeout", 60.0), max_bytes=checks.pop("max_bytes", 64 * 1024))
    issuer = Issuer(idp.issuer, fetcher, refetch_interval=checks.pop("refetch_interval", 60.0),
                    retry_interval=checks.pop("retry_interval", 5.0))
    options: dict[str, Any] = {"audience": "http://lazytools.test/mcp", "algorithms": ("RS256", "ES256"), **checks}
    return Verifier(issuer, TokenChecks(**options))


AUD = "http://lazytools.test/mcp"


async def test_metadata_names_the_issuer_at_both_well_known_paths() -> None:
    async with served() as s, httpx2.AsyncClient(timeout=60) as http:
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            answer = await http.get(s.base + path)
            assert answer.status_code == 200, path
            body = answer.json()
            assert body["resource"] == s.url
            assert body["authorization_servers"] == [s.idp.issuer]
            assert body["scopes_supported"] == ["tools"]


async def test_metadata_serves_an_issuer_without_a_path_exactly_as_configured() -> None:
    """pydantic's URL type writes `https://idp.example.com` as `https://idp.example.com/`: not the issuer."""
    port = _free_port()
    settings = make_settings(transport="http", port=port, auth_issuer="https://idp.example.com",
                             auth_audience=f"http://127.0.0.1:{port}/mcp")
    async with running_http(build_app(build_server(small_catalog(), settings), settings), port=port) as base, \
            httpx2.AsyncClient(timeout=60) as http:
        body = (await http.get(base + "/.well-known/oauth-protected-resource/mcp")).json()
    assert body["authorization_servers"] == ["https://idp.example.com"]
    assert body["resource"] == f"http://127.0.0.1:{port}/mcp"


async def test_the_documented_leeway_applies_to_exp_over_http() -> None:
    async with served(auth_leeway=30) as s, httpx2.AsyncClient(timeout=60) as http:
        now = int(time.time())
        for exp, status in ((now - 10, 200), (now - 120, 401)):  # 10 s past exp is within the 30 s of skew
            token = s.idp.sign(audience=s.url, exp=exp, iat=now - 600)
            answer = await http.post(s.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}},
                headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"})
            assert answer.status_code == status, (exp - now, answer.status_code, answer.text[:200])


async def test_no_token_is_401_pointing_at_the_metadata() -> None:
    async with served() as s, httpx2.AsyncClient(timeout=60) as http:
        answer = await http.post(s.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                 headers={"Accept": "application/json, text/event-stream"})
        assert answer.status_code == 401
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert f'resource_metadata="{s.base}/.well-known/oauth-protected-resource/mcp"' in challenge
        assert 'scope="tools"' in challenge
        bad = await http.post(s.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                              headers={"Authorization": "Bearer nonsense"})
        assert bad.status_code == 401
        assert 'error="invalid_token"' in bad.headers["www-authenticate"]
        assert (await http.get(s.base + "/healthz")).status_code == 200  # public


async def test_a_token_without_the_scope_is_403_naming_it() -> None:
    async with served() as s, httpx2.AsyncClient(timeout=60) as http:
        token = s.idp.sign(audience=s.url, scope="other")
        answer = await http.post(s.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                 headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 403
        challenge = answer.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge and 'scope="tools"' in challenge


async def test_a_hand_made_token_calls_tools() -> None:
    async with served() as s:
        token = s.idp.sign(audience=s.url)
        async with httpx2.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(streamable_http_client(s.url, http_client=http), mode="legacy") as client:
                result = await client.call_tool("search_tools", {"query": "weather forecast"})
                assert not result.is_error


class _Memory:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_the_sdk_client_discovers_authorizes_and_calls() -> None:
    """The SDK's own OAuth client: 401 → our metadata → the IdP's metadata → registration → authorization code
    with PKCE (the IdP approves at once; the test follows the redirect) → token → the call goes through."""
    async with served() as s:
        redirect: dict[str, str] = {}

        async def open_browser(url: str) -> None:
            async with httpx2.AsyncClient(timeout=60) as http:
                answer = await http.get(url)
            assert answer.status_code == 302
            redirect.update({k: v[0] for k, v in parse_qs(urlsplit(answer.headers["location"]).query).items()})

        async def callback() -> AuthorizationCodeResult:
            return AuthorizationCodeResult(code=redirect["code"], state=redirect["state"], iss=redirect.get("iss"))

        storage = _Memory()
        provider = OAuthClientProvider(
            s.url, OAuthClientMetadata(redirect_uris=["http://127.0.0.1:1/callback"], client_name="test",
                                       grant_types=["authorization_code"], token_endpoint_auth_method="none"),
            storage, redirect_handler=open_browser, callback_handler=callback)
        async with httpx2.AsyncClient(timeout=60, auth=provider) as http:
            async with Client(streamable_http_client(s.url, http_client=http), mode="legacy") as client:
                result = await client.call_tool("search_tools", {"query": "weather forecast"})
        assert not result.is_error
        assert storage.tokens is not None
        claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
        assert claims["aud"] == s.url  # the client asked for this resource (RFC 8707), the IdP minted it so
        assert "tools" in claims["scope"].split()


@pytest.mark.parametrize("case", [
    "expired", "not_yet_valid", "wrong_audience", "wrong_issuer", "alg_none", "hs256_with_public_key",
    "unknown_kid", "garbage", "huge", "no_exp", "no_sub", "empty_sub", "blank_sub",
])
async def test_bad_tokens_are_refused(case: str) -> None:
    async with running_idp() as idp:
        check = verifier(idp)
        assert await check.verify_token(idp.sign(audience=AUD)) is not None  # the same verifier accepts a good one
        now = int(time.time())
        key = idp.keys[0]
        public_pem = key.private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
        tokens = {
            "expired": lambda: idp.sign(audience=AUD, exp=now - 120, iat=now - 600),
            "not_yet_valid": lambda: idp.sign(audience=AUD, nbf=now + 600),
            "wrong_audience": lambda: idp.sign(audience="http://elsewhere.test/mcp"),
            "wrong_issuer": lambda: idp.sign(audience=AUD, iss="http://evil.test/idp"),
            "alg_none": lambda: jwt.encode({"iss": idp.issuer, "aud": AUD, "sub": "x", "exp": now + 300}, None,
                                           algorithm="none", headers={"kid": key.kid}),
            "hs256_with_public_key": lambda: _hmac_token(public_pem, {"iss": idp.issuer, "aud": AUD, "sub": "x",
                                                                      "exp": now + 300}, key.kid),
            "unknown_kid": lambda: idp.sign(audience=AUD, key=new_key("made-up")),
            "garbage": lambda: "a.b.c",
            "huge": lambda: idp.sign(audience=AUD, padding="x" * 200_000),
            "no_sub": lambda: jwt.encode({"iss": idp.issuer, "aud": AUD, "exp": now + 300, "client_id": "c"},
                                         key.private, algorithm="RS256", headers={"kid": key.kid}),
            "empty_sub": lambda: idp.sign(audience=AUD, sub=""),
            "blank_sub": lambda: idp.sign(audience=AUD, sub=" \t"),
            "no_exp": lambda: jwt.encode({"iss": idp.issuer, "aud": AUD, "sub": "x"}, key.private,
                                         algorithm="RS256", headers={"kid": key.kid}),
        }
        token = tokens[case]()
        if case == "huge":
            assert len(token) > MAX_TOKEN_BYTES
        assert await check.verify_token(token) is None


def _hmac_token(secret: bytes, claims: dict[str, Any], kid: str) -> str:
    """HS256 keyed with the public key's PEM: the algorithm-confusion attack (PyJWT refuses to make it, so by hand)."""
    import base64
    import hashlib
    import hmac
    import json

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = part(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    body = part(json.dumps(claims).encode())
    signature = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{part(signature)}"


async def test_bad_tokens_over_http_are_401() -> None:
    async with served() as s, httpx2.AsyncClient(timeout=60) as http:
        now = int(time.time())
        for token in (s.idp.sign(audience=s.url, exp=now - 120), s.idp.sign(audience="http://other.test/mcp"),
                      "x" * 200_000):
            answer = await http.post(s.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                     headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code in (401, 431), answer.status_code
        answer = await http.post(s.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                 headers={"Authorization": f"Bearer {s.idp.sign(audience=s.url, sub='')}"})
        assert answer.status_code == 401  # not the principal `unknown`


async def test_a_rotated_key_is_picked_up_and_unknown_kids_refetch_at_a_bounded_rate() -> None:
    async with running_idp() as idp:
        check = verifier(idp, refetch_interval=0.0)
        assert await check.verify_token(idp.sign(audience=AUD)) is not None
        assert idp.jwks_fetches == 1
        rotated = idp.rotate()
        assert await check.verify_token(idp.sign(audience=AUD, key=rotated)) is not None
        assert idp.jwks_fetches == 2

        slow = verifier(idp, refetch_interval=3600.0)
        assert await slow.verify_token(idp.sign(audience=AUD)) is not None
        fetched = idp.jwks_fetches
        made_up = new_key("made-up")
        for n in range(20):
            token = idp.sign(audience=AUD, key=made_up, headers={"kid": f"made-up-{n}"})
            assert await slow.verify_token(token) is None
        assert idp.jwks_fetches == fetched  # the interval has not passed: no refetch for made-up kids


@pytest.mark.parametrize("mode", ["down", "slow", "huge"])
async def test_a_broken_jwks_refuses_in_bounded_time(mode: str) -> None:
    async with running_idp() as idp:
        check = verifier(idp, timeout=2.0, max_bytes=64 * 1024)
        await check.issuer.metadata()  # read while the issuer is well, so the JWKS fetch is the one that fails
        idp.jwks_mode = mode  # type: ignore[assignment]
        with anyio.fail_after(30):  # a guard against a hang, not a timing assertion: the fetch gives up at 2 s
            assert await check.verify_token(idp.sign(audience=AUD)) is None
        assert idp.jwks_fetches == 1


async def test_a_jwks_that_was_down_is_asked_again_after_the_retry_interval_not_the_refetch_interval() -> None:
    async with running_idp() as idp:
        idp.jwks_mode = "down"
        check = verifier(idp, refetch_interval=3600.0, retry_interval=0.0)
        token = idp.sign(audience=AUD)
        assert await check.verify_token(token) is None
        idp.jwks_mode = "ok"
        assert await check.verify_token(token) is not None
        assert idp.jwks_fetches == 2
        waiting = verifier(idp, refetch_interval=3600.0, retry_interval=3600.0)
        idp.jwks_mode = "down"
        assert await waiting.verify_token(token) is None
        idp.jwks_mode = "ok"
        assert await waiting.verify_token(token) is None  # within the retry interval: not asked again
        assert idp.jwks_fetches == 3


async def test_opaque_tokens_go_to_introspection() -> None:
    async with running_idp() as idp:
        idp.opaque["opaque-1"] = {"sub": "carol", "aud": AUD, "iss": idp.issuer, "scope": "tools",
                                  "exp": int(time.time()) + 300}
        idp.opaque["opaque-2"] = {"sub": "dave", "aud": "http://other.test/mcp", "exp": int(time.time()) + 300}
        check = verifier(idp, introspection=True, client_id=EXCHANGE_CLIENT[0], client_secret=EXCHANGE_CLIENT[1])
        accepted = await check.verify_token("opaque-1")
        assert accepted is not None and accepted.subject == "carol" and accepted.scopes == ["tools"]
        assert await check.verify_token("opaque-2") is None  # another audience
        assert await check.verify_token("opaque-3") is None  # inactive
        assert await verifier(idp).verify_token("opaque-1") is None  # introspection off


def test_principal_claim_names_are_configurable() -> None:
    claims = {"iss": "https://idp", "preferred_username": "erin", "realm_access": {"roles": ["admin"]},
              "scp": ["tools", "read"], "grp": "a b", "exp": 10}
    principal = principal_from_claims(claims, ClaimNames(subject="preferred_username", groups="grp",
                                                         roles="realm_access.roles", groups_format="space"))
    assert principal.name == "erin" and principal.subject == "erin"
    assert principal.groups == {"a", "b"} and principal.roles == {"admin"} and principal.scopes == {"tools", "read"}
    assert principal.key == "oauth:https://idp#erin"
    assert "token" not in repr(principal)


@pytest.mark.parametrize("algorithms", [["none"], ["RS256", "HS256"], ["hs512"], []])
def test_settings_accept_only_asymmetric_algorithms(algorithms: list[str]) -> None:
    with pytest.raises(ValidationError):
        make_settings(auth_algorithms=algorithms)


def test_settings_need_an_audience_and_one_kind_of_auth() -> None:
    with pytest.raises(ValidationError, match="LAZYTOOLS_AUTH_AUDIENCE"):
        make_settings(auth_issuer="https://idp.test")
    with pytest.raises(ValidationError, match="exclude each other"):
        make_settings(auth_issuer="https://idp.test", auth_audience=AUD, auth_token="secret")
    assert make_settings(auth_algorithms="ES256, EdDSA").auth_algorithms == ["ES256", "EdDSA"]
    for url in ("idp.test", "https://idp.test/?x=1", "ftp://idp.test"):
        with pytest.raises(ValidationError, match="URL"):
            make_settings(auth_issuer=url, auth_audience=AUD)
