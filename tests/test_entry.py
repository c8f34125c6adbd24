"""Catalog entries: the one-line summary used in manifests and search results."""

from __future__ import annotations

import pytest

from lazytools.entry import first_sentence, plain_summary


@pytest.mark.parametrize(("text", "expected"), [
    ("Convert a date from one zone to another, e.g. UTC to CET. More text.",
     "Convert a date from one zone to another, e.g. UTC to CET."),
    ("Count words.\n\nDetails here.", "Count words."),
    ("Is it prime? Then say so.", "Is it prime?"),
    ("No full stop at all", "No full stop at all"),
    ("Line one\nstill the same sentence. Next.", "Line one still the same sentence."),
    ("x" * 200, "x" * 159 + "…"),
])
def test_first_sentence(text: str, expected: str) -> None:
    assert first_sentence(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("# Everything Server – Server Instructions\n\nAudience: These instructions are written for an agent.\n"
     "Follow them to use the server.\n\n## Tools\n\n- Use `get-roots-list` to see roots\n- Another",
     "Use get-roots-list to see roots."),
    ("# Weather\n\nForecasts from the **national** service, see [docs](https://example.com/x). More.",
     "Forecasts from the national service, see docs."),
    ("```json\n{\"a\": 1}\n```\nReads files. Writes files.", "Reads files."),
    ("# Only a heading", ""),
    ("---\n<div>\n", ""),
    ("Use this server to fetch current documentation whenever the user asks about a library, framework, SDK.",
     "Use this server to fetch current documentation whenever the user asks about a library, framework…"),
    ("snake_case_names stay whole.", "snake_case_names stay whole."),
])
def test_plain_summary(text: str, expected: str) -> None:
    assert plain_summary(text) == expected
    assert len(plain_summary(text)) <= 100
