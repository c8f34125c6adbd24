"""A session's live state and its shared record kept in step (state/sync.py): loaded at the start of a request,
what it changed written back so that concurrent requests on other replicas lose nothing; and the only place that
does it."""

from __future__ import annotations

import ast
from pathlib import Path

from lazytools.state import MemoryStateStore, SessionRecord
from lazytools.state.sessions import LastSearch, SessionState
from lazytools.state.sync import RecordSync

PACKAGE = Path(__file__).resolve().parent.parent / "lazytools"


def _sync(store: MemoryStateStore, levels: dict[str, str]) -> RecordSync:
    def set_level(state: SessionState, level: str) -> None:
        levels[state.key] = level

    return RecordSync(store, max_enabled=3, max_search_terms=2, max_linked=2,
                      level_of=lambda state: levels.get(state.key), set_level=set_level)


async def test_a_request_starts_from_the_record_and_writes_back_only_what_it_changed() -> None:
    store = MemoryStateStore(ttl=60)
    await store.create(SessionRecord(key="s", surface="proxy", protocol_version="2025-11-25", enabled=["a"],
                                     used_at={"a": 1}, clock=1, log_level="info",
                                     last_search={"id": "q1", "terms": ["t1", "t2", "t3"], "returned": ["a"]}))
    levels: dict[str, str] = {}
    sync = _sync(store, levels)
    state = SessionState(key="s", surface="dynamic", enabled={"stale": None})
    record = await store.load("s")
    assert record is not None
    sync.load(state, record)
    assert (state.surface, list(state.enabled), state.clock, levels["s"]) == ("proxy", ["a"], 1, "info")
    assert state.last_search == LastSearch("q1", ("t1", "t2"), ("a",))  # bounded as the sync was told
    since = sync.mark(state, {})
    assert await sync.write_back(record, state, {}, since)
    assert (await store.load("s")).rev == 0  # nothing changed: nothing written

    state.enable(["b"], limit=3)
    assert await sync.write_back(record, state, {"up": ["file:///x"]}, since)
    written = await store.load("s")
    assert written is not None and written.rev == 1
    assert (written.enabled, written.uris) == (["a", "b"], {"up": ["file:///x"]})


async def test_changes_of_two_replicas_from_one_record_are_both_kept() -> None:
    store = MemoryStateStore(ttl=60)
    await store.create(SessionRecord(key="s", surface="dynamic", protocol_version="2025-11-25"))
    sync = _sync(store, {})
    here, there = SessionState(key="s", surface="dynamic"), SessionState(key="s", surface="dynamic")
    record_here, record_there = await store.load("s"), await store.load("s")
    assert record_here is not None and record_there is not None
    sync.load(here, record_here)
    sync.load(there, record_there)
    since_here, since_there = sync.mark(here, {}), sync.mark(there, {})
    here.enable(["a"], limit=3)
    there.enable(["b"], limit=3)
    assert await sync.write_back(record_here, here, {}, since_here)
    assert await sync.write_back(record_there, there, {}, since_there, subscribing="res://r")  # redone on rev 1
    final = await store.load("s")
    assert final is not None and (sorted(final.enabled), final.subscriptions, final.rev) == (["a", "b"], ["res://r"], 2)


async def test_a_write_back_to_a_session_gone_from_the_store_says_so() -> None:
    store = MemoryStateStore(ttl=60)
    await store.create(SessionRecord(key="s", surface="dynamic", protocol_version="2025-11-25"))
    sync = _sync(store, {})
    state = SessionState(key="s", surface="dynamic")
    record = await store.load("s")
    assert record is not None
    since = sync.mark(state, {})
    state.enable(["a"], limit=3)
    await store.delete("s")
    assert not await sync.write_back(record, state, {}, since)


def test_only_the_state_package_maps_records_onto_sessions() -> None:
    """Outside `state/`, no module reads or writes when a record's enabled tools were used, or its clock: the middleware
    and the transports call `RecordSync` instead of diffing sessions themselves."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent.name == "state":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("used_at", "clock") \
                    and isinstance(node.value, ast.Name) and node.value.id == "record":
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, found
