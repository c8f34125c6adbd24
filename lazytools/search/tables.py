"""The rule tables search reads, as data files beside the code (`data/*.json`): stop words and everyday phrasing.
Each file holds plain JSON with an `_about` line saying what it is for; the modules that apply a table
(`analysis`, `phrases`) read it here once per process."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["DATA", "table", "words"]

DATA = Path(__file__).with_name("data")


@cache
def table(name: str) -> dict[str, Any]:
    """The table `data/<name>.json`, read once."""
    loaded = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        raise ValueError(f"{name}.json: not a JSON object")
    return loaded


def words(name: str, key: str) -> frozenset[str]:
    """The words of a table's list of space-separated lines (`stop_words.function_words`)."""
    return frozenset(word for line in table(name)[key] for word in str(line).split())
