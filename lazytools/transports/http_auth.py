"""Who an HTTP request acts for: the OAuth 2.1 resource server (RFC 9728 metadata, bearer checks, scopes), or the
single shared token's user, or nobody in particular; the request's `Principal` is left on its ASGI scope.

Built on the SDK's parts: `BearerAuthBackend` (with Starlette's `AuthenticationMiddleware`) puts the checked token
on `scope["user"]`, where the SDK's session manager also reads it to bind each session to the credential that
opened it; `create_protected_resource_routes` serves the metadata. The gate below is the SDK's
`RequireAuthMiddleware` with a challenge that names every scope needed, as RFC 6750 §3 has it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware, create_protected_resource_routes
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.authentication import AuthCredentials, BaseUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..auth.fetch import Fetcher
from ..auth.issuer import Issuer
from ..auth.verifier import Refusal, TokenChecks, VerifiedToken, Verifier
from ..identity import ANONYMOUS, SCOPE_KEY, ClaimNames, Principal, acting_as, named_principal
from ..settings import Settings
from .http_guard import jsonrpc_error

__all__ = ["EdgeAuth", "OAuthGate", "PrincipalOnScope", "edge_auth", "verifier_for"]

METADATA_ROOT = "/.well-known/oauth-protected-resource"
REFUSAL_KEY = "lazytools.refusal"
"""The ASGI scope key under which the bearer check leaves why it refused the request's token (a `Refusal`)."""


@dataclass(slots=True)
class EdgeAuth:
    """The middleware (after the Host/Origin guard) and the routes that identity adds to the app."""

    middleware: list[Middleware] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)
    principal: Principal | None = None
    """The one principal every request acts for (what `middleware` sets), when the settings fix it."""


def verifier_for(settings: Settings) -> Verifier:
    """The token check these settings describe (`auth_issuer` must be set)."""
    assert settings.auth_issuer is not None and settings.auth_audience is not None
    fetcher = Fetcher(timeout=settings.auth_fetch_timeout, max_bytes=settings.auth_fetch_max_bytes)
    issuer = Issuer(settings.auth_issuer, fetcher, jwks_url=settings.auth_jwks_url,
                    refetch_interval=settings.auth_jwks_refetch_interval)
    secret = settings.auth_client_secret.get_secret_value() if settings.auth_client_secret is not None else None
    checks = TokenChecks(
        audience=settings.auth_audience, algorithms=tuple(settings.auth_algorithms), leeway=settings.auth_leeway,
        introspection=settings.auth_introspection, introspection_url=settings.auth_introspection_url,
        client_id=settings.auth_client_id, client_secret=secret,
        claim_names=ClaimNames(subject=settings.auth_subject_claim, groups=settings.auth_groups_claim,
                               roles=settings.auth_roles_claim, scope=settings.auth_scope_claim,
                               groups_format=settings.auth_groups_format),
        refusal_ttl=settings.auth_refusal_cache_seconds,
        introspection_concurrency=settings.auth_introspection_concurrency,
        introspection_rate=settings.auth_introspection_rate,
    )
    return Verifier(issuer, checks)


def edge_auth(settings: Settings, protected_prefix: str | tuple[str, ...],
              verifier: Verifier | None = None) -> EdgeAuth:
    """Identity at the HTTP edge for these settings: OAuth when `auth_issuer` is set, else a named principal (the
    shared token's user when `auth_token` is set; HTTPGuard checks that token), else `ANONYMOUS`."""
    if settings.auth_issuer is None:
        principal = named_principal(settings.auth_token_user, "token") if settings.auth_token is not None \
            else ANONYMOUS
        return EdgeAuth(middleware=[Middleware(PrincipalOnScope, principal=principal)], principal=principal)
    assert settings.auth_audience is not None
    verifier = verifier or verifier_for(settings)
    resource = AnyHttpUrl(settings.auth_audience)
    routes = _metadata_routes(settings.auth_issuer, settings.auth_audience, list(settings.auth_scopes))
    # RFC 9728 puts the metadata at the well-known path suffixed with the resource's path (the SDK's route); some
    # clients look at the bare well-known path first, so it answers there too.
    if routes[0].path != METADATA_ROOT:
        routes.append(Route(METADATA_ROOT, endpoint=routes[0].endpoint, methods=["GET", "OPTIONS"]))
    return EdgeAuth(
        middleware=[
            Middleware(AuthenticationMiddleware, backend=ReasonedBearer(verifier, resource_server_url=resource)),
            Middleware(OAuthGate, required_scopes=list(settings.auth_scopes),
                       resource_metadata_url=build_resource_metadata_url(resource), protected_prefix=protected_prefix),
        ],
        routes=routes,
    )


def _metadata_routes(issuer: str, audience: str, scopes: list[str]) -> list[Route]:
    """The SDK's RFC 9728 route, serving the issuer and the resource exactly as configured: pydantic's URL type
    adds a `/` to a URL without a path, and a client compares the issuer it finds with the metadata's
    `issuer` character by character (RFC 8414 §3.3)."""
    resource = AnyHttpUrl(audience)
    metadata = ProtectedResourceMetadata(resource=resource, authorization_servers=[AnyHttpUrl(issuer)],
                                         scopes_supported=scopes or None, resource_name="lazytools")
    body = {**metadata.model_dump(mode="json", exclude_none=True), "resource": audience,
            "authorization_servers": [issuer]}

    async def handle(request: Request) -> Response:
        return JSONResponse(body, headers={"Cache-Control": "public, max-age=3600"})

    [route] = create_protected_resource_routes(resource_url=resource, authorization_servers=[AnyHttpUrl(issuer)])
    return [Route(route.path, endpoint=cors_middleware(handle, ["GET", "OPTIONS"]), methods=["GET", "OPTIONS"])]


class ReasonedBearer(BearerAuthBackend):
    """The SDK's bearer check, which also leaves why a token was refused on the scope (`REFUSAL_KEY`) for the gate's
    challenge."""

    def __init__(self, verifier: Verifier, *, resource_server_url: AnyHttpUrl | None = None) -> None:
        super().__init__(verifier, resource_server_url=resource_server_url)
        self.verifier = verifier

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        header = conn.headers.get("authorization")
        if not header or not header.lower().startswith("bearer "):
            return None
        found = await self.verifier.check(header[7:], client=conn.client.host if conn.client else "")
        if isinstance(found, Refusal):
            conn.scope[REFUSAL_KEY] = found
            return None
        if found.expires_at and found.expires_at < int(time.time()):
            conn.scope[REFUSAL_KEY] = Refusal("the token has expired")
            return None
        # The verifier checked `aud` against this server already; the SDK's resource check is the same one.
        checked: tuple[AuthCredentials, BaseUser] | None = await super().authenticate(conn)
        return checked


class PrincipalOnScope:
    """Every request acts for one fixed principal (the shared token's user, or anonymous)."""

    def __init__(self, app: ASGIApp, *, principal: Principal) -> None:
        self.app = app
        self.principal = principal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[SCOPE_KEY] = self.principal
        with acting_as(self.principal):  # for what runs before the server's middleware (its Mcp-Param check)
            await self.app(scope, receive, send)


class OAuthGate(RequireAuthMiddleware):
    """Requests under the protected prefix need a checked token with every required scope: 401 without one, 403
    `insufficient_scope` without the scopes, both pointing at the protected resource metadata."""

    def __init__(self, app: ASGIApp, required_scopes: list[str], resource_metadata_url: AnyHttpUrl,
                 protected_prefix: str | tuple[str, ...]) -> None:
        super().__init__(app, required_scopes, resource_metadata_url)
        self.protected_prefix = protected_prefix
        self._scope_text = " ".join(required_scopes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # CORS preflights carry no credentials by design; other paths (health, metadata) are public.
        if scope["type"] != "http" or scope["method"] == "OPTIONS" \
                or not scope["path"].startswith(self.protected_prefix):
            await self.app(scope, receive, send)
            return
        user = scope.get("user")
        access = user.access_token if isinstance(user, AuthenticatedUser) else None
        if not isinstance(access, VerifiedToken):
            refusal = scope.get(REFUSAL_KEY)
            if isinstance(refusal, Refusal) and refusal.busy:
                await jsonrpc_error(503, f"Service Unavailable: {refusal.description}",
                                    headers={"Retry-After": "1"})(scope, receive, send)
                return
            presented = any(name == b"authorization" for name, _ in scope.get("headers", ()))
            description = refusal.description if isinstance(refusal, Refusal) else "a valid bearer token is required"
            await self._challenge(401, "invalid_token" if presented else None,
                                  description if presented else "missing bearer token")(scope, receive, send)
            return
        missing = [name for name in self.required_scopes if name not in access.scopes]
        if missing:
            await self._challenge(403, "insufficient_scope", f"the token lacks scope {' '.join(missing)}")(
                scope, receive, send)
            return
        scope[SCOPE_KEY] = access.principal
        with acting_as(access.principal):  # for what runs before the server's middleware (its Mcp-Param check)
            await self.app(scope, receive, send)

    def _challenge(self, status: int, error: str | None, description: str) -> ASGIApp:
        parts = [f'resource_metadata="{self.resource_metadata_url}"']
        if self._scope_text:
            parts.append(f'scope="{self._scope_text}"')
        if error is not None:
            parts += [f'error="{error}"', f'error_description="{description}"']
        headers = {"WWW-Authenticate": "Bearer " + ", ".join(parts)}
        reason = "Unauthorized" if status == 401 else "Forbidden"
        return jsonrpc_error(status, f"{reason}: {description}", headers=headers)
