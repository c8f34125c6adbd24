"""Per-user credentials for HTTP upstreams (`"identity"` in the config): each user's requests to such a server go
on a connection of its own, which carries that user's credentials and serves that user only.

`"identity": "forward"` sends the user's own bearer token (only to servers marked so: a token is meant for
lazytools, and forwarding it lets the upstream act as the user anywhere that token is accepted);
`"identity": {"exchange": {...}}` sends a token the issuer minted for that server's audience (RFC 8693,
auth/exchange.py), cached per user and audience. A connection is keyed by the client session when there is one
(the SDK binds a session to the credential that opened it, and the session's end stops it), else by the user; a
user's connection unused for the idle timeout is stopped when the next one is made. Users without a token of
their own (stdio, the shared token, anonymous HTTP) cannot reach such a server.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator

import httpx2

from ...auth.exchange import ExchangeError, ExchangeRequest, TokenExchanger
from ...errors import UpstreamError
from ...identity import Principal, current_principal
from ...origin import current_origin, session_key
from ...settings import Settings
from .config import HttpServer, Identity
from .relay import USER_OWNER
from .scoped import SessionUpstreams
from .upstream import Upstream

__all__ = ["UserAuth", "UserUpstreams"]


class UserAuth(httpx2.Auth):
    """Sets `Authorization` on each request of one user's connection from that user's latest credential."""

    def __init__(self, users: UserUpstreams, server: str, key: str) -> None:
        self._users = users
        self._where = (server, key)

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        credentials = self._users.credentials.get(self._where)
        if credentials is None:
            raise UpstreamError(self._where[0], "this user's connection has ended")
        request.headers["Authorization"] = f"Bearer {await credentials.token()}"
        yield request


class _Credentials:
    """One user's credentials for one server: the principal of their latest request, and how to make a token."""

    def __init__(self, server: str, identity: Identity | str, principal: Principal,
                 exchanger: TokenExchanger | None, request: ExchangeRequest | None) -> None:
        self.server = server
        self.identity = identity
        self.principal = principal
        self.exchanger = exchanger
        self.request = request
        self.used = time.monotonic()
        self.pending = 0
        """First calls between making these and their connection existing (the token exchange may take a while):
        a sweep meanwhile would see no connection yet and forget them."""

    async def token(self) -> str:
        principal = self.principal
        if self.request is None:
            if principal.token is None:
                raise UpstreamError(self.server, "the request carries no token of its own to forward")
            return principal.token
        assert self.exchanger is not None
        try:
            return await self.exchanger.token_for(principal, self.request)
        except ExchangeError as exc:
            raise UpstreamError(self.server, str(exc)) from None


class UserUpstreams:
    """Makes and finds the per-user connections of the servers with `identity`."""

    def __init__(self, scoped: SessionUpstreams, settings: Settings, exchanger: TokenExchanger | None) -> None:
        self._scoped = scoped
        self._settings = settings
        self._exchanger = exchanger
        self._idle = settings.session_idle_timeout
        self.credentials: dict[tuple[str, str], _Credentials] = {}
        """By (server, session key or user key)."""

    async def instance(self, shared: Upstream) -> Upstream:
        """The connection of `shared`'s server for the current user (and session), its credential ready."""
        config = shared.config
        assert isinstance(config, HttpServer) and config.identity is not None
        principal = current_principal()
        if principal is None or principal.token is None:
            who = f"{principal.kind} user {principal.name!r}" if principal is not None else "no user"
            raise UpstreamError(shared.name, f"this server is reached with each user's own credentials, and this "
                                             f"request ({who}) has no token of its own")
        session = session_key(current_origin())
        key = session if session is not None else USER_OWNER + principal.key
        self._sweep()
        found = self.credentials.get((shared.name, key))
        if found is not None and found.principal.key != principal.key:
            # The SDK binds a session to the credential that opened it, so this is not expected; never reuse.
            raise UpstreamError(shared.name, "this session's connection belongs to another user")
        if found is None:
            found = _Credentials(shared.name, config.identity, principal, self._exchanger, self._request_of(config))
            self.credentials[(shared.name, key)] = found
        found.principal = principal  # its latest token (a refreshed one replaces an expiring one)
        found.used = time.monotonic()
        found.pending += 1
        try:
            await found.token()  # a refused exchange fails this call now, not the connection's handshake later
            return await self._scoped.instance(shared, key, auth=UserAuth(self, shared.name, key))
        finally:
            found.pending -= 1
            found.used = time.monotonic()

    def _request_of(self, config: HttpServer) -> ExchangeRequest | None:
        identity = config.identity
        if not isinstance(identity, Identity):
            return None
        if self._exchanger is None:
            raise UpstreamError(config.name, "token exchange needs LAZYTOOLS_AUTH_ISSUER (or a token_endpoint)")
        exchange = identity.exchange
        settings = self._settings
        secret = settings.auth_client_secret.get_secret_value() if settings.auth_client_secret is not None else None
        return ExchangeRequest(
            audience=exchange.audience, scope=exchange.scope, resource=exchange.resource,
            token_endpoint=exchange.token_endpoint, client_id=exchange.client_id or settings.auth_client_id,
            client_secret=exchange.client_secret if exchange.client_id else secret,
        )

    def _sweep(self) -> None:
        """Stop the per-user (sessionless) connections idle past the idle timeout; forget the credentials of
        sessions that have ended (their connections stopped with them)."""
        now = time.monotonic()
        for (server, key), credentials in list(self.credentials.items()):
            if credentials.pending:
                continue  # a call is waiting for its token or its connection: both are about to exist
            if key.startswith(USER_OWNER):
                if now - credentials.used > self._idle:
                    del self.credentials[(server, key)]
                    self._scoped.stop_one(server, key)
            elif not any(upstream.name == server for upstream in self._scoped.of(key)):
                del self.credentials[(server, key)]
