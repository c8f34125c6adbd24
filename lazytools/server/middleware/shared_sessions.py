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
from dataclasses import dataclass
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
from ...state.sessions import LastSearch, SessionState
from ..learning import MAX_LINKED
from ..passthrough import SessionClient, UpstreamFeatures, origin_of
from ..surface import is_stateless_era

if TYPE_CHECKING:
    from ..core import LazyServer

__all__ = [
    "MAX_SUBSCRIPTIONS",
    "MAX_SUBSCRIPTION_CHARS",
    "MAX_SUBSCRIPTION_URI",
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

_MAX_URIS = 256
"""URIs kept per upstream in a session's record (the newest): the routing memory that follows it to any replica."""
_MAX_URI_CHARS = 32 * 1024
"""Characters of URIs kept per upstream in a session's record (the newest): URIs may be long, and the record is
read by every request of the session."""
MAX_SUBSCRIPTIONS = 64
"""Resource subscriptions a session may hold (each is an upstream subscription per replica): one more is refused."""
MAX_SUBSCRIPTION_URI = 8192
"""Characters of a URI a session may subscribe to: the bound of the URIs the gateway remembers per session
(`sources.gateway.offerings.MAX_NAMED_URI`)."""
MAX_SUBSCRIPTION_CHARS = 16 * 1024
"""Characters of all of a session's subscribed URIs together: past it, subscribing is refused. Without it a
session's record (read by every request, kept in Redis until it expires) grew to megabytes and, under a Redis
`maxmemory` policy, pushed other sessions' records out."""
_RETRY_SUBSCRIBE = 30.0
"""Seconds before a replica tries again to subscribe for a session where subscribing failed (the upstream is down,
or no longer serves the URI): requests of the session are not slowed by a failing upstream each time."""
_FAILED_MAX = 10_000
_GONE = "Session not found (it ended or expired)"


@dataclass(frozen=True, slots=True)
class _Snapshot:
    enabled: tuple[str, ...]
    used_at: tuple[tuple[str, int], ...]
    level: str | None
    uris: tuple[tuple[str, tuple[str, ...]], ...]
    last_search: LastSearch | None
    last_called: str | None

    @classmethod
    def of(cls, state: SessionState, uris: dict[str, list[str]]) -> _Snapshot:
        return cls(tuple(state.enabled), tuple(sorted(state.used_at.items())), _level(state),
                   tuple(sorted((name, tuple(named)) for name, named in uris.items())), state.last_search,
                   state.last_called)


class SharedSessions:
    """The server middleware that keeps a session's live state and its shared record in step."""

    def __init__(self, server: LazyServer, store: SharedState) -> None:
        self.server = server
        self.store = store
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
            _overlay(state, record)
            front = self.server.front
            if front is not None:
                front.restore_uri_memory(record.key, record.uris)
            subscribing, unsubscribing = _subscription_of(ctx)
            if subscribing is not None:
                _check_room(record.subscriptions, subscribing)
            if front is not None and state.client is not None:
                with calling(origin_of(ctx, state.client)):  # routes URIs the session's own results named
                    await self._follow(front, state.client, record, skip=unsubscribing)
            before = _Snapshot.of(state, front.uri_memory(record.key) if front is not None else record.uris)
            pair = (record.key, subscribing) if subscribing is not None else None
            if pair is not None:
                self._subscribing.add(pair)
            try:
                with collecting() as pending:
                    result = await call_next(ctx)
                after = _Snapshot.of(state, front.uri_memory(record.key) if front is not None else record.uris)
                if subscribing in record.subscriptions:
                    subscribing = None
                if unsubscribing not in record.subscriptions:
                    unsubscribing = None
                if after != before or subscribing is not None or unsubscribing is not None:
                    written = await self.store.update(record, _change(before, after, self.server.settings.max_enabled,
                                                                      subscribing, unsubscribing))
                    if written is None:  # ended or lost from the store while this ran: nothing it did counts
                        raise MCPError(code=types.INVALID_REQUEST, message=_GONE)
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


def _level(state: SessionState) -> str | None:
    return state.client.level if isinstance(state.client, SessionClient) else None


def _overlay(state: SessionState, record: SessionRecord) -> None:
    """The record's view of the session wins over what this replica last knew of it."""
    state.surface = "proxy" if record.surface == "proxy" else "dynamic"
    state.enabled = dict.fromkeys(record.enabled)
    state.used_at = dict(record.used_at)
    state.clock = record.clock
    if isinstance(state.client, SessionClient) and record.log_level in _LEVELS:
        state.client.level = record.log_level  # type: ignore[assignment]
    # Learning from use: what links this request's call to the session's search and previous call, wherever they
    # were served.
    last = state.last_search
    stored = record.last_search
    if last is None or not isinstance(stored, dict) or stored.get("id") != last.id:
        state.last_search = _last_search(stored)
    state.last_called = record.last_called if isinstance(record.last_called, str) else None


def _last_search(stored: Any) -> LastSearch | None:
    """The record's latest search, or None when it holds none or not a well-formed one."""
    if not isinstance(stored, dict):
        return None
    found, terms, returned = stored.get("id"), _strings(stored.get("terms")), _strings(stored.get("returned"))
    if not isinstance(found, str) or terms is None or returned is None:
        return None
    return LastSearch(found, terms[:MAX_SEARCH_TERMS], returned[:MAX_LINKED])


def _strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return tuple(value)


_LEVELS = frozenset({"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"})


def _room_for(subscriptions: list[str], uri: str) -> str | None:
    """Why session subscriptions `subscriptions` have no room for `uri` (None: they have, or hold it already)."""
    if uri in subscriptions:
        return None
    if len(uri) > MAX_SUBSCRIPTION_URI:
        return f"the URI is longer than {MAX_SUBSCRIPTION_URI} characters"
    if len(subscriptions) >= MAX_SUBSCRIPTIONS:
        return f"the session holds {MAX_SUBSCRIPTIONS} subscriptions already (unsubscribe from one first)"
    if sum(map(len, subscriptions)) + len(uri) > MAX_SUBSCRIPTION_CHARS:
        return (f"the session's subscribed URIs would exceed {MAX_SUBSCRIPTION_CHARS} characters together "
                "(unsubscribe from one first)")
    return None


def _check_room(subscriptions: list[str], uri: str) -> None:
    reason = _room_for(subscriptions, uri)
    if reason is not None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Subscription refused: {reason}")


def _newest(uris: list[str], chars: int) -> list[str]:
    """The newest of `uris` (oldest first) that fit in `chars` characters together."""
    kept: list[str] = []
    total = 0
    for uri in reversed(uris):
        total += len(uri)
        if total > chars:
            break
        kept.append(uri)
    return kept[::-1]


def _subscription_of(ctx: ServerRequestContext[Any, Any]) -> tuple[str | None, str | None]:
    """The URI a `resources/subscribe` or `resources/unsubscribe` request names: (subscribing, unsubscribing)."""
    if ctx.method not in ("resources/subscribe", "resources/unsubscribe") or ctx.params is None:
        return None, None
    uri = ctx.params.get("uri")
    if not isinstance(uri, str):
        return None, None
    return (uri, None) if ctx.method == "resources/subscribe" else (None, uri)


def _change(before: _Snapshot, after: _Snapshot, limit: int, subscribing: str | None = None,
            unsubscribing: str | None = None) -> Any:
    """What a request did, as a change that can be redone on a newer record: the tools it found or called, in the
    order it last used them, enabled again (the cap evicts as it did here), the log level it set, the resource
    it subscribed to or left, and the search or call it made last (learning from use)."""
    old = dict(before.used_at)
    now = dict(after.used_at)
    touched = sorted((name for name, at in now.items() if old.get(name) != at), key=now.__getitem__)
    level_set = after.level != before.level
    named_before = dict(before.uris)
    named_now = {name: [uri for uri in uris if uri not in named_before.get(name, ())] for name, uris in after.uris}
    last = after.last_search
    search_changed = last != before.last_search
    called_changed = after.last_called != before.last_called

    def change(record: SessionRecord) -> None:
        state = SessionState(key=record.key, surface="dynamic", enabled=dict.fromkeys(record.enabled),
                             used_at=dict(record.used_at), clock=record.clock)
        if touched:
            state.enable(touched, limit=limit)
        record.enabled = list(state.enabled)
        record.used_at = dict(state.used_at)
        record.clock = state.clock
        if level_set:
            record.log_level = after.level
        for name, new in named_now.items():
            if new:
                kept = [uri for uri in record.uris.get(name, []) if uri not in new]
                record.uris[name] = _newest([*kept, *new][-_MAX_URIS:], _MAX_URI_CHARS)
        if subscribing is not None and _room_for(record.subscriptions, subscribing) is None:
            # (checked again on the newest record: concurrent subscribes of one session never pass the bounds;
            # one that lost the race is left upstream by the replicas, as the record does not hold it)
            record.subscriptions = [*record.subscriptions, subscribing]
        if unsubscribing is not None:
            record.subscriptions = [uri for uri in record.subscriptions if uri != unsubscribing]
        if search_changed:
            record.last_search = None if last is None else {"id": last.id, "terms": list(last.terms),
                                                             "returned": list(last.returned)}
        if called_changed:
            record.last_called = after.last_called

    return change
