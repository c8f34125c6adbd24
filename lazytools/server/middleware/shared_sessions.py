"""Sessions kept in a shared store (several replicas): each request starts from its session's record and writes
back what it changed, before the notifications it caused leave.

Installed as a server middleware (`SharedSessions.install`) only when a shared store is configured; the embedded
default never runs it. The HTTP transport has already loaded the record for the request (it needed it to know the
session exists) and leaves it in the request's scope under `RECORD_SCOPE_KEY`.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from ...identity import Principal, acting_as
from ...learning.records import MAX_SEARCH_TERMS
from ...origin import CallOrigin, ClientSide, calling
from ...sdk import connection_of
from ...state import SessionRecord, SharedState, StateUnavailableError
from ...state.outbox import collecting
from ...state.sessions import SessionState
from ...state.sync import RecordSync, room_for
from ..learning import MAX_LINKED
from ..passthrough import SessionClient, UpstreamFeatures, origin_of
from ..surface import is_stateless_era

if TYPE_CHECKING:
    from ..core import LazyServer

__all__ = [
    "OWNER_SCOPE_KEY",
    "RECORD_SCOPE_KEY",
    "SUBSCRIPTIONS_CHANGED",
    "UNRECORDED_SCOPE_KEY",
    "SharedSessions",
]

logger = logging.getLogger(__name__)

RECORD_SCOPE_KEY = "lazytools.record"
"""Where the HTTP transport leaves the session's record in the ASGI scope of a request."""
UNRECORDED_SCOPE_KEY = "lazytools.unrecorded"
"""Set on the scope of an `initialize` whose record could not be written (Redis went away after the transport's
check): the client gets the error, and the transport does not keep a session no other replica knows."""
OWNER_SCOPE_KEY = "lazytools.owner"
"""Where the HTTP transport leaves, on the request that opens a session, the credential the session is bound to."""


SUBSCRIPTIONS_CHANGED = "lazytools/subscriptions_changed"
"""A message on a session's bus channel, never sent to the client: its subscriptions changed, and the replica
holding its GET stream follows them (`SharedSessions.listening`)."""

_RETRY_SUBSCRIBE = 30.0
"""Seconds before a replica tries again to subscribe for a session where subscribing failed (the upstream is down,
or no longer serves the URI): requests of the session are not slowed by a failing upstream each time."""
_FAILED_MAX = 10_000
_GONE = "Session not found (it ended or expired)"


class SharedSessions:
    """The server middleware around each request of a shared session: its record loaded into the live state and what
    the request changed written back (`RecordSync`, state/sync.py), its subscriptions followed on this replica."""

    def __init__(self, server: LazyServer, store: SharedState) -> None:
        self.server = server
        self.store = store
        self.sync = RecordSync(store, max_enabled=server.settings.max_enabled, max_search_terms=MAX_SEARCH_TERMS,
                               max_linked=MAX_LINKED, level_of=_level_of, set_level=_set_level)
        self._subscribing: set[tuple[str, str]] = set()
        """(session, URI) of `resources/subscribe` requests in flight here: subscribed, not yet in the record."""
        self._failed: dict[tuple[str, str], float] = {}
        """When subscribing for a (session, URI) of its record last failed here."""

    def install(self) -> None:
        self.server.middleware.append(self)
        if self.server.front is not None:
            self.server.front.check_updates(self.wanted)

    async def wanted(self, key: str, uri: str) -> bool:
        """Whether session `key` still subscribes to `uri` (its record says so, wherever it unsubscribed) and may
        still see it (`SessionRegistry.may_hear`)."""
        if not await self.server.sessions.may_hear(key, uri):
            return False
        if (key, uri) in self._subscribing:
            return True
        try:
            record = await self.store.peek(key)
        except StateUnavailableError:
            return True  # unsure: an extra "re-read it" is better than a lost one
        return record is not None and uri in record.subscriptions

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        connection = connection_of(ctx)
        if is_stateless_era(ctx.protocol_version) or connection.session_id is None:
            return await call_next(ctx)
        try:
            if ctx.method == "initialize":
                result = await call_next(ctx)
                opened = self._record_of(connection.session_id, ctx.params)
                scope = getattr(ctx.request, "scope", None)
                opened.owner = scope.get(OWNER_SCOPE_KEY) if isinstance(scope, dict) else None
                try:
                    await self.store.create(opened)
                except StateUnavailableError:
                    if isinstance(scope, dict):
                        scope[UNRECORDED_SCOPE_KEY] = True  # the transport drops the session's part here
                    raise
                return result
            record = self._loaded(ctx) or await self.store.load(connection.session_id)
            if record is None:
                raise MCPError(code=types.INVALID_REQUEST, message=_GONE)
            state = self.server.sessions.session_for(ctx)
            if state is None:
                return await call_next(ctx)
            self.sync.load(state, record)
            front = self.server.front
            if front is not None:
                front.restore_uri_memory(record.key, record.uris)
            subscribing, unsubscribing = _subscription_of(ctx)
            if subscribing is not None:
                _check_room(record.subscriptions, subscribing)
            if front is not None and state.client is not None:
                with calling(origin_of(ctx, state.client)):  # routes URIs the session's own results named
                    await self._follow(front, state.client, record, skip=unsubscribing)
            before = self.sync.mark(state, front.uri_memory(record.key) if front is not None else record.uris)
            pair = (record.key, subscribing) if subscribing is not None else None
            if pair is not None:
                self._subscribing.add(pair)
            try:
                with collecting() as pending:
                    result = await call_next(ctx)
                if subscribing in record.subscriptions:
                    subscribing = None
                if unsubscribing not in record.subscriptions:
                    unsubscribing = None
                uris = front.uri_memory(record.key) if front is not None else record.uris
                if not await self.sync.write_back(record, state, uris, before, subscribing=subscribing,
                                                  unsubscribing=unsubscribing):
                    raise MCPError(code=types.INVALID_REQUEST, message=_GONE)  # nothing it did counts
                if subscribing is not None or unsubscribing is not None:
                    await self.store.publish(record.key, {"method": SUBSCRIPTIONS_CHANGED})
            finally:
                if pair is not None:
                    self._subscribing.discard(pair)
        except StateUnavailableError as exc:
            logger.warning("%s: %s", ctx.method, exc)
            raise MCPError(code=types.INTERNAL_ERROR, message=f"{exc}; try again shortly") from None
        for send in pending:
            await send()
        return result

    async def listening(self, key: str, connection: Connection, principal: Principal) -> None:
        """Session `key`'s GET stream is held here, by `principal`, and opened or was told its subscriptions changed:
        this replica subscribes for the session as its record has it. A client that only listens then hears updates
        after the replicas that served its requests let go of the session."""
        front = self.server.front
        if front is None:
            return
        try:
            record = await self.store.peek(key)
        except StateUnavailableError as exc:
            logger.info("session %s: subscriptions not followed: %s", key[:8], exc)
            return
        if record is None:
            return
        state = self.server.sessions.session_of(connection, record.protocol_version)
        if state is None or state.client is None:
            return
        front.restore_uri_memory(key, record.uris)
        with acting_as(principal), calling(CallOrigin(client=state.client)):
            await self._follow(front, state.client, record, skip=None)

    async def _follow(self, front: UpstreamFeatures, client: ClientSide, record: SessionRecord, *, skip: str | None) -> None:
        """This replica's upstream subscriptions for the session as its record has them: the URIs it subscribed to
        on any replica are subscribed here too (at this replica's own connections, as the policy allows), the ones
        it left anywhere are left here."""
        if isinstance(client, SessionClient):
            client.principal = self.server.gate.principal()  # who this session's subscriptions are checked for
        held = front.subscribed(record.key)
        wanted = set(record.subscriptions)
        if held == wanted:
            return
        access = self.server.gate.access()
        now = time.monotonic()
        for uri in record.subscriptions:
            if uri in held or uri == skip or now - self._failed.get((record.key, uri), -_RETRY_SUBSCRIBE) \
                    < _RETRY_SUBSCRIBE:
                continue
            if not access.resource(uri, front.uri_server(uri)):
                continue  # the policy changed since: the session hears no more of it
            try:
                await front.subscribe(uri, client)
            except Exception as exc:  # the upstream is down or no longer serves it: tried again later
                if len(self._failed) >= _FAILED_MAX:
                    self._failed.clear()
                self._failed[(record.key, uri)] = now
                logger.info("session %s: subscribing here to %.200r failed: %s", record.key[:8], uri, exc)
        for uri in held - wanted:
            if (record.key, uri) in self._subscribing:
                continue
            try:
                await front.unsubscribe(uri, client)
            except Exception as exc:
                logger.info("session %s: leaving %.200r here failed: %s", record.key[:8], uri, exc)

    def _loaded(self, ctx: ServerRequestContext[Any, Any]) -> SessionRecord | None:
        request = ctx.request
        scope = getattr(request, "scope", None)
        record = scope.pop(RECORD_SCOPE_KEY, None) if isinstance(scope, dict) else None
        return record if isinstance(record, SessionRecord) else None

    def _record_of(self, key: str, params: Any) -> SessionRecord:
        init = types.InitializeRequestParams.model_validate(params or {}, by_name=False)
        # The SDK's rule: the client's version when it is a handshake version, else the latest one.
        requested = init.protocol_version
        version = requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
        surface = self.server.sessions.surface_for(init.client_info.name, version)
        return SessionRecord(key=key, surface=surface, protocol_version=version, client_params=_stored_params(init))


_MAX_TEXT = 256
"""Characters kept of the client's name, title and version."""
_MAX_CAPABILITIES_BYTES = 4096
"""The client's capabilities as the record keeps them, at most (JSON); past it, only which ones it declared."""


def _stored_params(init: types.InitializeRequestParams) -> dict[str, Any]:
    """What the record keeps of `initialize` params: what the server reads of them again (the client's name and
    version, its capability flags), bounded. Each session's record lives in Redis until it expires: a client's
    `experimental` capabilities or long strings would otherwise cost every replica's Redis their whole size."""
    info = init.client_info
    client_info = {"name": info.name[:_MAX_TEXT], "version": info.version[:_MAX_TEXT]}
    if info.title:
        client_info["title"] = info.title[:_MAX_TEXT]
    declared = init.capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
    declared.pop("experimental", None)
    capabilities = {name: _flags(value, 3) for name, value in list(declared.items())[:16]}
    if len(json.dumps(capabilities)) > _MAX_CAPABILITIES_BYTES:
        capabilities = {name: {} for name in capabilities}
    return {"protocolVersion": init.protocol_version[:_MAX_TEXT], "capabilities": capabilities,
            "clientInfo": client_info}


def _flags(value: Any, depth: int) -> Any:
    """Capability flags: nested objects and booleans (what the specification defines), nothing else."""
    if isinstance(value, bool):
        return value
    if not isinstance(value, dict) or depth == 0:
        return {}
    return {str(k)[:64]: _flags(v, depth - 1) for k, v in list(value.items())[:16]
            if isinstance(v, bool | dict)}


def _level_of(state: SessionState) -> str | None:
    return state.client.level if isinstance(state.client, SessionClient) else None


def _set_level(state: SessionState, level: str) -> None:
    if isinstance(state.client, SessionClient):
        state.client.level = level  # type: ignore[assignment]


def _check_room(subscriptions: list[str], uri: str) -> None:
    reason = room_for(subscriptions, uri)
    if reason is not None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Subscription refused: {reason}")


def _subscription_of(ctx: ServerRequestContext[Any, Any]) -> tuple[str | None, str | None]:
    """The URI a `resources/subscribe` or `resources/unsubscribe` request names: (subscribing, unsubscribing)."""
    if ctx.method not in ("resources/subscribe", "resources/unsubscribe") or ctx.params is None:
        return None, None
    uri = ctx.params.get("uri")
    if not isinstance(uri, str):
        return None, None
    return (uri, None) if ctx.method == "resources/subscribe" else (None, uri)
