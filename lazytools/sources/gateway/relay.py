"""Who is on the client side of an upstream's messages: the call that caused them, or the sessions connected.

An upstream sends things during a call that belong to the client who made it (progress, log messages, requests
for sampling, elicitation or roots). The server sets `calling(origin)` around each forwarded call; the upstream
reads it when the call starts and keeps the origin among its calls in flight. Over HTTP the SDK runs an upstream's
messages in the context of the request they ride on, so `current_origin()` names the call exactly there; over
stdio nothing on the wire says which call a log message or a request belongs to, so the upstream falls back to its
calls in flight (`Inflight.sole_origin`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from ...origin import CallOrigin, Clients, ClientSide, current_origin
from .bounds import LogGate

__all__ = ["USER_OWNER", "ClientAsks", "Inflight", "Relay", "RootsNotice", "deliver"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class Inflight:
    """The client requests an upstream is serving now, oldest first."""

    origins: list[CallOrigin] = field(default_factory=list)

    @contextmanager
    def serving(self, origin: CallOrigin | None) -> Iterator[None]:
        if origin is None:
            yield
            return
        self.origins.append(origin)
        try:
            yield
        finally:
            self.origins.remove(origin)

    def sessions(self) -> list[ClientSide]:
        """The distinct sessions with a request in flight."""
        seen: dict[str, ClientSide] = {}
        for origin in self.origins:
            if origin.client is not None:
                seen.setdefault(origin.client.key, origin.client)
        return list(seen.values())

    def callers(self) -> int:
        """How many clients have requests in flight: sessions by key, and each request without a session as a
        client of its own (stateless callers cannot be told apart, and none of them can take a request)."""
        keys = {origin.client.key for origin in self.origins if origin.client is not None}
        return len(keys) + sum(1 for origin in self.origins if origin.client is None)

    def sole_origin(self) -> CallOrigin | None:
        """The request a message without any marking belongs to, when only one session has requests in flight
        (its latest); None when none has, or when several have and nothing tells them apart."""
        if not self.origins:
            return None
        keys = {origin.client.key if origin.client is not None else None for origin in self.origins}
        return self.origins[-1] if len(keys) == 1 else None


class _NoClients:
    def __iter__(self) -> Iterator[ClientSide]:
        return iter(())

    def get(self, key: str) -> ClientSide | None:
        return None


USER_OWNER = "user:"
"""How the owner key of a connection that serves one user outside any session starts (credentials.py)."""


def _serves(origin: CallOrigin, owner: str | None) -> bool:
    """Whether a message of a connection owned by `owner` may go to `origin`: on a shared connection, to the
    request that caused it; on a session's, to that session's requests only; on a user's, to any request (every
    request on it is that user's, and none has a session). Outside a request, a user's connection reaches nobody."""
    if owner is None or owner.startswith(USER_OWNER):
        return True
    return origin.client is not None and origin.client.key == owner


def _can_answer(client: ClientSide, request: types.ServerRequest) -> str | None:
    """Why `client` cannot answer `request` (a capability it did not declare), or None."""
    caps = client.capabilities
    if isinstance(request, types.CreateMessageRequest):
        return None if caps is not None and caps.sampling is not None else "sampling"
    if isinstance(request, types.ElicitRequest):
        if caps is None or caps.elicitation is None:
            return "elicitation"
        url_mode = isinstance(request.params, types.ElicitRequestURLParams)
        return "URL-mode elicitation" if url_mode and caps.elicitation.url is None else None
    if isinstance(request, types.ListRootsRequest):
        return None if caps is not None and caps.roots is not None else "roots"
    return None


def _unknown_caller(server: str, request: types.ServerRequest, why: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=(
        f"lazytools cannot tell which client this {request.method} is for: {why} "
        f"(give server {server!r} \"scope\": \"session\" for one connection per client session)"))


class Relay:
    """Routes what one upstream sends for the client side: logs, and requests for sampling, elicitation, roots.

    `clients` is every session the server holds (the server sets it when it is built). A message goes to the
    request that caused it when that is known (`current_origin()`, or the only session with requests in flight on
    the upstream, or the session that owns a per-session upstream); logs outside any request go to every session.
    """

    def __init__(self) -> None:
        self.clients: Clients = _NoClients()
        self.logs = LogGate()

    async def log(self, server: str, inflight: Inflight, owner: str | None,
                  params: types.LoggingMessageNotificationParams) -> None:
        """Pass an upstream's `notifications/message` on, with the server's name in front of its `logger`."""
        params = params.model_copy(update={"logger": f"{server}/{params.logger}" if params.logger else server})
        note = types.LoggingMessageNotification(params=params)
        origin = current_origin() or inflight.sole_origin()
        if origin is not None and _serves(origin, owner):
            if origin.wants_log(params.level) and origin.notify is not None:
                await self.logs.send(origin.client.key if origin.client is not None else origin, origin.notify, note)
            return
        if owner is not None:
            targets = [c for c in [self.clients.get(owner)] if c is not None]
        else:
            # Several sessions have calls in flight and nothing tells which one this is for: each may be; none in
            # flight: a message about the server itself, for everyone.
            targets = inflight.sessions() or list(self.clients)
        for client in targets:
            if client.wants_log(params.level):
                try:
                    await self.logs.send(client.key, client.notify, note)
                except Exception as exc:  # a client that went away must not keep the others from hearing
                    logger.debug("log message from %r not delivered to %s: %s", server, client.key[:8], exc)

    async def ask(self, server: str, inflight: Inflight, owner: str | None, request: types.ServerRequest,
                  result_type: type[Any]) -> Any:
        """Put an upstream's request to the client whose request is in flight; an `ErrorData` for the upstream
        when there is none, it cannot tell which, or that client cannot answer."""
        origin = current_origin()
        if origin is None and owner is None and inflight.callers() > 1:
            # Nothing says which caller this is for: any of them may have caused it, so none is asked (a request
            # without a session counts, or a session would answer a stateless caller's question with its data).
            return _unknown_caller(server, request, "calls of several clients are in flight on it (a request "
                                                    "without a session counts as a client of its own)")
        origin = origin or inflight.sole_origin()
        client: ClientSide | None
        if origin is not None and _serves(origin, owner):
            client = origin.client
        elif owner is not None:
            client = self.clients.get(owner)
            origin = None
        else:  # no call in flight on it: the only session, if there is one
            sessions = list(self.clients)
            if len(sessions) != 1:
                if not sessions:  # before the client connects (a server asking for roots at start-up), or after
                    return types.ErrorData(code=types.INVALID_REQUEST, message=(
                        f"lazytools has no client connected to answer this {request.method} yet"))
                # Several sessions exist only over HTTP: there, one connection per client session settles it.
                return _unknown_caller(server, request, "several client sessions are connected")
            client, origin = sessions[0], None
        if client is None and origin is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="the client session has ended")
        if client is not None and (missing := _can_answer(client, request)) is not None:
            return types.ErrorData(code=types.INVALID_REQUEST,
                                   message=f"the client connected to lazytools does not support {missing}")
        try:
            if origin is not None:
                if origin.request is None:
                    return types.ErrorData(code=types.INVALID_REQUEST, message=(
                        "the client's protocol (2026-07-28) has no requests from server to client"))
                return await origin.request(request, result_type)
            assert client is not None
            return await client.request(request, result_type)
        except MCPError as exc:
            return exc.error


@dataclass(slots=True)
class RootsNotice:
    """Whether an upstream was told that the client's roots changed and has not asked for them since. Told one for
    one, 20,000 notifications of one client made a shared server ask 16,000 times, a ping of that client waiting 34 s
    behind them; told once, it gets the roots as they are whenever it asks. A new connection starts untold."""

    told: bool = False

    def tell(self) -> bool:
        """Whether to tell the upstream now (it then counts as told)."""
        told, self.told = self.told, True
        return not told


@dataclass(frozen=True, slots=True)
class ClientAsks:
    """One upstream's requests for the client side, as the SDK client's callbacks: sampling, elicitation, roots,
    each put to the client whose call is in flight (`Relay.ask`)."""

    relay: Relay
    server: str
    inflight: Inflight
    owner: str | None
    roots: RootsNotice = field(default_factory=RootsNotice)

    async def sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        result_type = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        return await self.relay.ask(self.server, self.inflight, self.owner, types.CreateMessageRequest(params=params),
                                    result_type)

    async def elicitation(self, context: Any, params: types.ElicitRequestParams) -> Any:
        return await self.relay.ask(self.server, self.inflight, self.owner, types.ElicitRequest(params=params),
                                    types.ElicitResult)

    async def list_roots(self, context: Any) -> Any:
        self.roots.told = False  # before asking: a change while the client answers is told anew
        return await self.relay.ask(self.server, self.inflight, self.owner, types.ListRootsRequest(),
                                    types.ListRootsResult)


async def deliver(client: ClientSide, notification: types.ServerNotification) -> None:
    """Tell `client`; a client that went away must not keep the others from hearing."""
    try:
        await client.notify(notification)
    except Exception as exc:
        logger.debug("session %s: notification not delivered: %s", client.key[:8], exc)
