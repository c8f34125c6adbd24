"""Tools a server lists twice: the same tool under two names.

Some servers register each tool under two names (wikipedia-mcp lists `get_summary` and `wikipedia_get_summary`,
the same description, the same parameters). Both score the same for every query, so a long task's five results
spent two places on one need. A copy has the same description (spacing and case aside), the same parameter
names, and a name that holds the other's (a prefix or suffix added). Tools that share a vague description under
unrelated names may still be different tools, and tools that do the same thing on two servers (two `read_file`s)
have their own descriptions: both stay distinct, which one to use is the model's choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..entry import ToolEntry

__all__ = ["MAX_COMPARED", "first_copies"]

MAX_COMPARED = 8
"""A tool's name is compared with at most this many earlier tools of the same text: a hostile catalog of
thousands of tools with one description must not cost a comparison per pair."""


def first_copies(entries: Sequence[ToolEntry]) -> list[int]:
    """For each tool, the position of the first tool of its own group it is a copy of (its own position if none).
    A tool without a description is nobody's copy: an empty text says nothing about what the tool does. Tools of
    two groups are never copies, however alike: the same server configured twice (two filesystem roots) offers two
    tools, and a hostile server copying another's text and parameters must not hide the original."""
    same_text: dict[tuple[str, str, tuple[str, ...]], list[int]] = {}
    result: list[int] = []
    for position, entry in enumerate(entries):
        result.append(position)
        text = " ".join(entry.description.split()).casefold()
        if not text:
            continue
        properties = entry.input_schema.get("properties")
        parameters = tuple(sorted(str(name) for name in properties)) if isinstance(properties, Mapping) else ()
        earlier = same_text.setdefault((entry.group, text, parameters), [])
        name = _plain(entry.source_name or entry.name)
        for other in earlier[:MAX_COMPARED]:
            other_name = _plain(entries[other].source_name or entries[other].name)
            if other_name in name or name in other_name:
                result[position] = other
                break
        else:
            earlier.append(position)
    return result


def _plain(name: str) -> str:
    return "".join(character for character in name.casefold() if character.isalnum())
