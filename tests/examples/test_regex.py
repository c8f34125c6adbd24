"""Tests for lazytools_examples.regex_tools."""

import pytest
from lazytools_examples import _regex_runner
from lazytools_examples import regex_tools as r


@pytest.mark.process
def test_regex_test() -> None:
    found = r.regex_test(r"(\d{4})-(\d{2})", "on 2024-05 and 2025-01")
    assert found["matched"] is True and found["groups"] == ["2024", "05"] and found["start"] == 3
    assert r.regex_test(r"\d+", "abc 12", mode="fullmatch") == {"matched": False}
    assert r.regex_test("HELLO", "hello there", flags="i", mode="match")["match"] == "hello"
    assert r.regex_test(r"\w+", "ÉTÉ", mode="fullmatch")["matched"] is True
    assert r.regex_test(r"\w+", "ÉTÉ", flags="a", mode="fullmatch") == {"matched": False}


@pytest.mark.process
def test_regex_find_all() -> None:
    result = r.regex_find_all(r"(?P<k>\w+)=(?P<v>\d+)", "a=1, b=22")
    assert result["count"] == 2 and result["truncated"] is False
    assert result["matches"][1]["named_groups"] == {"k": "b", "v": "22"}
    limited = r.regex_find_all(r"\d", "1 2 3 4", max_matches=2)
    assert limited["count"] == 2 and limited["truncated"] is True
    lines = r.regex_find_all("^x", "x1\nx2", flags="m")
    assert lines["count"] == 2


@pytest.mark.process
def test_regex_replace() -> None:
    assert r.regex_replace(r"(\w+)@(\w+)", r"\2 at \1", "me@home, you@work") == {"text": "home at me, work at you", "replacements": 2}
    assert r.regex_replace("a", "b", "aaa", count=2)["text"] == "bba"
    # A count past C's ssize_t was an OverflowError; any count past the text's places means all of them.
    assert r.regex_replace("a", "b", "aaa", count=2**63)["text"] == "bbb"
    assert r.regex_split(",", "a,b,c", max_split=2**63) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="invalid replacement"):
        r.regex_replace("(a)", r"\3", "a")


@pytest.mark.process
def test_regex_split() -> None:
    assert r.regex_split(r"[,;]\s*", "a, b;c") == ["a", "b", "c"]
    assert r.regex_split(r"(-)", "a-b", max_split=1) == ["a", "-", "b"]


@pytest.mark.process
def test_regex_escape() -> None:
    escaped = r.regex_escape("a.b*c")
    assert escaped == r"a\.b\*c"
    assert r.regex_test(escaped, "xx a.b*c")["matched"] is True


def test_regex_validate() -> None:
    ok = r.regex_validate("(a)(?P<x>b)", flags="i")
    assert ok["valid"] is True and ok["group_count"] == 2
    assert ok["groups"] == [{"index": 1, "name": None}, {"index": 2, "name": "x"}]
    assert ok["flags"][0].startswith("IGNORECASE")
    bad = r.regex_validate("ab(c")
    assert bad["valid"] is False and bad["error_position"] == 2 and "missing )" in bad["error"]


def test_regex_explain_flags() -> None:
    assert list(r.regex_explain_flags("im")) == ["i", "m"]
    assert set(r.regex_explain_flags()) == {"i", "m", "s", "x", "a"}
    with pytest.raises(ValueError, match="unknown flag 'z'"):
        r.regex_explain_flags("z")


@pytest.mark.process
def test_runaway_pattern_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_regex_runner, "DEFAULT_TIMEOUT_SECONDS", 0.5)
    with pytest.raises(ValueError, match="took longer than"):
        r.regex_find_all(r"a*a*a*a*b", "a" * 5000)
    with pytest.raises(ValueError, match="took longer than"):
        r.regex_test("(a+)+$", "a" * 60 + "b")


def test_size_and_syntax_guards() -> None:
    with pytest.raises(ValueError, match="text is too long"):
        r.regex_find_all("a", "a" * 1_000_001)
    with pytest.raises(ValueError, match="pattern is too long"):
        r.regex_split("a" * 1001, "a")
    with pytest.raises(ValueError, match="invalid regular expression"):
        r.regex_find_all("[", "a")


@pytest.mark.process
def test_regex_children_are_capped_and_a_call_past_the_cap_is_refused() -> None:
    from lazytools_examples import _regex_runner

    held = [_regex_runner._children.acquire(blocking=False) for _ in range(_regex_runner.MAX_CHILDREN)]
    try:
        assert all(held)  # no other call is running in this test
        with pytest.raises(ValueError, match="already being evaluated"):
            r.regex_test("a+", "aaa")
    finally:
        for _ in held:
            _regex_runner._children.release()
    assert r.regex_test("a+", "aaa")  # a place again
