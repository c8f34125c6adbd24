"""A session's live state and its shared record kept in step: the one place that knows how each maps to the other.

A request starts from the record (`RecordSync.load`: the record's view wins over what this replica last knew), and
what it changed is written back as a change that can be redone on a newer record (`RecordSync.write_back`), so two
replicas serving one session at once lose neither's work. A connection a replica rebuilds for a session starts as
it stood after the handshake (`restore_connection`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.connection import Connection

from .records import SessionRecord
from .sessions import LastSearch, SessionState
from .store import StateStore, Update

__all__ = ["MAX_SUBSCRIPTIONS", "MAX_SUBSCRIPTION_CHARS", "MAX_SUBSCRIPTION_URI", "Mark", "RecordSync",
           "restore_connection", "room_for"]

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
"""Characters of all of a session's subscribed URIs together: past it, subscribing is refused. A record is read by
every request and kept in Redis until it expires: unbounded, it would grow to megabytes and, under a Redis
`maxmemory` policy, push other sessions' records out."""

_LEVELS = frozenset({"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"})

LevelOf = Callable[[SessionState], str | None]
"""The log level the session's client set (`logging/setLevel`), if any."""
SetLevel = Callable[[SessionState, str], None]


@dataclass(frozen=True, slots=True)
class Mark:
    """What a session stood at when a request began, to tell what the request changed."""

    enabled: tuple[str, ...]
    used_at: tuple[tuple[str, int], ...]
    level: str | None
    uris: tuple[tuple[str, tuple[str, ...]], ...]
    last_search: LastSearch | None
    last_called: str | None


class RecordSync:
    """Loads a session's record into its live state, and writes back what a request changed."""

    def __init__(self, store: StateStore, *, max_enabled: int, max_search_terms: int, max_linked: int,
                 level_of: LevelOf, set_level: SetLevel) -> None:
        self.store = store
        self.max_enabled = max_enabled
        """The cap on enabled tools, applied again when a change is redone on a newer record."""
        self.max_search_terms = max_search_terms
        self.max_linked = max_linked
        """Bounds of the latest search a record links calls to (its terms, the tools it returned)."""
        self._level_of = level_of
        self._set_level = set_level

    def load(self, state: SessionState, record: SessionRecord) -> None:
        """The record's view of the session wins over what this replica last knew of it."""
        state.surface = "proxy" if record.surface == "proxy" else "dynamic"
        state.enabled = dict.fromkeys(record.enabled)
        state.used_at = dict(record.used_at)
        state.clock = record.clock
        if record.log_level in _LEVELS:
            self._set_level(state, record.log_level)
        # Learning from use: what links this request's call to the session's search and previous call, wherever they
        # were served.
        last = state.last_search
        stored = record.last_search
        if last is None or not isinstance(stored, dict) or stored.get("id") != last.id:
            state.last_search = self._last_search(stored)
        state.last_called = record.last_called if isinstance(record.last_called, str) else None

    def mark(self, state: SessionState, uris: dict[str, list[str]]) -> Mark:
        """Where the session stands now, `uris` being the resource URIs its calls named, by upstream."""
        return Mark(tuple(state.enabled), tuple(sorted(state.used_at.items())), self._level_of(state),
                    tuple(sorted((name, tuple(named)) for name, named in uris.items())), state.last_search,
                    state.last_called)

    async def write_back(self, record: SessionRecord, state: SessionState, uris: dict[str, list[str]], since: Mark,
                         *, subscribing: str | None = None, unsubscribing: str | None = None) -> bool:
        """Write what the session changed `since` (and the resource it subscribed to or left) to its record, when
        anything did. False when the session is gone from the store (ended or lost meanwhile)."""
        before, after = since, self.mark(state, uris)
        if after == before and subscribing is None and unsubscribing is None:
            return True
        written = await self.store.update(record, _change(before, after, self.max_enabled, subscribing,
                                                          unsubscribing))
        return written is not None

    def _last_search(self, stored: Any) -> LastSearch | None:
        """The record's latest search, or None when it holds none or not a well-formed one."""
        if not isinstance(stored, dict):
            return None
        found, terms, returned = stored.get("id"), _strings(stored.get("terms")), _strings(stored.get("returned"))
        if not isinstance(found, str) or terms is None or returned is None:
            return None
        return LastSearch(found, terms[:self.max_search_terms], returned[:self.max_linked])


def restore_connection(connection: Connection, record: SessionRecord) -> None:
    """The connection as it stood after the session's handshake on whichever replica it happened."""
    if record.client_params is not None:
        connection.client_params = types.InitializeRequestParams.model_validate(record.client_params, by_name=False)
    connection.protocol_version = record.protocol_version
    connection.initialized.set()


def room_for(subscriptions: list[str], uri: str) -> str | None:
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


def _strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return tuple(value)


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


def _change(before: Mark, after: Mark, limit: int, subscribing: str | None = None,
            unsubscribing: str | None = None) -> Update:
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
        if subscribing is not None and room_for(record.subscriptions, subscribing) is None:
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
