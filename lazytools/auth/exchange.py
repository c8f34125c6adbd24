"""RFC 8693 token exchange on a user's behalf: the user's token in, a token for one upstream's audience out.

One form POST to the issuer's token endpoint, bounded like every auth fetch (fetch.py); authlib would bring a
second HTTP stack (it is built on httpx, the SDK on httpx2) for this one request. Exchanged tokens are cached per
user and audience until shortly before they expire, and never past the user's own token: a user whose token has
expired gets nothing new from a cached exchange.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass

import anyio

from ..identity import Principal
from .fetch import AuthFetchError, Fetcher
from .issuer import Issuer

__all__ = ["ExchangeError", "ExchangeRequest", "TokenExchanger"]

_ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
_SKEW = 30.0
"""Seconds before its expiry an exchanged token is no longer handed out (it may be in flight that long)."""
_DEFAULT_LIFETIME = 300.0
"""Seconds an exchanged token is kept when the issuer gives no `expires_in`."""
_CACHED = 10_000


class ExchangeError(Exception):
    """The exchange was refused or failed; the message says why, never with a token in it."""


@dataclass(frozen=True, slots=True)
class ExchangeRequest:
    """What to ask for, and as which client."""

    audience: str
    scope: str | None = None
    resource: str | None = None
    token_endpoint: str | None = None
    client_id: str | None = None
    client_secret: str | None = None


class TokenExchanger:
    """Exchanges at one issuer (whose metadata gives the token endpoint unless a request names one)."""

    def __init__(self, issuer: Issuer | None, fetcher: Fetcher) -> None:
        self.issuer = issuer
        self.fetcher = fetcher
        self._cache: OrderedDict[tuple[str, str, str | None, str | None], tuple[str, float]] = OrderedDict()
        self._pending: dict[tuple[str, str, str | None, str | None], anyio.Lock] = {}
        """One lock per key being exchanged: concurrent first calls of a user share one exchange."""

    async def token_for(self, principal: Principal, request: ExchangeRequest) -> str:
        """A token for `request.audience` acting for `principal` (from the cache while it is good)."""
        if principal.token is None:
            raise ExchangeError(f"the request carries no user token to exchange ({principal.kind} user "
                                f"{principal.name!r})")
        key = (principal.key, request.audience, request.scope, request.resource)
        cached = self._cached(key)
        if cached is not None:
            return cached
        lock = self._pending.setdefault(key, anyio.Lock())
        try:
            async with lock:
                cached = self._cached(key)  # exchanged by the call this one waited for
                if cached is not None:
                    return cached
                return await self._exchange_and_keep(key, principal.token, principal, request)
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._pending.pop(key, None)

    def _cached(self, key: tuple[str, str, str | None, str | None]) -> str | None:
        cached = self._cache.get(key)
        if cached is not None and time.time() < cached[1]:
            self._cache.move_to_end(key)
            return cached[0]
        return None

    async def _exchange_and_keep(self, key: tuple[str, str, str | None, str | None], subject_token: str,
                                 principal: Principal, request: ExchangeRequest) -> str:
        now = time.time()
        token, lifetime = await self._exchange(subject_token, request)
        until = now + lifetime - _SKEW
        if principal.expires_at is not None:
            until = min(until, principal.expires_at)
        self._cache[key] = (token, until)
        if len(self._cache) > _CACHED:
            self._cache.popitem(last=False)
        return token

    async def _exchange(self, subject_token: str, request: ExchangeRequest) -> tuple[str, float]:
        form = {"grant_type": _GRANT, "subject_token": subject_token, "subject_token_type": _ACCESS_TOKEN,
                "requested_token_type": _ACCESS_TOKEN, "audience": request.audience}
        if request.scope:
            form["scope"] = request.scope
        if request.resource:
            form["resource"] = request.resource
        auth = (request.client_id, request.client_secret or "") if request.client_id else None
        try:
            endpoint = request.token_endpoint
            if endpoint is None:
                if self.issuer is None:
                    raise ExchangeError("no token endpoint: set LAZYTOOLS_AUTH_ISSUER or the server's "
                                        "identity.exchange.token_endpoint")
                endpoint = await self.issuer.endpoint("token_endpoint")
            answer = await self.fetcher.post(endpoint, form, auth=auth)
        except AuthFetchError as exc:
            raise ExchangeError(f"token exchange for {request.audience!r} failed: {exc}") from None
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise ExchangeError(f"token exchange for {request.audience!r}: the answer holds no access_token")
        lifetime = answer.get("expires_in")
        valid = isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool) and lifetime > 0
        return token, float(lifetime) if valid else _DEFAULT_LIFETIME  # type: ignore[arg-type]
