"""The compact catalog manifest inside the search_tools description: each group, its size and one line."""

from __future__ import annotations

from collections import Counter

from .catalog import Catalog, Group
from .entry import first_sentence
from .search.analysis import STOP_WORDS, split_words

__all__ = ["MAX_GROUPS", "group_line", "manifest"]

MAX_GROUPS = 60
"""Past this many groups the manifest names the largest ones and counts the rest."""

_NAMES_UP_TO = 3
"""Groups this small list their tool names: cheaper than a summary and exact."""


def group_line(catalog: Catalog, group: Group) -> str:
    tools = catalog.in_group(group.name)
    if group.summary:
        about = first_sentence(group.summary, limit=100)
    elif len(tools) <= _NAMES_UP_TO:
        about = ", ".join(tool.name for tool in tools)
    else:
        about = _topic_words(catalog, group)
    return f"{group.name} ({len(tools)}): {about}"


def _topic_words(catalog: Catalog, group: Group, count: int = 6) -> str:
    # A group without a summary is described by the words its tool names use most: never by listing them all.
    words: Counter[str] = Counter()
    skip = set(split_words(group.name)) | STOP_WORDS
    for tool in catalog.in_group(group.name):
        words.update(w for w in split_words(tool.source_name or tool.name) if w not in skip and len(w) > 2)
    return ", ".join(word for word, _ in words.most_common(count)) or "tools"


def manifest(catalog: Catalog) -> str:
    groups = sorted((g for g in catalog.groups if catalog.in_group(g.name)), key=lambda g: g.name)
    shown = groups
    if len(groups) > MAX_GROUPS:
        shown = sorted(groups, key=lambda g: -len(catalog.in_group(g.name)))[:MAX_GROUPS]
        shown.sort(key=lambda g: g.name)
    lines = [group_line(catalog, group) for group in shown]
    if len(groups) > len(shown):
        lines.append(f"… and {len(groups) - len(shown)} more groups: search by query to reach them.")
    return "\n".join(lines)
