"""Tests for the shared helpers: size limits, glob translation and the regex child-process runner."""

import time

import pytest
from lazytools_examples import _regex_runner
from lazytools_examples._common import ensure_max_items, ensure_max_length
from lazytools_examples._sandbox import glob_to_regex


def test_size_guards() -> None:
    assert ensure_max_length("abc", "text", 3) == "abc"
    with pytest.raises(ValueError, match="text is too long"):
        ensure_max_length("abcd", "text", 3)
    with pytest.raises(ValueError, match="too many items"):
        ensure_max_items([1, 2, 3], "numbers", 2)


def test_glob_to_regex() -> None:
    assert glob_to_regex("*.py").match("app.py")
    assert not glob_to_regex("*.py").match("src/app.py")
    assert glob_to_regex("**/*.py").match("src/pkg/app.py")
    assert glob_to_regex("**/*.py").match("app.py")
    assert glob_to_regex("file?.[!x]t").match("file1.tt")
    assert not glob_to_regex("file?.[!x]t").match("file1.xt")


@pytest.mark.process
def test_runner_uses_child_process_and_handles_unicode() -> None:
    result = _regex_runner.run_regex({"op": "search", "pattern": r"(\w+)€", "flags": 0, "text": "prix: 5€ ou dix€"})
    assert result["match"] == "5€" and result["groups"] == ["5"]


@pytest.mark.process
def test_runner_stops_runaway_patterns() -> None:
    started = time.monotonic()
    with pytest.raises(ValueError, match="took longer than 0.5s"):
        _regex_runner.run_regex({"op": "search", "pattern": "(a|aa)+$", "flags": 0, "text": "a" * 200 + "b"}, timeout=0.5)
    assert time.monotonic() - started < 5


def test_runner_falls_back_in_process_without_script(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setattr(_regex_runner, "_OPS_SCRIPT", tmp_path / "missing.py")
    result = _regex_runner.run_regex({"op": "split", "pattern": ",", "flags": 0, "text": "a,b", "count": 0})
    assert result == {"parts": ["a", "b"]}
    with pytest.raises(ValueError, match="unknown operation"):
        _regex_runner.run_regex({"op": "explode", "pattern": ",", "flags": 0})
