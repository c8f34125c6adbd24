"""The compact catalog manifest inside the search_tools description: each group, its size and one line, within a
budget of characters (the `manifest_chars` setting) that all of its text counts against; a catalog of more groups
than fit names them without summaries, then names the largest and says how to reach the rest.

A group's line is the first real sentence of its summary as plain words (no headings or markdown), unless the
summary is a placeholder: a text that several groups share ("Tools from x.jsonl (no implementation)") says
nothing about any one of them, so those groups are described by their tools instead.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from .catalog import Catalog, Group
from .entry import plain_summary
from .safetext import clip, escape
from .search.analysis import STOP_WORDS, split_words

__all__ = ["LINE_CHARS", "MANIFEST_CHARS", "SUMMARY_TIERS", "group_line", "manifest"]

MANIFEST_CHARS = 1_200
"""The manifest's budget in characters when none is given (the `manifest_chars` setting's default): within it, every
group of a catalog of a few dozen servers is named with its size."""

SUMMARY_TIERS = (100, 60, 30)
"""A group's summary is cut at the first of these lengths at which every group's line fits the budget; when none
does, the groups are named without summaries, and past that the largest are named and the rest counted."""

_NAMES_UP_TO = 3
"""Groups this small list their tool names: cheaper than a summary and exact."""


SUMMARY_CHARS = SUMMARY_TIERS[0]

WORD_CHARS = 30
"""A longer word is no topic word: real ones are a few letters, a hostile tool name can be a megabyte long."""

_NAME_CHARS = 200
"""Characters of a tool's upstream name that its topic words are taken from."""

LINE_CHARS = 200
"""A group's line is cut here (group names and summaries come from upstreams and catalog files)."""

REACH = "search_tools(group=NAME) lists a group; an unknown group's error names them all"
"""How every group is reached when the manifest does not name it."""


def group_line(catalog: Catalog, group: Group, placeholders: frozenset[str] = frozenset(),
               summary_chars: int = SUMMARY_CHARS) -> str:
    """`name (tool count): summary`, where a summary in `placeholders` counts as none, cut at `summary_chars`."""
    tools = catalog.in_group(group.name)
    summary = plain_summary(_told(group.summary), limit=summary_chars) if group.summary else ""
    if summary and group.summary not in placeholders:
        about = summary
    elif len(tools) <= _NAMES_UP_TO:
        about = ", ".join(tool.name for tool in tools)[:summary_chars]
    else:
        about = _topic_words(catalog, group)[:summary_chars]
    return clip(f"{group.name} ({len(tools)}): {about}", LINE_CHARS)


_BOILERPLATE = re.compile(
    r"^(?:an?\s+|the\s+)?(?:official\s+)?(?:mcp|model context protocol)(?:\s*\(mcp\))?\s+server"
    r"(?:\s+implementation)?(?:\s+(?:for|that|which|to)\b)?(?:\s+provides?\b)?\s*", re.IGNORECASE)
"""How most servers' descriptions open ("A Model Context Protocol server that provides ..."): every group is one,
so the words say nothing about any of them."""


def _told(summary: str) -> str:
    """The summary less an opening that only says it is an MCP server (the whole summary when that is all)."""
    rest = _BOILERPLATE.sub("", summary[:_NAME_CHARS], count=1) + summary[_NAME_CHARS:]
    return rest if rest.strip(" .") else summary


def _name(name: str) -> str:
    return clip(name, LINE_CHARS // 2)


def _topic_words(catalog: Catalog, group: Group, count: int = 6) -> str:
    # A group without a summary is described by the words its tool names use most: never by listing them all.
    words: Counter[str] = Counter()
    skip = set(split_words(group.name)) | STOP_WORDS
    for tool in catalog.in_group(group.name):
        name = (tool.upstream_name or tool.name)[:_NAME_CHARS]
        words.update(w for w in split_words(name) if w not in skip and 2 < len(w) <= WORD_CHARS)
    return ", ".join(escape(word) for word, _ in words.most_common(count)) or "tools"


def manifest(catalog: Catalog, budget: int = MANIFEST_CHARS) -> str:
    """The groups in at most `budget` characters, all of the text counted: a line per group with its summary cut at
    the longest of SUMMARY_TIERS that lets every line fit; else `name (size)` for every group on one line; else the
    largest groups that fit and a count of the rest; else that count alone, cut at a word. Every form but the cut
    one ends saying how to reach any group; a budget of 0 is no manifest."""
    groups = sorted((g for g in catalog.groups if catalog.in_group(g.name)), key=lambda g: g.name)
    if not groups or budget <= 0:
        return ""
    counts = Counter(group.summary for group in groups if group.summary)
    placeholders = frozenset(summary for summary, count in counts.items() if count > 1)
    header, note = "Groups (tool count): summary\n", f"\n{REACH}."
    for chars in SUMMARY_TIERS:
        lines = _within(budget - len(header) - len(note),
                        (group_line(catalog, group, placeholders, chars) for group in groups))
        if len(lines) == len(groups):
            return header + "\n".join(lines) + note
    sizes = {g.name: len(catalog.in_group(g.name)) for g in groups}
    largest = sorted(groups, key=lambda g: (-sizes[g.name], g.name))
    header = "Groups (tool count): "
    longest_more = len(f"; {len(groups)} more groups: {REACH}.")
    named = _within(budget - len(header) - longest_more, (f"{_name(g.name)} ({sizes[g.name]})" for g in largest),
                    sep=2)
    shown = sorted(named)
    rest = len(groups) - len(shown)
    if not shown:
        return _cut(f"{len(groups)} groups; {REACH}.", budget)
    more = f"; {rest} more groups: {REACH}." if rest else f". {REACH}."
    return header + ", ".join(shown) + more


def _cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: whole if it fits, else cut at a word and ended with an ellipsis, else
    nothing (a piece of a word says nothing)."""
    if len(text) <= limit:
        return text
    end = text.rfind(" ", 0, limit)  # the words before it and the ellipsis take at most `limit`
    return text[:end].rstrip(",;:") + "…" if end > 0 else ""


def _within(budget: int, lines: Iterable[str], sep: int = 1) -> list[str]:
    """The first `lines` whose total length (with a separator of `sep` characters between them) stays within
    `budget`."""
    kept: list[str] = []
    for line in lines:
        budget -= len(line) + sep
        if budget < -sep:
            break
        kept.append(line)
    return kept
