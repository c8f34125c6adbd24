"""The token check of a resource server: a bearer token in, the SDK's `AccessToken` (with every claim) or None out.

JWTs are checked locally: size first (a 200 KB token is refused unread), then the header's algorithm against the
allow-list (never `none`, never HMAC), the key its `kid` names from the issuer's JWKS, the signature, `iss`,
`aud` (this server's canonical URI), `exp` and `nbf` with a small leeway. Opaque tokens go to the issuer's RFC 7662
introspection endpoint when that is enabled. Accepted tokens are remembered until they expire (bounded), so a
client's next request costs a dictionary lookup, not a signature check.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jwt
from mcp.server.auth.provider import AccessToken
from pydantic import PrivateAttr

from ..identity import ClaimNames, Principal, principal_from_claims
from .fetch import AuthFetchError
from .issuer import Issuer

__all__ = ["MAX_TOKEN_BYTES", "TokenChecks", "VerifiedToken", "Verifier"]

logger = logging.getLogger(__name__)

MAX_TOKEN_BYTES = 16 * 1024
"""Longest token read. Real JWTs with group claims stay under a few KB; HTTP servers cap headers near 8-16 KB."""

_REMEMBERED = 10_000
"""Accepted tokens remembered at once (least recently used leave first)."""

_INTROSPECTION_TTL = 60.0
"""Seconds an introspection answer is trusted: a revoked token is refused within this."""


@dataclass(frozen=True, slots=True)
class TokenChecks:
    """What a token must satisfy."""

    audience: str
    algorithms: Sequence[str]
    leeway: float = 30.0
    introspection: bool = False
    introspection_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    claim_names: ClaimNames = ClaimNames()


class VerifiedToken(AccessToken):
    """The SDK's `AccessToken` of a checked token, with the principal it stands for (the HTTP edge reads it)."""

    _principal: Principal | None = PrivateAttr(default=None)

    @property
    def principal(self) -> Principal:
        assert self._principal is not None
        return self._principal


class Verifier:
    """The SDK's `TokenVerifier` for one issuer."""

    def __init__(self, issuer: Issuer, checks: TokenChecks) -> None:
        self.issuer = issuer
        self.checks = checks
        self._accepted: OrderedDict[bytes, tuple[VerifiedToken, float]] = OrderedDict()

    async def verify_token(self, token: str) -> VerifiedToken | None:
        if not token or len(token) > MAX_TOKEN_BYTES:
            return None
        digest = hashlib.sha256(token.encode()).digest()
        remembered = self._accepted.get(digest)
        now = time.time()
        if remembered is not None:
            if now < remembered[1]:
                self._accepted.move_to_end(digest)
                return remembered[0]
            del self._accepted[digest]
        try:
            if token.count(".") == 2:
                access, until = await self._check_jwt(token, now)
            elif self.checks.introspection:
                access, until = await self._introspect(token, now)
            else:
                return None
        except (jwt.PyJWTError, AuthFetchError, ValueError, TypeError) as exc:
            # Why a token was refused helps an operator; the token itself never reaches the log.
            logger.info("bearer token refused: %s: %s", type(exc).__name__, str(exc)[:300])
            return None
        self._accepted[digest] = (access, until)
        if len(self._accepted) > _REMEMBERED:
            self._accepted.popitem(last=False)
        return access

    async def _check_jwt(self, token: str, now: float) -> tuple[VerifiedToken, float]:
        header = jwt.get_unverified_header(token)
        algorithm = header.get("alg")
        if algorithm not in self.checks.algorithms:
            raise jwt.InvalidAlgorithmError(f"algorithm {str(algorithm)[:20]!r} is not accepted")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise jwt.InvalidTokenError("the kid is not a string")
        key = await self.issuer.key(kid)
        if key is None:
            raise jwt.InvalidKeyError(f"the issuer publishes no key {str(kid)[:80]!r}")
        claims: dict[str, Any] = jwt.decode(
            token, key, algorithms=[str(algorithm)], audience=self.checks.audience, issuer=self.issuer.issuer,
            leeway=self.checks.leeway, options={"require": ["exp", "iss", "aud"]},
        )
        expires = float(claims["exp"])
        return _access(token, claims, self.checks), expires + self.checks.leeway

    async def _introspect(self, token: str, now: float) -> tuple[VerifiedToken, float]:
        checks = self.checks
        url = await self.issuer.endpoint("introspection_endpoint", checks.introspection_url)
        auth = (checks.client_id, checks.client_secret or "") if checks.client_id else None
        answer = await self.issuer.fetcher.post(url, {"token": token, "token_type_hint": "access_token"}, auth=auth)
        if answer.get("active") is not True:
            raise ValueError("introspection says the token is not active")
        issuer = answer.get("iss")
        if issuer is not None and issuer != self.issuer.issuer:
            raise ValueError(f"introspection names issuer {str(issuer)[:200]!r}")
        audience = answer.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if checks.audience not in audiences:
            raise ValueError("the token was not issued for this server (aud)")
        expires = answer.get("exp")
        if isinstance(expires, (int, float)) and expires + checks.leeway < now:
            raise ValueError("the token has expired")
        not_before = answer.get("nbf")
        if isinstance(not_before, (int, float)) and not_before - checks.leeway > now:
            raise ValueError("the token is not valid yet")
        until = now + _INTROSPECTION_TTL
        if isinstance(expires, (int, float)):
            until = min(until, expires + checks.leeway)
        claims = {"iss": self.issuer.issuer, **answer}
        return _access(token, claims, checks), until


def _access(token: str, claims: dict[str, Any], checks: TokenChecks) -> VerifiedToken:
    principal = principal_from_claims(claims, checks.claim_names, token=token)
    access = VerifiedToken(
        token=token,
        client_id=principal.client_id or principal.name,
        scopes=sorted(principal.scopes),
        # The SDK's BearerAuthBackend compares this with the clock again, without leeway: give it the leeway.
        expires_at=int(principal.expires_at + checks.leeway) if principal.expires_at is not None else None,
        resource=checks.audience,
        subject=principal.subject,
        claims=claims,
    )
    access._principal = principal
    return access
