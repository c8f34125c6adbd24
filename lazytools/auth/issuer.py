"""The authorization server as lazytools knows it: its RFC 8414 (or OpenID) metadata and its signing keys.

The metadata is fetched once and must name the configured issuer exactly (RFC 8414 §3.3), so a metadata document
cannot redirect lazytools to another issuer's keys. The JWKS is cached; a token signed with a key id the cache
does not hold triggers a refetch (the issuer rotated its keys), at most once per `refetch_interval`, and
concurrent requests share one fetch. A fetch that failed (metadata or JWKS) is tried again after `retry_interval`
at the soonest: an issuer that is down is asked once every few seconds, not by every request.
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import jwt

from .fetch import AuthFetchError, Fetcher

__all__ = ["Issuer", "metadata_urls"]

logger = logging.getLogger(__name__)

_PUBLIC_KEY_TYPES = frozenset({"RSA", "EC", "OKP"})


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be: RFC 8414 inserts the well-known path before the issuer's path; OpenID
    Connect Discovery appends it."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    inserted = [urlunsplit((parts.scheme, parts.netloc, f"/.well-known/{name}{path}", "", ""))
                for name in ("oauth-authorization-server", "openid-configuration")]
    appended = urlunsplit((parts.scheme, parts.netloc, f"{path}/.well-known/openid-configuration", "", ""))
    return list(dict.fromkeys([*inserted, appended]))


class Issuer:
    """One authorization server: its metadata, its keys by key id."""

    def __init__(self, issuer: str, fetcher: Fetcher, *, jwks_url: str | None = None,
                 refetch_interval: float = 60.0, retry_interval: float = 5.0) -> None:
        self.issuer = issuer
        self.fetcher = fetcher
        self.refetch_interval = refetch_interval
        self.retry_interval = min(retry_interval, refetch_interval)
        self._failed = False
        """Whether the last JWKS fetch failed (the next may come sooner)."""
        self._metadata_failure: tuple[float, AuthFetchError] | None = None
        self._jwks_url = jwks_url
        self._metadata: dict[str, Any] | None = None
        self._keys: dict[str, jwt.PyJWK] = {}
        self._unnamed: list[jwt.PyJWK] = []
        """Keys without a `kid`: tried for a token whose header names none."""
        self._fetched_at: float | None = None
        self._lock = anyio.Lock()

    async def metadata(self) -> dict[str, Any]:
        """The issuer's metadata (cached once read); raises AuthFetchError when none can be read."""
        if self._metadata is not None:
            return self._metadata
        failure = self._metadata_failure
        if failure is not None and time.monotonic() - failure[0] < self.retry_interval:
            raise failure[1]
        problems: list[str] = []
        for url in metadata_urls(self.issuer):
            try:
                found = await self.fetcher.get(url)
            except AuthFetchError as exc:
                problems.append(str(exc))
                continue
            if found.get("issuer") != self.issuer:
                problems.append(f"{url} names issuer {str(found.get('issuer'))[:200]!r}, not {self.issuer!r}")
                continue
            self._metadata = found
            self._metadata_failure = None
            return found
        error = AuthFetchError("no metadata for issuer " + self.issuer + ": " + "; ".join(problems))
        self._metadata_failure = (time.monotonic(), error)
        raise error

    async def endpoint(self, name: str, configured: str | None = None) -> str:
        """An endpoint of the metadata (`token_endpoint`, `introspection_endpoint`...), unless configured."""
        if configured:
            return configured
        url = (await self.metadata()).get(name)
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise AuthFetchError(f"the metadata of {self.issuer} gives no {name}")
        return url

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        """The signing key a token's header names; None if the issuer does not publish it (after a refetch, if
        one is allowed now)."""
        found = self._lookup(kid)
        if found is not None:
            return found
        async with self._lock:
            found = self._lookup(kid)  # another request's fetch may have brought it meanwhile
            if found is not None or not self._may_fetch():
                return found
            await self._fetch()
        return self._lookup(kid)

    def _lookup(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is None:
            return self._unnamed[0] if len(self._unnamed) == 1 else None
        return self._keys.get(kid)

    def _may_fetch(self) -> bool:
        wait = self.retry_interval if self._failed else self.refetch_interval
        return self._fetched_at is None or time.monotonic() - self._fetched_at >= wait

    async def _fetch(self) -> None:
        # Counted as fetched before it runs: a JWKS that is down is not asked again until the interval has passed.
        self._fetched_at = time.monotonic()
        self._failed = True
        url = await self.endpoint("jwks_uri", self._jwks_url)
        document = await self.fetcher.get(url)
        self._failed = False
        keys: dict[str, jwt.PyJWK] = {}
        unnamed: list[jwt.PyJWK] = []
        for raw in document.get("keys", []) if isinstance(document.get("keys"), list) else []:
            # Only public keys: an `oct` (symmetric) key in a JWKS would make its published bytes an HMAC secret.
            if not isinstance(raw, dict) or raw.get("use", "sig") != "sig" or raw.get("kty") not in _PUBLIC_KEY_TYPES:
                continue
            try:
                key = jwt.PyJWK(raw)
            except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError) as exc:
                logger.info("JWKS of %s: skipping a key it cannot use (%s)", self.issuer, exc)
                continue
            kid = raw.get("kid")
            if isinstance(kid, str):
                keys[kid] = key
            else:
                unnamed.append(key)
        self._keys, self._unnamed = keys, unnamed
        logger.info("JWKS of %s: %d keys", self.issuer, len(keys) + len(unnamed))
