"""Comments and docstrings say why, not history: the figures that showed a choice right live in the docs' logs
(docs/benchmarks-log.md, docs/reliability-log.md, docs/search-log.md), not beside the code."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "lazytools"

LEFT_TO_ITS_OWN_ISSUE: tuple[str, ...] = ()
"""Folders left out of the check (none: search/ was reviewed too)."""

NARRATION = re.compile(
    r"\btook (the process from\s|\d)|\bwas (about )?(a (tenth|fifth|third|quarter|half)\b|\d+(\.\d+)? ?%)"
    r"|\(measured\b|\bmeasured:|\bwent from \d|\d+(\.\d+)? ?ms of\s+CPU|\btwice the CPU|\ba third of its CPU"
    r"|\bused to (be|gather|read|take)\b|\bthat rule cost\b")
"""How a comment tells what happened once: a figure measured, what the code used to do."""


def _texts(source: str) -> Iterator[tuple[int, str]]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield node.lineno, node.value.value


def _narrating(source: str) -> list[tuple[int, str]]:
    return [(line, match.group(0)) for line, text in _texts(source) for match in NARRATION.finditer(text)]


def test_no_comment_narrates_history() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in LEFT_TO_ITS_OWN_ISSUE:
            continue
        found += [f"{path.relative_to(PACKAGE)}:{line}: {words!r}" for line, words in _narrating(path.read_text())]
    assert not found, found


def test_a_narrating_comment_is_found() -> None:
    """The check above can fail: a measured figure in a comment or a docstring is caught, a reason is not."""
    assert _narrating('x = 1  # building it was 6% of a call\'s CPU\n') == [(1, "was 6%")]
    assert _narrating('def f() -> None:\n    """A 40 MB line took 19 s."""\n') == [(2, "took 1")]
    assert _narrating('x = 1  # built once: every call reads it\n') == []
