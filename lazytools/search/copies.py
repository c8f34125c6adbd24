"""Tools a server lists twice: the same tool under two names.

Some servers register each tool under two names (wikipedia-mcp lists `get_summary` and `wikipedia_get_summary`,
the same description, the same parameters). Both score the same for every query, so a long task's five results
spent two places on one need. A copy has the same description (spacing and case aside), the same parameter
names, and a name that is the other's with whole words added before or after it. Tools that share a vague
description under unrelated names may still be different tools, and tools that do the same thing on two servers
(two `read_file`s) have their own descriptions: both stay distinct, which one to use is the model's choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..entry import ToolEntry
from .analysis import split_words

__all__ = ["MAX_COMPARED", "first_copies"]

MAX_COMPARED = 8
"""A tool's name is compared with at most this many earlier tools of the same text: a hostile catalog of
thousands of tools with one description must not cost a comparison per pair."""


def first_copies(entries: Sequence[ToolEntry], names: Sequence[Sequence[str]] | None = None,
                 normalised: dict[str, str] | None = None) -> list[int]:
    """For each tool, the position of the first tool of its own group it is a copy of (its own position if none).
    A tool without a description is nobody's copy: an empty text says nothing about what the tool does. Tools of
    two groups are never copies, however alike: the same server configured twice (two filesystem roots) offers two
    tools, and a hostile server copying another's text and parameters must not hide the original. `names`: each
    tool's name words (`split_words` of its upstream name), which the index has split already; `normalised`: the
    descriptions this build has normalised, when its servers' tools are read server by server."""
    words = ([tuple(held) for held in names] if names is not None
             else [_words(entry.upstream_name or entry.name) for entry in entries])
    normalised = {} if normalised is None else normalised  # a description the catalog repeats is normalised once
    same_text: dict[tuple[str, str, tuple[str, ...]], list[int]] = {}
    result: list[int] = []
    for position, entry in enumerate(entries):
        result.append(position)
        text = normalised.get(entry.description)
        if text is None:
            text = normalised[entry.description] = " ".join(entry.description.split()).casefold()
        if not text:
            continue
        properties = entry.input_schema.get("properties")
        parameters = tuple(sorted(str(name) for name in properties)) if isinstance(properties, Mapping) else ()
        earlier = same_text.setdefault((entry.group, text, parameters), [])
        name = words[position]
        for other in earlier[:MAX_COMPARED]:
            if _affixed(name, words[other]):
                result[position] = other
                break
        else:
            earlier.append(position)
    return result


def _words(name: str) -> tuple[str, ...]:
    return tuple(split_words(name))


def _affixed(one: tuple[str, ...], other: tuple[str, ...]) -> bool:
    """Whether one name is the other with words added before or after it ("wikipedia_get_summary", "get_summary"):
    whole words, so that `report_1` is no copy of `report_10`."""
    short, long = sorted((one, other), key=len)
    return bool(short) and (long[: len(short)] == short or long[len(long) - len(short):] == short)
