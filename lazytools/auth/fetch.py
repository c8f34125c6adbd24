"""JSON from an authorization server, bounded in time and size: a slow, huge or broken issuer costs one refusal.

Every fetch of the auth code goes through here (metadata, JWKS, introspection, token exchange). Redirects are not
followed: the URLs come from the settings and the issuer's own metadata, nowhere else.

One HTTP client serves every fetch of a `Fetcher`: building one loads the trust store into a TLS context (CPU worth
many requests), too much to pay per request on the event loop when every unauthenticated request may cause a fetch
(introspection). It is built once, in a worker thread. It keeps no idle connections, so nothing is left open
between fetches and a `Fetcher` needs no closing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio
import httpx2

__all__ = ["AuthFetchError", "Fetcher"]


class AuthFetchError(Exception):
    """An answer the auth code could not get or read; the message says which URL and why."""


class Fetcher:
    """Bounded JSON requests: `timeout` seconds for the whole exchange, at most `max_bytes` of body read."""

    def __init__(self, timeout: float = 5.0, max_bytes: int = 256 * 1024) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._client: httpx2.AsyncClient | None = None
        self._making = anyio.Lock()
        self.clients_made = 0
        """HTTP clients built so far (one, once any fetch ran)."""

    async def client(self) -> httpx2.AsyncClient:
        """The one HTTP client of this fetcher, built on first use."""
        if self._client is None:
            async with self._making:
                if self._client is None:
                    self._client = await anyio.to_thread.run_sync(self._new_client)
                    self.clients_made += 1
        return self._client

    def _new_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False,
                                  limits=httpx2.Limits(max_keepalive_connections=0))

    async def get(self, url: str) -> dict[str, Any]:
        return await self.request("GET", url)

    async def post(self, url: str, form: Mapping[str, str], *, auth: tuple[str, str] | None = None) -> dict[str, Any]:
        return await self.request("POST", url, form=form, auth=auth)

    async def request(self, method: str, url: str, *, form: Mapping[str, str] | None = None,
                      auth: tuple[str, str] | None = None) -> dict[str, Any]:
        """The JSON object answered; raises AuthFetchError for anything else (status, size, time, syntax)."""
        status, body = 0, b""
        client = await self.client()
        with anyio.move_on_after(self.timeout) as scope:
            status, body = await self._exchange(client, method, url, form, auth)
        if scope.cancelled_caught:
            raise AuthFetchError(f"{url}: no answer within {self.timeout:g} s")
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            raise AuthFetchError(f"{url}: HTTP {status}, the answer is not JSON") from None
        if not isinstance(decoded, dict):
            raise AuthFetchError(f"{url}: HTTP {status}, the answer is not a JSON object")
        if status >= 400:
            error = decoded.get("error")
            raise AuthFetchError(f"{url}: HTTP {status}" + (f" ({str(error)[:100]})" if error else ""))
        return decoded

    async def _exchange(self, client: httpx2.AsyncClient, method: str, url: str, form: Mapping[str, str] | None,
                        auth: tuple[str, str] | None) -> tuple[int, bytes]:
        headers = {"Accept": "application/json"}
        try:
            async with client.stream(method, url, data=dict(form) if form is not None else None,
                                     auth=httpx2.BasicAuth(*auth) if auth is not None else None,
                                     headers=headers) as response:
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self.max_bytes:
                    raise AuthFetchError(f"{url}: the answer is {declared} bytes, over {self.max_bytes}")
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise AuthFetchError(f"{url}: the answer is over {self.max_bytes} bytes")
                    chunks.append(chunk)
                return response.status_code, b"".join(chunks)
        except httpx2.HTTPError as exc:
            raise AuthFetchError(f"{url}: {type(exc).__name__}: {str(exc)[:200]}") from None
