"""Catalog entries: the one-line summary used in manifests and search results."""

from __future__ import annotations

import pytest

from lazytools.entry import first_sentence


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
