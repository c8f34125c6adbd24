"""Session state: enabled tools capped, the least recently found or called leaving first, the list order kept."""

from __future__ import annotations

from lazytools.state.sessions import SessionState


def test_enable_reports_new_tools_and_keeps_the_order_they_came_in() -> None:
    state = SessionState("k", "dynamic")
    assert state.enable(["a", "b", "a"]) == (["a", "b"], [])
    assert state.enable(["b", "c"]) == (["c"], [])
    assert list(state.enabled) == ["a", "b", "c"]
    state.used("a")
    assert list(state.enabled) == ["a", "b", "c"]  # a use changes who leaves first, not the list's order


def test_the_least_recently_used_leave_first_at_the_cap() -> None:
    state = SessionState("k", "dynamic")
    state.enable(["a", "b", "c"], limit=3)
    state.used("a")  # called: a is now the most recent, b the least
    assert state.enable(["d"], limit=3) == (["d"], ["b"])
    assert list(state.enabled) == ["a", "c", "d"]
    state.enable(["c"], limit=3)  # found again: c is recent, a now the least
    assert state.enable(["e"], limit=3) == (["e"], ["a"])
    assert state.enable(["f", "g", "h", "i"], limit=3) == (["f", "g", "h"], ["d", "c", "e"])  # oldest first
    assert list(state.enabled) == ["f", "g", "h"]  # a search larger than the cap keeps its best matches
    state.used("unknown")
    assert list(state.enabled) == ["f", "g", "h"] and "unknown" not in state.used_at
    assert state.enable(["f"], limit=3) == ([], [])
    assert set(state.used_at) == set(state.enabled)
