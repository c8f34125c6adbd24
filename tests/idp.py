"""A small real OAuth 2.1 authorization server for the identity tests, served by uvicorn on a free loopback port.

It publishes RFC 8414 metadata and a JWKS, registers clients (RFC 7591), approves every authorization request at
once (the test drives the redirect), issues RS256 JWTs signed with `cryptography` keys, introspects opaque tokens
(RFC 7662) and exchanges tokens (RFC 8693). Its JWKS can be made to fail: down, slow (never answers), huge.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode

import anyio
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from .helpers import running_http

__all__ = ["EXCHANGE_CLIENT", "IdP", "running_idp"]

EXCHANGE_CLIENT = ("lazytools", "lazytools-secret")
"""The client id and secret lazytools uses at this server (introspection, token exchange)."""

JwksMode = Literal["ok", "down", "slow", "huge"]


@dataclass
class _Key:
    kid: str
    private: RSAPrivateKey

    def jwk(self) -> dict[str, Any]:
        public = RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        return {**public, "kid": self.kid, "alg": "RS256", "use": "sig"}


def new_key(kid: str) -> _Key:
    return _Key(kid, rsa.generate_private_key(public_exponent=65537, key_size=2048))


@dataclass
class IdP:
    """The server's state; `base` is set once it listens."""

    base: str = ""
    keys: list[_Key] = field(default_factory=lambda: [new_key("key-1")])
    user: str = "alice"
    groups: list[str] = field(default_factory=lambda: ["team-a"])
    jwks_mode: JwksMode = "ok"
    jwks_fetches: int = 0
    introspections: int = 0
    opaque: dict[str, dict[str, Any]] = field(default_factory=dict)
    exchanges: list[dict[str, str]] = field(default_factory=list)
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    never: anyio.Event = field(default_factory=anyio.Event)
    exchange_gate: anyio.Event | None = None
    """When set to an event, token exchanges wait for it (counted in `exchange_waiting`): a slow issuer."""
    exchange_waiting: int = 0

    @property
    def issuer(self) -> str:
        return self.base + "/idp"

    def sign(self, claims: dict[str, Any] | None = None, *, key: _Key | None = None, lifetime: float = 300,
             headers: dict[str, Any] | None = None, audience: str | None = None, **extra: Any) -> str:
        """A JWT for `self.user` (claims may replace or add to the usual ones)."""
        key = key or self.keys[0]
        now = int(time.time())
        body: dict[str, Any] = {"iss": self.issuer, "sub": self.user, "aud": audience, "iat": now,
                                "exp": now + int(lifetime), "scope": "tools", "groups": list(self.groups),
                                "client_id": "test-client"}
        body.update(claims or {})
        body.update(extra)
        return jwt.encode(body, key.private, algorithm="RS256", headers={"kid": key.kid, **(headers or {})})

    def rotate(self) -> _Key:
        """A new signing key, published in front of the old one."""
        key = new_key(f"key-{len(self.keys) + 1}")
        self.keys.insert(0, key)
        return key

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/.well-known/oauth-authorization-server/idp", self._metadata),
            Route("/idp/jwks", self._jwks),
            Route("/idp/register", self._register, methods=["POST"]),
            Route("/idp/authorize", self._authorize),
            Route("/idp/token", self._token, methods=["POST"]),
            Route("/idp/introspect", self._introspect, methods=["POST"]),
        ])

    async def _metadata(self, request: Request) -> JSONResponse:
        return JSONResponse({
            "issuer": self.issuer,
            "authorization_endpoint": self.issuer + "/authorize",
            "token_endpoint": self.issuer + "/token",
            "registration_endpoint": self.issuer + "/register",
            "introspection_endpoint": self.issuer + "/introspect",
            "jwks_uri": self.issuer + "/jwks",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token",
                                      "urn:ietf:params:oauth:grant-type:token-exchange"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            "scopes_supported": ["tools", "admin"],
        })

    async def _jwks(self, request: Request) -> Response:
        self.jwks_fetches += 1
        if self.jwks_mode == "down":
            return JSONResponse({"error": "unavailable"}, status_code=503)
        if self.jwks_mode == "slow":
            await self.never.wait()  # set when the server stops
            return JSONResponse({})
        if self.jwks_mode == "huge":
            async def endless() -> AsyncIterator[bytes]:
                yield b'{"keys": ['
                for _ in range(10_000):
                    yield b'{"kty": "RSA", "n": "' + b"A" * 1000 + b'", "e": "AQAB"},'
                yield b"{}]}"
            return StreamingResponse(endless(), media_type="application/json")
        return JSONResponse({"keys": [key.jwk() for key in self.keys]})

    async def _register(self, request: Request) -> JSONResponse:
        metadata = await request.json()
        client_id = "client-" + secrets.token_hex(4)
        self.clients[client_id] = metadata
        return JSONResponse({**metadata, "client_id": client_id, "token_endpoint_auth_method": "none",
                             "client_id_issued_at": int(time.time())}, status_code=201)

    async def _authorize(self, request: Request) -> Response:
        query = request.query_params
        if query.get("client_id") not in self.clients or query.get("code_challenge_method") != "S256":
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        code = secrets.token_urlsafe(16)
        self.codes[code] = dict(query)
        location = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query.get("state", ""),
                                                            "iss": self.issuer})
        return RedirectResponse(location, status_code=302)

    async def _token(self, request: Request) -> JSONResponse:
        form = {k: str(v) for k, v in (await request.form()).items()}
        grant = form.get("grant_type")
        if grant == "authorization_code":
            asked = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if asked is None or asked["code_challenge"] != challenge or asked["client_id"] != form.get("client_id"):
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            token = self.sign(audience=asked.get("resource"), scope=asked.get("scope", ""),
                              client_id=asked["client_id"])
            return JSONResponse({"access_token": token, "token_type": "Bearer", "expires_in": 300,
                                 "scope": asked.get("scope", "")})
        if grant == "urn:ietf:params:oauth:grant-type:token-exchange":
            if request.headers.get("authorization") != _basic(*EXCHANGE_CLIENT):
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            try:
                subject = jwt.decode(form.get("subject_token", ""), self.keys[0].private.public_key(),
                                     algorithms=["RS256"], options={"verify_aud": False})
            except jwt.PyJWTError:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            self.exchanges.append(form)
            if self.exchange_gate is not None:
                self.exchange_waiting += 1
                await self.exchange_gate.wait()
            token = self.sign({"sub": subject["sub"], "act": {"sub": EXCHANGE_CLIENT[0]}},
                              audience=form.get("audience"), scope=form.get("scope", ""))
            return JSONResponse({"access_token": token, "token_type": "Bearer", "expires_in": 300,
                                 "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)

    async def _introspect(self, request: Request) -> JSONResponse:
        self.introspections += 1
        if request.headers.get("authorization") != _basic(*EXCHANGE_CLIENT):
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        form = await request.form()
        found = self.opaque.get(str(form.get("token", "")))
        return JSONResponse({"active": True, **found} if found is not None else {"active": False})


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@asynccontextmanager
async def running_idp() -> AsyncIterator[IdP]:
    idp = IdP()
    async with running_http(idp.app()) as base:
        idp.base = base
        try:
            yield idp
        finally:
            idp.never.set()
