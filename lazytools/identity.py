"""Who a request acts for: a `Principal`, made from a verified token's claims or named by the settings.

Every request has one. Over HTTP with OAuth it is the token's subject, groups, roles and scopes (claim names are
settings); with the single shared token it is the named principal `auth_token_user`; over stdio it is the named
principal `stdio_user`; over HTTP with no authentication at all it is `ANONYMOUS`. The HTTP edge puts the principal
on the ASGI scope under `SCOPE_KEY`; the server's middleware sets it as the current principal for the handler and
for everything the handler awaits (upstream calls, audit), read with `current_principal()`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

__all__ = [
    "ANONYMOUS",
    "SCOPE_KEY",
    "ClaimNames",
    "ListFormat",
    "Principal",
    "PrincipalKind",
    "acting_as",
    "current_principal",
    "named_principal",
    "principal_from_claims",
]

SCOPE_KEY = "lazytools.principal"
"""The ASGI scope key under which the HTTP edge leaves the request's `Principal`."""

PrincipalKind = Literal["oauth", "token", "stdio", "anonymous"]

ListFormat = Literal["list", "space", "comma"]
"""How a groups or roles claim lists its names: a JSON array (a lone string is one name), or one string split on
spaces or on commas."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Principal:
    """One user (or client acting for one) as policy, audit and upstream credentials see it."""

    name: str
    """What audit lines and policies name: the token's subject, or the named principal's name."""
    kind: PrincipalKind
    subject: str | None = None
    issuer: str | None = None
    client_id: str | None = None
    groups: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False, hash=False, repr=False)
    """Every claim of the token as verified (empty for named principals)."""
    token: str | None = field(default=None, compare=False, hash=False, repr=False)
    """The bearer token the request came with: sent on only to upstreams marked to receive it."""
    expires_at: float | None = field(default=None, compare=False, hash=False)

    @property
    def key(self) -> str:
        """Stable across requests and tokens of the same user, distinct across issuers: what caches and
        per-user connections are keyed by. A subject is unique only per issuer (RFC 9068)."""
        if self.kind == "oauth":
            return f"oauth:{self.issuer or ''}#{self.subject or ''}"
        return f"{self.kind}:{self.name}"


ANONYMOUS = Principal(name="anonymous", kind="anonymous")
"""HTTP served without any authentication (loopback, no token)."""


def named_principal(name: str, kind: Literal["token", "stdio"]) -> Principal:
    """The one user of the single shared token, or of a stdio process."""
    return Principal(name=name, kind=kind, subject=name)


@dataclass(frozen=True, slots=True)
class ClaimNames:
    """Where a token keeps what a principal is made of. A dotted name reaches into an object claim
    (`realm_access.roles`, as Keycloak nests roles)."""

    subject: str = "sub"
    groups: str = "groups"
    roles: str = "roles"
    scope: str = "scope"
    groups_format: ListFormat = "list"
    """The shape of the groups and roles claims. `list` by default: split on spaces, the one string "Ex engineering"
    would be the groups "Ex" and "engineering", and satisfy `group:engineering`."""


def principal_from_claims(claims: Mapping[str, Any], names: ClaimNames = ClaimNames(), *, token: str | None = None,
                          client_id: str | None = None) -> Principal:
    """The principal of a verified token. Scopes come from `names.scope`, else `scp` (Azure AD, Okta). Raises
    ValueError for a token without a subject, or with a blank one: a user nobody can name is no user a policy,
    an audit line or a per-user connection can tell apart from another."""
    subject = _text(_claim(claims, names.subject))
    if subject is None or not subject.strip():
        raise ValueError(f"the token has no subject ({names.subject!r} missing, empty or blank)")
    scopes = _words(_claim(claims, names.scope))
    if not scopes and names.scope == "scope":
        scopes = _words(claims.get("scp"))
    expires = claims.get("exp")
    client = client_id or _text(claims.get("client_id")) or _text(claims.get("azp"))
    return Principal(
        name=subject,
        kind="oauth",
        subject=subject,
        issuer=_text(claims.get("iss")),
        client_id=client,
        groups=_names(_claim(claims, names.groups), names.groups_format),
        roles=_names(_claim(claims, names.roles), names.groups_format),
        scopes=scopes,
        claims=MappingProxyType(dict(claims)),
        token=token,
        expires_at=float(expires) if isinstance(expires, (int, float)) and not isinstance(expires, bool) else None,
    )


def _claim(claims: Mapping[str, Any], name: str) -> Any:
    if name in claims:
        return claims[name]
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _words(value: Any) -> frozenset[str]:
    """A claim that lists names: a JSON array of strings, or one space-separated string (OAuth's `scope`)."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, (list, tuple)):
        return frozenset(item for item in value if isinstance(item, str) and item)
    return frozenset()


def _names(value: Any, shape: ListFormat) -> frozenset[str]:
    """The names a groups or roles claim lists, read as `shape` says."""
    if isinstance(value, str):
        if shape == "space":
            return frozenset(value.split())
        if shape == "comma":
            return frozenset(part.strip() for part in value.split(",") if part.strip())
        return frozenset({value}) if value else frozenset()
    if isinstance(value, (list, tuple)):
        return frozenset(item for item in value if isinstance(item, str) and item)
    return frozenset()


_current: ContextVar[Principal | None] = ContextVar("lazytools_principal", default=None)


def current_principal() -> Principal | None:
    """The principal of the request being served; None outside any request."""
    return _current.get()


@contextmanager
def acting_as(principal: Principal | None) -> Iterator[None]:
    """Mark the code inside as serving `principal` (the server's middleware wraps each request in it)."""
    token = _current.set(principal)
    try:
        yield
    finally:
        _current.reset(token)
