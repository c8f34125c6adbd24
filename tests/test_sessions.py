"""Session state: enabled tools in least-recently-used order, capped."""

from __future__ import annotations

from lazytools.server.sessions import SessionState


def test_enable_reports_new_tools_and_refreshes_old_ones() -> None:
    state = SessionState("k", "dynamic")
    assert state.enable(["a", "b", "a"]) == (["a", "b"], [])
    assert state.enable(["b", "c"]) == (["c"], [])
    assert list(state.enabled) == ["a", "b", "c"]  # found again, b is now more recent than a


def test_the_least_recently_used_leave_first_at_the_cap() -> None:
    state = SessionState("k", "dynamic")
    state.enable(["a", "b", "c"], limit=3)
    state.used("a")  # called: a is now the most recent
    assert state.enable(["d"], limit=3) == (["d"], ["b"])
    assert list(state.enabled) == ["c", "a", "d"]
    assert state.enable(["e", "f", "g", "h"], limit=3) == (["e", "f", "g"], ["c", "a", "d"])
    assert list(state.enabled) == ["e", "f", "g"]  # a search larger than the cap keeps its best matches
    state.used("unknown")
    assert list(state.enabled) == ["e", "f", "g"]
    assert state.enable(["e"], limit=3) == ([], [])
