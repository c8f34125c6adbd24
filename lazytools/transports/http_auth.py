"""Who an HTTP request acts for: the OAuth 2.1 resource server (RFC 9728 metadata, bearer checks, scopes), or the
single shared token's user, or nobody in particular; the request's `Principal` is left on its ASGI scope.

Built on the SDK's parts: `BearerAuthBackend` (with Starlette's `AuthenticationMiddleware`) puts the checked token
on `scope["user"]`, where the SDK's session manager also reads it to bind each session to the credential that
opened it; `create_protected_resource_routes` serves the metadata. The gate below is the SDK's
`RequireAuthMiddleware` with a challenge that names every scope needed, as RFC 6750 §3 has it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from pydantic import AnyHttpUrl
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..auth.fetch import Fetcher
from ..auth.issuer import Issuer
from ..auth.verifier import TokenChecks, VerifiedToken, Verifier
from ..identity import ANONYMOUS, SCOPE_KEY, ClaimNames, Principal, acting_as, named_principal
from ..settings import Settings
from .http_guard import jsonrpc_error

__all__ = ["EdgeAuth", "OAuthGate", "PrincipalOnScope", "edge_auth", "verifier_for"]

METADATA_ROOT = "/.well-known/oauth-protected-resource"


@dataclass(slots=True)
class EdgeAuth:
    """The middleware (after the Host/Origin guard) and the routes that identity adds to the app."""

    middleware: list[Middleware] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)


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
                               roles=settings.auth_roles_claim, scope=settings.auth_scope_claim),
    )
    return Verifier(issuer, checks)


def edge_auth(settings: Settings, protected_prefix: str | tuple[str, ...],
              verifier: Verifier | None = None) -> EdgeAuth:
    """Identity at the HTTP edge for these settings: OAuth when `auth_issuer` is set, else a named principal (the
    shared token's user when `auth_token` is set; HTTPGuard checks that token), else `ANONYMOUS`."""
    if settings.auth_issuer is None:
        principal = named_principal(settings.auth_token_user, "token") if settings.auth_token is not None \
            else ANONYMOUS
        return EdgeAuth(middleware=[Middleware(PrincipalOnScope, principal=principal)])
    assert settings.auth_audience is not None
    verifier = verifier or verifier_for(settings)
    resource = AnyHttpUrl(settings.auth_audience)
    routes = create_protected_resource_routes(
        resource_url=resource, authorization_servers=[AnyHttpUrl(settings.auth_issuer)],
        scopes_supported=list(settings.auth_scopes) or None, resource_name="lazytools",
    )
    # RFC 9728 puts the metadata at the well-known path suffixed with the resource's path (the SDK's route); some
    # clients look at the bare well-known path first, so it answers there too.
    if routes[0].path != METADATA_ROOT:
        routes.append(Route(METADATA_ROOT, endpoint=routes[0].endpoint, methods=["GET", "OPTIONS"]))
    return EdgeAuth(
        middleware=[
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier, resource_server_url=resource)),
            Middleware(OAuthGate, required_scopes=list(settings.auth_scopes),
                       resource_metadata_url=build_resource_metadata_url(resource), protected_prefix=protected_prefix),
        ],
        routes=routes,
    )


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
            presented = any(name == b"authorization" for name, _ in scope.get("headers", ()))
            await self._challenge(401, "invalid_token" if presented else None,
                                  "a valid bearer token is required" if presented else "missing bearer token")(
                scope, receive, send)
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
