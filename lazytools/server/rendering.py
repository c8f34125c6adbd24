"""search_tools' result text, and the character budgets that keep it bounded: what was enabled or found with each
tool's signature or schema (`signatures`), summaries, suggestions and the clauses no match answers. Every name and
value comes from a tool's author or the client, so each is escaped and cut here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..catalog import GROUPS_CHARS
from ..entry import ToolEntry
from ..modes import Surface
from ..safetext import clip
from ..search import ENGLISH, Hit, Results, language_name, language_of
from .signatures import NAME_CHARS, schema_of, signature, signature_of

__all__ = [
    "CLAUSE_ECHO",
    "DOWN_NAMED",
    "DOWN_WHY_CHARS",
    "RESULT_SCHEMA_CHARS",
    "down_found_line",
    "down_line",
    "down_note",
    "language_line",
    "left_line",
    "not_matched_line",
    "nothing_fits_line",
    "other_language",
    "ranking_text",
    "search_text",
]

CLAUSE_ECHO = 120
"""Characters of each unmatched clause quoted back: enough to search with, not a copy of a long request."""
DOWN_NAMED = 10
"""Servers not serving that one result names (a search of one group names only it): more would crowd the answer."""
DOWN_WHY_CHARS = 300
"""Characters of why a source is not serving, in a result: enough for the error's first lines (a missing command,
a refused connection), not a process's whole stderr."""


def not_matched_line(clauses: Sequence[str]) -> str:
    """The line that names the clauses no result answers, for the model to search for one by one."""
    quoted = ", ".join(f'"{clip(clause.strip().rstrip(".,;:"), CLAUSE_ECHO)}"' for clause in clauses)
    return f"Not matched yet: {quoted}: search for each on its own."


def search_text(
    results: Results,
    *,
    limit: int,
    enable_at_most: int | None = None,
    surface: Surface,
    bridge: bool,
    down: Mapping[str, tuple[str, str]] | None = None,
) -> str:
    """search_tools' result: what was enabled (or found), each with its signature and summary, notes (the errors
    of names not found; a group cut at `limit`; matches past the cap; when nothing was found, the groups whose
    source is not serving now, from `down`: `Catalog.not_serving`), the suggestions, and the clauses no match answers;
    proxy results add the input schemas, bounded in all."""
    query, notes = results.query, list(results.unknown)
    if results.group is not None:  # a search of one group: only that group's own state
        down = {results.group: down[results.group]} if down and results.group in down else None
    if down and (results.nothing_fits is not None or not (results.enabled or results.suggested)):
        notes.append(down_line(down))
    elif down:
        # A server that served and then went down keeps its tools listed: the model must not be left to find out
        # by calling one.
        shown = {tool.group for tool in results.returned}
        if found_down := {group: why for group, why in down.items() if group in shown}:
            notes.append(down_found_line(found_down))
    language = other_language(results)
    if language is not None and results.nothing_fits is None:
        notes.append(language_line(language))
    if results.group_size is not None:
        notes.append(f"Group {results.group!r} has {results.group_size} tools; showing {limit}. Add a query to narrow it.")
    if results.over_cap and enable_at_most is not None:
        tools = "tool is" if enable_at_most == 1 else "tools are"
        more = "match is" if len(results.over_cap) == 1 else "matches are"
        notes.append(f"At most {enable_at_most} {tools} enabled at a time: {len(results.over_cap)} more {more} "
                     "listed below, not enabled.")
    if results.nothing_fits is not None:
        # "Nothing here matched" only where nothing did: the fit rule judging one (english_only off) is told as such.
        notes.insert(0, nothing_fits_line(query, results.nothing_fits, enabled=bool(results.enabled),
                                          language=None if results.hits else language))
        if not results.enabled:
            return "\n".join(notes)
    text = _matches_text(results.enabled, results.suggested, notes, query, surface, bridge, results.learned)
    if results.unmatched:
        text += "\n" + not_matched_line(results.unmatched)
    return text


def other_language(results: Results, query: str | None = None) -> str | None:
    """The language of the request (`query`, else `results.query`) when it is not English and the best match, if
    any, is described in another language than it (`language.language_of`): search then matched an English
    catalog's words with few of the request's."""
    query = results.query if query is None else query
    if results.evidence is not None:  # read with the request's analysis
        language = results.evidence.language
    else:  # nothing matched: no evidence, and one reading of the text
        language = language_of(query) if query else ENGLISH
    if language == ENGLISH or (results.hits and language_of(results.hits[0].entry.description) == language):
        return None
    return language


def language_line(language: str) -> str:
    """One line for a request in another language than the catalog's: search reads English words best."""
    return (f"This request {_read_as(language)}, and search reads English best: the matches may miss. Searching "
            "again in English finds more.")


def _read_as(language: str) -> str:
    """What a request in `language` reads as: "reads as German", or "is not in English" (another script)."""
    name = language_name(language)
    return f"reads as {name}" if name is not None else "is not in English"


def down_line(down: Mapping[str, tuple[str, str]]) -> str:
    """One line naming the groups whose source is not serving now and why: the tool asked for may be one of theirs."""
    return (f"Not serving now: {_down_named(down)}. Their tools join once they start (lazytools keeps retrying them; "
            "search_tools(group=NAME) says why one is down).")


def down_found_line(down: Mapping[str, tuple[str, str]]) -> str:
    """One line naming the groups, among those of the tools a result shows, whose source is not serving now."""
    return (f"Not serving now: {_down_named(down)}. "
            f"{'Its' if len(down) == 1 else 'Their'} tools below fail until {'it is' if len(down) == 1 else 'they are'} "
            "back (lazytools keeps retrying); prefer another tool that does the job.")


def _down_named(down: Mapping[str, tuple[str, str]]) -> str:
    """The first DOWN_NAMED groups of `down`, each with why it is down, and how many more."""
    items = list(down.items())
    named = "; ".join(f"{clip(group, NAME_CHARS)} ({clip(why, DOWN_WHY_CHARS)})" for group, (why, _) in
                      items[:DOWN_NAMED])
    return named + (f"; and {len(items) - DOWN_NAMED} more" if len(items) > DOWN_NAMED else "")


def down_note(down: Mapping[str, tuple[str, str]], name: str) -> str:
    """For an unknown tool name that starts as the tools of a server not serving now do (`Catalog.not_serving`):
    which server, and why; else nothing."""
    for group, (why, names) in down.items():
        if names and name.startswith(names):
            return (f" Its server, {clip(group)}, is not serving now ({clip(why, DOWN_WHY_CHARS)}); lazytools keeps "
                    "retrying it, and search_tools finds its tools once it is up.")
    return ""


def left_line(gone: Sequence[str], at_most: int) -> str:
    """The tools that left a session's list to make room for a search's: the least recently used past `at_most`."""
    return (f"Left your tool list to keep at most {at_most} enabled (the least recently used): "
            f"{clip(', '.join(gone), GROUPS_CHARS)}; search_tools(tool_names=[...]) brings one back.")


def nothing_fits_line(query: str, groups: Sequence[str], *, enabled: bool = False,
                      language: str | None = None) -> str:
    """One line: no tool here does what the query asks (so nothing was enabled for it), and which groups exist; for
    a request in another `language` than English (nothing it says matched), that search reads English."""
    what = "no tool was enabled for it" if not enabled else "only the tools named were enabled"
    if language is not None:
        first = (f"Nothing here matched '{clip(query)}' (it {_read_as(language)}, and search reads English); {what}. "
                 "Search again in English")
    else:
        first = f"No tool here fits '{clip(query)}'; {what}"
    if not groups:  # a principal allowed no group: nothing here at all
        return f"{first}. There are no tools here to search."
    return f"{first}. The tools here are in: {clip(', '.join(groups), GROUPS_CHARS)}."


def _matches_text(
    found: Sequence[ToolEntry],
    suggested: Sequence[ToolEntry],
    notes: list[str],
    query: str,
    surface: Surface,
    bridge: bool,
    learned: Mapping[str, str] | None = None,
) -> str:
    why = {name: f" ({note}, from past sessions)" for name, note in (learned or {}).items()}
    if not found and not suggested:
        # the query is the client's own text, up to MAX_QUERY_CHARS: echo enough to recognise it, not all of it
        lines = [f"No tools match '{clip(query)}'." if query else "No tools found."]
        lines += notes
        lines.append("Try other words (what the tool does), or a group from the search_tools description.")
        return "\n".join(lines)
    names = ", ".join(entry.name for entry in found)
    if not found:
        head = "No strong match."
    elif surface == "dynamic":
        head = f"Enabled: {names}. Now in your tool list"
        head += "; until it refreshes, call them with invoke_tool(tool_name, arguments)." if bridge else "."
    else:
        head = f"Found: {names}. Call them with invoke_tool(tool_name, arguments)."
    lines = [head, *notes]
    shown = 0
    for entry in found:
        group = clip(entry.group, NAME_CHARS)
        if surface == "dynamic":
            # Its description and schema are in the tool list: the line is what a call through the bridge needs
            # before the client re-lists, and nothing when there is no bridge.
            if bridge:
                lines.append(f"- {signature_of(entry)} [{group}]{why.get(entry.name, '')}")
            elif entry.name in why:
                lines.append(f"- {entry.name} [{group}]{why[entry.name]}")
            continue
        schema = schema_of(entry)
        if shown + len(schema) > RESULT_SCHEMA_CHARS:
            schema = (f"(not shown: this result already holds {shown:,} characters of schemas; "
                      f"search_tools(tool_names=[\"{entry.name}\"]) shows it)")
        shown += len(schema)
        # The schema says what the signature would; a schema not shown leaves the signature to say it.
        called = entry.name if schema.startswith("{") else signature_of(entry)
        lines.append(f"- {called} [{group}]: {entry.summary}{why.get(entry.name, '')}")
        lines.append(f"  input_schema: {schema}")
    if suggested:
        how = ("search_tools(tool_names=[...]) enables them" if surface == "dynamic"
               else "search_tools(tool_names=[...]) shows their input schemas")
        lines.append(f"Also possibly relevant, not enabled ({how}):")
        lines += [f"- {entry.name} [{clip(entry.group, NAME_CHARS)}]: {entry.summary}{why.get(entry.name, '')}"
                  for entry in suggested]
    return "\n".join(lines)


RESULT_SCHEMA_CHARS = 64_000
"""Input schemas one proxy search result shows in all (each is also cut alone at SCHEMA_CHARS): twenty schemas just
under that cut would be 640 KB; real results of 5 hold a few KB."""
def ranking_text(hits: Sequence[Hit]) -> str:
    """`lazytools search`'s lines: rank, score, signature and group, and the summary under them."""
    width = len(str(len(hits)))
    lines = []
    for rank, hit in enumerate(hits, 1):
        lines.append(f"{rank:>{width}}. {hit.score:6.2f}  {signature(hit.entry)} [{hit.entry.group}]")
        lines.append(f"{'':>{width}}  {'':6}  {hit.entry.summary}")
    return "\n".join(lines)
