"""The token check of a resource server: a bearer token in, the SDK's `AccessToken` (with every claim) or None out.

JWTs are checked locally: size first (a 200 KB token is refused unread), then the header's algorithm against the
allow-list (never `none`, never HMAC), the key its `kid` names from the issuer's JWKS, the signature, `iss`,
`aud` (this server's canonical URI), `exp` and `nbf` with a small leeway. Opaque tokens go to the issuer's RFC 7662
introspection endpoint when that is enabled. Accepted tokens are remembered until they expire (bounded), so a
client's next request costs a dictionary lookup, not a signature check.

Refused tokens are remembered too, briefly (`refusal_ttl`, bounded in number), so a client retrying a bad token
costs nothing either. Introspection is the one check an unauthenticated request can make cost a round trip to
the issuer, so it is bounded: at most `introspection_concurrency` at once, and per client address
`introspection_rate` a second (a token bucket, bursts of `introspection_concurrency`; the newest `_CLIENTS`
addresses kept) and at most half of those in flight; a token that would pass a bound is refused as busy (the edge
answers 503), not queued, so a flood of made-up opaque tokens costs the issuer a few requests a second, and the
users at other addresses nothing: their own budget is whole.

Every refusal has a reason (`Refusal`): the client reads it in `WWW-Authenticate` (RFC 6750 §3), the operator in a
WARNING line, at most `_LOGGED_PER_MINUTE` a minute (then one line counts the rest).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import jwt
from mcp.server.auth.provider import AccessToken
from pydantic import PrivateAttr

from ..identity import ClaimNames, Principal, principal_from_claims
from ..safetext import clip
from .fetch import AuthFetchError
from .issuer import Issuer

__all__ = ["MAX_TOKEN_BYTES", "Refusal", "TokenChecks", "VerifiedToken", "Verifier"]

logger = logging.getLogger(__name__)

MAX_TOKEN_BYTES = 16 * 1024
"""Longest token read. Real JWTs with group claims stay under a few KB; HTTP servers cap headers near 8-16 KB."""

_REMEMBERED = 10_000
"""Accepted tokens remembered at once (least recently used leave first)."""

_INTROSPECTION_TTL = 60.0
"""Seconds an introspection answer is trusted: a revoked token is refused within this."""

_CLIENTS = 4096
"""Client addresses whose introspection budget is kept (the least recently seen go first: a new address starts
with a whole budget, so forgetting one never refuses it)."""

_LOGGED_PER_MINUTE = 10
"""Refusals written to the log in one minute; the rest are counted in the next line written."""


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
    refusal_ttl: float = 30.0
    """Seconds a refused token stays refused without being checked again (0: not remembered)."""
    introspection_concurrency: int = 4
    introspection_rate: float = 10.0
    """Introspection requests a second, on average (bursts up to `introspection_concurrency`)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a token was refused: `description` for the client (fixed text, RFC 6750's error_description characters
    only), `detail` for the operator's log (escaped, cut). `transient` refusals (the issuer busy or unreachable)
    are not remembered: the same token may pass a moment later."""

    description: str
    detail: str = ""
    transient: bool = False
    busy: bool = False
    """Refused unchecked because introspection is at its bound (the edge answers 503, try again)."""


class _Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.description)
        self.refusal = refusal


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
        self._refused: OrderedDict[bytes, tuple[Refusal, float]] = OrderedDict()
        self._in_flight = anyio.CapacityLimiter(max(checks.introspection_concurrency, 1))
        self._budgets: OrderedDict[str, list[float]] = OrderedDict()
        """Per client address: [introspection requests it may start now (its token bucket), when that was counted,
        its requests in flight]."""
        self._log_window = -1
        self._logged = 0
        self._unlogged = 0

    async def verify_token(self, token: str) -> VerifiedToken | None:
        found = await self.check(token)
        return found if isinstance(found, VerifiedToken) else None

    async def check(self, token: str, *, client: str = "") -> VerifiedToken | Refusal:
        """The checked token, or why it is refused (logged, at a bounded rate). `client`: the request's address,
        whose own budget an introspection is taken from."""
        if not token:
            return self._refuse(Refusal("the token is empty"))
        if len(token) > MAX_TOKEN_BYTES:
            return self._refuse(Refusal("the token is too long", f"{len(token)} characters"))
        digest = hashlib.sha256(token.encode()).digest()
        now = time.time()
        remembered = self._accepted.get(digest)
        if remembered is not None:
            if now < remembered[1]:
                self._accepted.move_to_end(digest)
                return remembered[0]
            del self._accepted[digest]
        refused = self._refused.get(digest)
        if refused is not None:
            if now < refused[1]:
                return refused[0]  # logged when it was first refused
            del self._refused[digest]
        try:
            if token.count(".") == 2:
                access, until = await self._check_jwt(token, now)
            elif self.checks.introspection:
                access, until = await self._introspect(token, now, client)
            else:
                raise _Refused(Refusal("the token is not a JWT, and opaque tokens are not accepted",
                                       "LAZYTOOLS_AUTH_INTROSPECTION is off"))
        except _Refused as exc:
            return self._remember_refusal(digest, exc.refusal, now)
        except (jwt.PyJWTError, AuthFetchError, ValueError, TypeError) as exc:
            return self._remember_refusal(digest, _refusal_of(exc), now)
        self._accepted[digest] = (access, until)
        if len(self._accepted) > _REMEMBERED:
            self._accepted.popitem(last=False)
        return access

    def _remember_refusal(self, digest: bytes, refusal: Refusal, now: float) -> Refusal:
        if not refusal.transient and self.checks.refusal_ttl > 0:
            self._refused[digest] = (refusal, now + self.checks.refusal_ttl)
            if len(self._refused) > _REMEMBERED:
                self._refused.popitem(last=False)
        return self._refuse(refusal)

    def _refuse(self, refusal: Refusal) -> Refusal:
        """Log the refusal, unless this minute's lines are spent (then it is counted in the next line)."""
        window = int(time.monotonic() // 60)
        if window != self._log_window:
            self._log_window, self._logged = window, 0
        if self._logged >= _LOGGED_PER_MINUTE:
            self._unlogged += 1
            return refusal
        self._logged += 1
        more = f" ({self._unlogged} more refused since, not logged)" if self._unlogged else ""
        self._unlogged = 0
        # Why a token was refused helps an operator; the token itself never reaches the log.
        logger.warning("bearer token refused: %s%s%s", refusal.description,
                       f": {refusal.detail}" if refusal.detail else "", more)
        return refusal

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

    def _budget(self, client: str) -> list[float]:
        """`client`'s budget, refilled at `introspection_rate` a second up to a burst of the concurrency."""
        now = time.monotonic()
        burst = float(max(self.checks.introspection_concurrency, 1))
        budget = self._budgets.get(client)
        if budget is None:
            budget = self._budgets[client] = [burst, now, 0.0]
            if len(self._budgets) > _CLIENTS:
                # The oldest without a request in flight (one in flight keeps its live count); at most
                # `introspection_concurrency` are in flight, so one is found among the first few.
                oldest = next(old for old, entry in self._budgets.items() if not entry[2] and old != client)
                del self._budgets[oldest]
        else:
            self._budgets.move_to_end(client)
            budget[0] = min(burst, budget[0] + (now - budget[1]) * self.checks.introspection_rate)
            budget[1] = now
        return budget

    async def _introspect(self, token: str, now: float, client: str) -> tuple[VerifiedToken, float]:
        checks = self.checks
        busy = Refusal("too many tokens are being checked: try again shortly",
                       "introspection at its bound (LAZYTOOLS_AUTH_INTROSPECTION_CONCURRENCY, _RATE)",
                       transient=True, busy=True)
        budget = self._budget(client)
        # One address never holds every request in flight (half, at least one), nor spends another's rate.
        if budget[0] < 1 or budget[2] >= max(checks.introspection_concurrency // 2, 1):
            raise _Refused(busy)
        try:
            self._in_flight.acquire_nowait()
        except anyio.WouldBlock:
            raise _Refused(busy) from None
        budget[0] -= 1
        budget[2] += 1
        try:
            url = await self.issuer.endpoint("introspection_endpoint", checks.introspection_url)
            auth = (checks.client_id, checks.client_secret or "") if checks.client_id else None
            answer = await self.issuer.fetcher.post(url, {"token": token, "token_type_hint": "access_token"},
                                                    auth=auth)
        finally:
            self._in_flight.release()
            budget[2] -= 1
        if answer.get("active") is not True:
            raise _Refused(Refusal("the token is not active (introspection)"))
        issuer = answer.get("iss")
        if issuer is not None and issuer != self.issuer.issuer:
            raise _Refused(Refusal("the token was issued by another issuer (iss)",
                                   f"introspection names issuer {clip(str(issuer))}"))
        audience = answer.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if checks.audience not in audiences:
            raise _Refused(Refusal("the token was not issued for this server (aud)",
                                   f"aud is {clip(audience)}, not {checks.audience}"))
        expires = answer.get("exp")
        if isinstance(expires, (int, float)) and expires + checks.leeway < now:
            raise _Refused(Refusal("the token has expired"))
        not_before = answer.get("nbf")
        if isinstance(not_before, (int, float)) and not_before - checks.leeway > now:
            raise _Refused(Refusal("the token is not valid yet (nbf)"))
        until = now + _INTROSPECTION_TTL
        if isinstance(expires, (int, float)):
            until = min(until, expires + checks.leeway)
        claims = {"iss": self.issuer.issuer, **answer}
        return _access(token, claims, checks), until


_JWT_REASONS: tuple[tuple[type[Exception], str], ...] = (
    (jwt.ExpiredSignatureError, "the token has expired"),
    (jwt.ImmatureSignatureError, "the token is not valid yet (nbf)"),
    (jwt.InvalidAudienceError, "the token was not issued for this server (aud)"),
    (jwt.InvalidIssuerError, "the token was issued by another issuer (iss)"),
    (jwt.MissingRequiredClaimError, "the token lacks a required claim"),
    (jwt.InvalidIssuedAtError, "the token's iat is not valid"),
    (jwt.InvalidSignatureError, "the token's signature does not verify"),
    (jwt.InvalidAlgorithmError, "the token's algorithm is not accepted"),
    (jwt.InvalidKeyError, "the token's signing key is unknown (kid)"),
    (jwt.DecodeError, "the token cannot be read (malformed JWT)"),
)


def _refusal_of(exc: Exception) -> Refusal:
    """The reason for a refusal the checks raised as an exception of PyJWT's, the fetcher's or the claims'."""
    detail = clip(str(exc), 300)
    if isinstance(exc, AuthFetchError):
        return Refusal("the issuer could not be asked about the token", detail, transient=True)
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return Refusal(f"the token lacks the {exc.claim} claim", detail)
    for kind, description in _JWT_REASONS:
        if isinstance(exc, kind):
            # A token not valid yet becomes valid by itself: not remembered as refused.
            return Refusal(description, detail, transient=isinstance(exc, jwt.ImmatureSignatureError))
    if isinstance(exc, _NoSubject):
        return Refusal("the token has no subject (sub)", f"{detail}; LAZYTOOLS_AUTH_SUBJECT_CLAIM names the claim")
    return Refusal("the token is not valid", f"{type(exc).__name__}: {detail}")


class _NoSubject(ValueError):
    pass


def _access(token: str, claims: dict[str, Any], checks: TokenChecks) -> VerifiedToken:
    try:
        principal = principal_from_claims(claims, checks.claim_names, token=token)
    except ValueError as exc:
        raise _NoSubject(str(exc)) from None
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
