"""The compact catalog manifest inside the search_tools description: each group, its size and one line.

A group's line is the first real sentence of its summary as plain words (no headings or markdown), unless the
summary is a placeholder: a text that several groups share ("Tools from x.jsonl (no implementation)") says
nothing about any one of them, so those groups are described by their tools instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .catalog import Catalog, Group
from .entry import plain_summary
from .safetext import clip, escape
from .search.analysis import STOP_WORDS, split_words

__all__ = ["LINE_CHARS", "MAX_CHARS", "MAX_GROUPS", "group_line", "manifest"]

MAX_GROUPS = 60
"""Past this many groups the manifest names the largest ones and counts the rest."""

_NAMES_UP_TO = 3
"""Groups this small list their tool names: cheaper than a summary and exact."""


SUMMARY_CHARS = 100

WORD_CHARS = 30
"""A longer word is no topic word: real ones are a few letters, a hostile tool name can be a megabyte long."""

_NAME_CHARS = 200
"""Characters of a tool's upstream name that its topic words are taken from."""

LINE_CHARS = 200
"""A group's line is cut here (group names and summaries come from upstreams and catalog files)."""

MAX_CHARS = MAX_GROUPS * (LINE_CHARS + 1)
"""The manifest's total bound: lines past it are counted, not shown (a line is at most LINE_CHARS plus the cut's
note, so this holds about MAX_GROUPS ordinary lines)."""


def group_line(catalog: Catalog, group: Group, placeholders: frozenset[str] = frozenset()) -> str:
    """`name (tool count): summary`, where a summary in `placeholders` counts as none."""
    tools = catalog.in_group(group.name)
    summary = plain_summary(group.summary, limit=SUMMARY_CHARS) if group.summary else ""
    if summary and group.summary not in placeholders:
        about = summary
    elif len(tools) <= _NAMES_UP_TO:
        about = ", ".join(tool.name for tool in tools)
    else:
        about = _topic_words(catalog, group)
    return clip(f"{group.name} ({len(tools)}): {about}", LINE_CHARS)


def _topic_words(catalog: Catalog, group: Group, count: int = 6) -> str:
    # A group without a summary is described by the words its tool names use most: never by listing them all.
    words: Counter[str] = Counter()
    skip = set(split_words(group.name)) | STOP_WORDS
    for tool in catalog.in_group(group.name):
        name = (tool.upstream_name or tool.name)[:_NAME_CHARS]
        words.update(w for w in split_words(name) if w not in skip and 2 < len(w) <= WORD_CHARS)
    return ", ".join(escape(word) for word, _ in words.most_common(count)) or "tools"


def manifest(catalog: Catalog) -> str:
    groups = sorted((g for g in catalog.groups if catalog.in_group(g.name)), key=lambda g: g.name)
    shown = groups
    if len(groups) > MAX_GROUPS:
        shown = sorted(groups, key=lambda g: -len(catalog.in_group(g.name)))[:MAX_GROUPS]
        shown.sort(key=lambda g: g.name)
    counts = Counter(group.summary for group in groups if group.summary)
    placeholders = frozenset(summary for summary, count in counts.items() if count > 1)
    lines = _within(MAX_CHARS, (group_line(catalog, group, placeholders) for group in shown))
    if len(groups) > len(lines):
        lines.append(f"… and {len(groups) - len(lines)} more groups: search by query to reach them.")
    return "\n".join(lines)


def _within(budget: int, lines: Iterable[str]) -> list[str]:
    """The first `lines` whose total length (with newlines) stays within `budget`."""
    kept: list[str] = []
    for line in lines:
        budget -= len(line) + 1
        if budget < 0:
            break
        kept.append(line)
    return kept
