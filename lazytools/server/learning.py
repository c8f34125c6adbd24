"""Learning from use, the server's side: what each session searched for, which tools it then called, and whether
the calls succeeded, handed to the usage log (`lazytools.learning`) without waiting for it."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Sequence

from ..entry import ToolEntry
from ..identity import current_principal
from ..learning.log import UsageLog
from ..learning.records import MAX_SEARCH_TERMS, CallRecord, SearchRecord
from ..state.sessions import LastSearch, SessionState

__all__ = ["MAX_LINKED", "MAX_REMEMBERED", "record_call", "record_search", "source_of"]

MAX_REMEMBERED = 200
"""Tools per session whose finding search is remembered (the oldest are forgotten first)."""
MAX_LINKED = 24
"""Tools of a session's latest search kept in `SessionState.last_search` (and so in a shared session record): the
search limit's highest default (20) and the suggestions after them."""


def source_of(log: UsageLog, state: SessionState | None) -> str | None:
    """Who a record counts for among the distinct ones a pattern needs (`learning.prior.MIN_SESSIONS`): an OAuth user
    (a keyed hash of their issuer and subject) however many sessions they open, as sessions cost nothing; any other
    caller by session: over stdio and loopback it is the machine's own user, and holders of the shared token are
    one team that the operator trusts alike (docs/search.md, "What learning trusts")."""
    principal = current_principal()
    if principal is None or principal.kind != "oauth":
        return state.key if state is not None else None
    digest = hashlib.blake2b(principal.key.encode(), digest_size=8, key=log.prior.key).hexdigest()
    return f"user:{digest}"


def _counted_as(log: UsageLog, state: SessionState) -> str:
    source = source_of(log, state)
    assert source is not None  # a session's state is given
    return source


def record_search(log: UsageLog, state: SessionState, query: str, returned: Sequence[ToolEntry],
                  enabled: Sequence[ToolEntry]) -> None:
    """One search of `state`'s session: its terms, what it returned and enabled. Each returned tool remembers it,
    so a later call of that tool is counted for these terms."""
    if not query or not returned:
        return  # tool_names or a group alone, or a search that matched nothing, says nothing worth keeping
    terms = log.prior.terms(query)[:MAX_SEARCH_TERMS]
    search_id = uuid.uuid4().hex
    log.record(SearchRecord(id=search_id, at=time.time(), session=_counted_as(log, state), terms=terms,
                            returned=tuple(entry.name for entry in returned),
                            enabled=tuple(entry.name for entry in enabled), request=query))
    for entry in returned:
        state.found_by.pop(entry.name, None)  # re-inserted last: the dict's order is the forgetting order
        state.found_by[entry.name] = (search_id, terms)
    while len(state.found_by) > MAX_REMEMBERED:
        del state.found_by[next(iter(state.found_by))]
    state.last_search = LastSearch(search_id, terms, tuple(entry.name for entry in returned[:MAX_LINKED]))


def record_call(log: UsageLog, state: SessionState, tool: str, ok: bool) -> None:
    """A call of catalog tool `tool` in `state`'s session and whether it succeeded, with the search that found it
    and the tool called before it."""
    search_id, terms = _finding(state, tool)
    log.record(CallRecord(at=time.time(), session=_counted_as(log, state), tool=tool, ok=ok, search=search_id,
                          terms=terms, after=state.last_called))
    state.last_called = tool


def _finding(state: SessionState, tool: str) -> tuple[str | None, tuple[str, ...]]:
    """The id and terms of the session's latest search that returned `tool`: its latest search of all when that one
    did (which may have been served by another replica: it comes with the shared record), else the latest of those
    this process served."""
    last = state.last_search
    if last is not None and tool in last.returned:
        return last.id, last.terms
    return state.found_by.get(tool, (None, ()))
