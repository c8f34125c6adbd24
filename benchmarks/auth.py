"""What identity adds to each HTTP request: the token check, alone and as the edge middleware runs it.

A local issuer (metadata + JWKS on a loopback port) and RS256 tokens made here. Figures: a token's first check
(signature, claims), a known token's check (remembered until it expires), and the whole edge (Starlette's
AuthenticationMiddleware with the SDK's BearerAuthBackend, then OAuthGate) around a no-op app against the no-op
app alone, driven as ASGI calls in this process so no network time is counted.
"""

from __future__ import annotations

import time
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lazytools.settings import Settings
from lazytools.transports.http_auth import edge_auth, verifier_for

from .stats import percentiles

__all__ = ["auth_benchmarks"]


def _issuer_app(issuer: list[str], jwk: dict[str, Any]) -> Starlette:
    async def metadata(request: Request) -> JSONResponse:
        return JSONResponse({"issuer": issuer[0], "jwks_uri": issuer[0] + "/jwks"})

    async def jwks(request: Request) -> JSONResponse:
        return JSONResponse({"keys": [jwk]})

    return Starlette(routes=[Route("/.well-known/oauth-authorization-server/idp", metadata),
                             Route("/idp/jwks", jwks)])


async def auth_benchmarks(quick: bool = False, rounds: int | None = None) -> str:
    from tests.helpers import running_http

    rounds = rounds or (2_000 if quick else 20_000)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "k1", "alg": "RS256", "use": "sig"}
    issuer: list[str] = [""]
    async with running_http(_issuer_app(issuer, jwk)) as base:
        issuer[0] = base + "/idp"
        audience = "http://127.0.0.1:1/mcp"
        settings = Settings(_env_file=None, auth_issuer=issuer[0], auth_audience=audience,  # type: ignore[call-arg]
                            auth_scopes=["tools"])
        verifier = verifier_for(settings)

        def token(n: int) -> str:
            now = int(time.time())
            claims = {"iss": issuer[0], "aud": audience, "sub": f"user-{n}", "exp": now + 600, "iat": now,
                      "scope": "tools", "groups": ["team-a", "team-b"]}
            return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})

        await verifier.verify_token(token(-1))  # metadata and JWKS fetched once, before timing
        fresh = [token(n) for n in range(min(rounds, 1_000))]
        first: list[float] = []
        for item in fresh:
            started = time.perf_counter()
            assert await verifier.verify_token(item) is not None
            first.append(time.perf_counter() - started)
        known = fresh[0]
        again: list[float] = []
        for _ in range(rounds):
            started = time.perf_counter()
            await verifier.verify_token(known)
            again.append(time.perf_counter() - started)

        edge = edge_auth(settings, "/mcp", verifier)
        app: ASGIApp = _noop
        for layer in reversed(edge.middleware):
            app = layer.cls(app, *layer.args, **layer.kwargs)
        with_edge = await _asgi_times(app, known, rounds)
        bare = await _asgi_times(_noop, known, rounds)
        server_side = await _middleware_times(verifier, known, rounds)
    lines = ["## Identity (OAuth token check per request; RS256, 2048-bit key)"]
    for label, samples in (("first check of a token (signature, claims)", first),
                           ("check of a known token (remembered)", again),
                           ("no-op ASGI app alone", bare), ("no-op ASGI app behind the identity edge", with_edge),
                           ("the server's principal middleware around a no-op handler", server_side)):
        p50, p99 = percentiles(samples)
        lines.append(f"{label}: p50 {p50 * 1e6:.1f} µs, p99 {p99 * 1e6:.1f} µs ({len(samples)} runs)")
    added = percentiles(with_edge)[0] - percentiles(bare)[0]
    lines.append(f"added per request by the edge, known token: {added * 1e3:.4f} ms p50; with the server's "
                 f"middleware: {(added + percentiles(server_side)[0]) * 1e3:.4f} ms p50")
    return "\n".join(lines)


async def _middleware_times(verifier: Any, token: str, rounds: int) -> list[float]:
    """PrincipalMiddleware as the SDK runs it: the principal read from the request's scope, set for the handler."""
    from mcp.server.context import ServerRequestContext

    from lazytools.identity import SCOPE_KEY, current_principal, named_principal
    from lazytools.server.middleware.principal import PrincipalMiddleware

    access = await verifier.verify_token(token)
    request = Request({"type": "http", SCOPE_KEY: access.principal, "headers": []})
    ctx: ServerRequestContext[Any, Any] = ServerRequestContext(  # no session: the middleware does not read it
        session=None, lifespan_context=None, protocol_version="2025-11-25",  # type: ignore[arg-type]
        method="tools/call", request=request)
    middleware = PrincipalMiddleware(named_principal("local", "stdio"))

    async def handler(ctx: ServerRequestContext[Any, Any]) -> None:
        assert current_principal() is access.principal

    samples: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        await middleware(ctx, handler)
        samples.append(time.perf_counter() - started)
    return samples


async def _noop(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _asgi_times(app: ASGIApp, token: str, rounds: int) -> list[float]:
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode()),
               (b"content-type", b"application/json")]
    statuses: list[int] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    samples: list[float] = []
    for _ in range(rounds):
        scope: Scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "query_string": b"",
                        "scheme": "http", "server": ("127.0.0.1", 1), "client": ("127.0.0.1", 2), "root_path": ""}
        started = time.perf_counter()
        await app(scope, receive, send)
        samples.append(time.perf_counter() - started)
    assert set(statuses) == {200}, set(statuses)
    return samples


if __name__ == "__main__":
    import anyio

    print(anyio.run(auth_benchmarks, False))
