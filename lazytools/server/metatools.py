"""The meta-tools, search_tools and invoke_tool: plain functions over catalog, index and session state."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import mcp_types as types

from ..catalog import Catalog
from ..entry import ToolEntry
from ..errors import ToolArgumentsError, UnknownToolError
from ..manifest import manifest
from ..modes import Surface
from ..safetext import clip
from ..search import SearchIndex
from ..search.needs import Need, unanswered
from ..validation import Limits, compact_json, schema_text, validate_arguments

__all__ = [
    "INVOKE_TOOL",
    "MAX_QUERY_CHARS",
    "META_TOOL_NAMES",
    "RELEVANCE_FLOOR",
    "SEARCH_TOOLS",
    "SIGNATURE_CHARS",
    "SearchOutcome",
    "check_group",
    "invoke_tool_definition",
    "not_matched_line",
    "resolve_invocation",
    "search_schema",
    "search_tools",
    "search_tools_definition",
    "signature",
]

MAX_QUERY_CHARS = 8000
MAX_TOOL_NAMES = 50
"""Long task descriptions fit; a megabyte of text does not reach the analyser."""

SEARCH_TOOLS = "search_tools"
INVOKE_TOOL = "invoke_tool"
META_TOOL_NAMES = frozenset({SEARCH_TOOLS, INVOKE_TOOL})

_READ_ONLY = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def search_schema(max_limit: int, default_limit: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "query": {"type": "string", "maxLength": MAX_QUERY_CHARS,
                      "description": "The capability you need, in plain words."},
            "group": {"type": "string", "description": "Only tools of this group."},
            "tool_names": {"type": "array", "items": {"type": "string", "maxLength": 256}, "maxItems": MAX_TOOL_NAMES,
                           "description": "Exact tool names."},
            "limit": {"type": "integer", "minimum": 1, "maximum": max_limit, "default": default_limit},
        },
        "additionalProperties": False,
    }


def search_tools_definition(catalog: Catalog, max_limit: int, default_limit: int, surface: Surface) -> types.Tool:
    how = (
        "Matches are added to your tool list; call them directly."
        if surface == "dynamic"
        else "Call matches with invoke_tool; results include their input schemas."
    )
    description = (
        f"Find tools by what they do. {len(catalog)} tools are available but hidden until found. {how}\n"
        "Give a query (plain words), a group, or exact tool_names (cheapest when you know them).\n"
        "Groups (tool count): summary\n" + manifest(catalog)
    )
    return types.Tool(
        name=SEARCH_TOOLS,
        title="Search tools",
        description=description,
        input_schema=search_schema(max_limit, default_limit),
        annotations=_READ_ONLY,
    )


@cache  # one object: every invoke_tool call validates against its schema (building it was 6% of a call's CPU)
def invoke_tool_definition() -> types.Tool:
    return types.Tool(
        name=INVOKE_TOOL,
        title="Invoke a tool",
        description="Call a tool found by search_tools: its name and its arguments as an object.",
        input_schema={
            "type": "object",
            "properties": {
                "tool_name": {"type": "string", "description": "Exact name from search_tools."},
                "arguments": {"type": "object", "description": "Arguments matching the tool's input schema."},
            },
            "required": ["tool_name"],
            "additionalProperties": False,
        },
        # The invoked tool may do anything, so the bridge claims nothing about side effects.
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
    )


RELEVANCE_FLOOR = 0.4
"""A match is enabled only if its score is at least this share of the best match's; the others are listed as
suggestions, so what search_tools returns (and R@5 as served) is unchanged. Measured at limit 5 (docs/search.md):
enabled tools per search 5.0 -> 4.4 on MetaTool and 4.8 -> 4.2 on the multi-server dev set, R@5 of the enabled
tools alone level on the dev set (.792 / .848) and -.006 / -.007 on MetaTool; .5 costs .03 on the dev set."""


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    text: str
    found: list[ToolEntry]
    """The matches to enable (dynamic surface): named ones, and those that clear the relevance floor."""
    suggested: list[ToolEntry] = field(default_factory=list)
    """Listed in the result but not enabled: weaker matches, and the tools that produce an id a match requires."""
    needs: tuple[Need, ...] = ()
    """The query's clauses (a request of several needs), each with how well the matches answer it."""
    unmatched: list[str] = field(default_factory=list)
    """The clauses no match answers: the result asks the model to search for each on its own."""

    @property
    def returned(self) -> list[ToolEntry]:
        """Every tool the result names, in its order: what `lazytools eval` scores."""
        return [*self.found, *self.suggested]


def search_tools(
    catalog: Catalog,
    index: SearchIndex,
    arguments: Mapping[str, Any],
    *,
    surface: Surface,
    default_limit: int,
    max_limit: int,
    bridge: bool,
    floor: float = RELEVANCE_FLOOR,
    enable_at_most: int | None = None,
    pinned: Collection[str] = (),
    limits: Limits | None = None,
) -> SearchOutcome:
    """Run a search; the caller enables `found` in the session (dynamic surface) and sends the notification.
    `limits` bound the check of its arguments (the server passes the configured ones).
    On the dynamic surface, at most `enable_at_most` matches (pinned tools not counted: they are always listed) are
    `found`; the matches past it are suggested, so the result never says more tools were enabled than were."""
    names_given = arguments.get("tool_names") if isinstance(arguments, Mapping) else None  # else: the schema says
    if isinstance(names_given, list) and len(names_given) > MAX_TOOL_NAMES:
        # Refused before the schema walks every item (300k names held a worker for seconds).
        raise ToolArgumentsError(f"tool_names takes at most {MAX_TOOL_NAMES} names ({len(names_given)} given).")
    args = validate_arguments(SEARCH_TOOLS, search_schema(max_limit, default_limit), arguments, limits)
    query = str(args.get("query") or "").strip()
    group = args.get("group")
    names: list[str] = list(args.get("tool_names") or [])
    limit = min(int(args.get("limit", default_limit)), max_limit)
    if not query and group is None and not names:
        raise ToolArgumentsError("search_tools needs a query, a group or tool_names (at least one).")

    notes: list[str] = []
    if group is not None:
        check_group(catalog, group)

    found: list[ToolEntry] = []
    weaker: list[ToolEntry] = []
    needs: tuple[Need, ...] = ()
    unmatched: list[str] = []
    for name in names:
        try:
            found.append(catalog.get(name))
        except UnknownToolError as exc:
            notes.append(str(exc))
    if query:
        results = index.find(query, limit=limit, groups=[group] if group is not None else None)
        hits, needs = results.hits, results.needs
        unmatched = unanswered(needs) if hits else []
        best = hits[0].score if hits else 0.0
        for hit in hits:
            strong = best <= 0 or hit.score >= floor * best
            (found if strong else weaker).append(hit.entry)
    elif group is not None:
        members = catalog.in_group(group)
        found += members[:limit]
        if len(members) > limit:
            notes.append(f"Group {group!r} has {len(members)} tools; showing {limit}. Add a query to narrow it.")
    found = list({entry.name: entry for entry in found}.values())
    shown = {entry.name for entry in found}
    weaker = [entry for entry in {e.name: e for e in weaker}.values() if entry.name not in shown]
    suggested = weaker + [entry for entry in index.producers([*found, *weaker])]
    if surface == "dynamic" and enable_at_most is not None:
        found, over = _split_at_cap(found, enable_at_most, pinned)
        if over:
            tools = "tool is" if enable_at_most == 1 else "tools are"
            more = "match is" if len(over) == 1 else "matches are"
            notes.append(f"At most {enable_at_most} {tools} enabled at a time: {len(over)} more {more} listed below, "
                         "not enabled.")
        suggested = over + suggested
    text = _render(found, suggested, notes, query, surface, bridge)
    if unmatched:
        text += "\n" + not_matched_line(unmatched)
    return SearchOutcome(text, found, suggested, needs, unmatched)


def check_group(catalog: Catalog, group: str) -> None:
    """Refuse a group the catalog does not have, naming the close ones and all of them."""
    if group in {g.name for g in catalog.groups}:
        return
    close = [g.name for g in catalog.groups if group.lower() in g.name.lower() or g.name.lower() in group.lower()]
    hint = f" Did you mean: {clip(', '.join(close), _GROUPS_CHARS)}?" if close else ""
    groups = clip(", ".join(g.name for g in catalog.groups), _GROUPS_CHARS)
    raise ToolArgumentsError(f"Unknown group '{clip(group)}'.{hint} Groups: {groups}")


_GROUPS_CHARS = 2_000
"""Characters of group names an unknown group's error lists: every group of a real catalog (the manifest shows at
most 60), not a hostile catalog's thousands."""


def _split_at_cap(found: list[ToolEntry], cap: int, pinned: Collection[str]) -> tuple[list[ToolEntry], list[ToolEntry]]:
    """(the matches to enable: pinned ones and the first `cap` others, in order; the rest)."""
    kept: list[ToolEntry] = []
    over: list[ToolEntry] = []
    counted = 0
    for entry in found:
        if entry.name in pinned:
            kept.append(entry)
        elif counted < cap:
            kept.append(entry)
            counted += 1
        else:
            over.append(entry)
    return kept, over


CLAUSE_ECHO = 120
"""Characters of each unmatched clause quoted back: enough to search with, not a copy of a long request."""


def not_matched_line(clauses: Sequence[str]) -> str:
    """The line that names the clauses no result answers, for the model to search for one by one."""
    quoted = ", ".join(f'"{clip(clause.strip().rstrip(".,;:"), CLAUSE_ECHO)}"' for clause in clauses)
    return f"Not matched yet: {quoted}: search for each on its own."


def _render(
    found: Sequence[ToolEntry],
    suggested: Sequence[ToolEntry],
    notes: list[str],
    query: str,
    surface: Surface,
    bridge: bool,
) -> str:
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
        head = f"Enabled: {names}. They are in your tool list now (re-list if needed)."
        if bridge:
            head += " If your list has not refreshed yet, call them through invoke_tool(tool_name, arguments)."
    else:
        head = f"Found: {names}. Call them with invoke_tool(tool_name, arguments)."
    lines = [head, *notes]
    shown = 0
    for entry in found:
        lines.append(f"- {signature(entry)} [{clip(entry.group, _NAME_CHARS)}]: {entry.summary}")
        if surface == "proxy":
            schema = schema_text(entry.input_schema)
            if shown + len(schema) > RESULT_SCHEMA_CHARS:
                schema = (f"(not shown: this result already holds {shown:,} characters of schemas; "
                          f"search_tools(tool_names=[\"{entry.name}\"]) shows it)")
            shown += len(schema)
            lines.append(f"  input_schema: {schema}")
    if suggested:
        how = ("search_tools(tool_names=[...]) enables them" if surface == "dynamic"
               else "search_tools(tool_names=[...]) shows their input schemas")
        lines.append(f"Also possibly relevant, not enabled ({how}):")
        lines += [f"- {entry.name} [{clip(entry.group, _NAME_CHARS)}]: {entry.summary}" for entry in suggested]
    return "\n".join(lines)


RESULT_SCHEMA_CHARS = 64_000
"""Input schemas one proxy search result shows in all (each is also cut alone at SCHEMA_CHARS): twenty schemas just
under that cut would be 640 KB; real results of 5 hold a few KB."""
SIGNATURE_CHARS = 600
"""A signature is cut here: a few dozen parameters fit, a schema built to flood the result does not."""
_PARAMS_SHOWN = 40
_NAME_CHARS = 64
"""Characters of a parameter name shown (an upstream's names are not checked like tool names)."""
_OPTIONS_SHOWN = 12
"""Enum values (or anyOf/oneOf options) shown per parameter before "…": the bundled unit converters' 11 fit."""
_VALUE_CHARS = 40
_DEPTH = 4
"""Nested arrays and options deeper than this read "any"."""


def signature(entry: ToolEntry) -> str:
    """`name(a: string, b?: integer)`: a parameter summary a model can call from. Names and values come from the
    tool's source, so they are escaped and cut, and so is the whole line."""
    properties = entry.input_schema.get("properties") or {}
    listed = entry.input_schema.get("required")
    required = {name for name in listed if isinstance(name, str)} if isinstance(listed, list) else set()
    params = []
    if isinstance(properties, Mapping):
        for pname, spec in list(properties.items())[:_PARAMS_SHOWN]:
            mark = "" if pname in required else "?"
            params.append(f"{clip(pname, _NAME_CHARS)}{mark}: {_type_of(spec)}")
        if len(properties) > _PARAMS_SHOWN:
            params.append(f"… {len(properties) - _PARAMS_SHOWN} more")
    return clip(f"{entry.name}({', '.join(params)})", SIGNATURE_CHARS)


def _type_of(spec: Any, depth: int = 0) -> str:
    if not isinstance(spec, Mapping) or depth > _DEPTH:
        return "any"
    if "enum" in spec:
        values = spec["enum"] if isinstance(spec["enum"], list) else []
        return _options([clip(compact_json(v), _VALUE_CHARS) for v in values[:_OPTIONS_SHOWN]], len(values))
    if "const" in spec:
        return clip(compact_json(spec["const"]), _VALUE_CHARS)
    if "anyOf" in spec or "oneOf" in spec:
        options = spec.get("anyOf", spec.get("oneOf", []))
        options = options if isinstance(options, list) else []
        shown = [_type_of(s, depth + 1) for s in options[:_OPTIONS_SHOWN]]
        return _options(list(dict.fromkeys(shown)), len(options))
    kind = spec.get("type", "any")
    if isinstance(kind, list):
        return _options([clip(k, _VALUE_CHARS) for k in kind[:_OPTIONS_SHOWN]], len(kind))
    if kind == "array":
        return f"{_type_of(spec.get('items', {}), depth + 1)}[]"
    return clip(kind, _VALUE_CHARS)


def _options(shown: list[str], total: int) -> str:
    """`a|b|c`, and `|…` when there were more than those shown."""
    return "|".join(shown) + ("|…" if total > _OPTIONS_SHOWN else "")


_INVOKE_KEYS = frozenset({"tool_name", "arguments"})


def _invoke_arguments(arguments: Any, limits: Limits | None) -> Mapping[str, Any]:
    """invoke_tool's own arguments, checked by hand when they are well formed (a JSON Schema check of them cost as
    much as the rest of a trivial call); anything else gets the schema check and its full error."""
    if (type(arguments) is dict and type(arguments.get("tool_name")) is str and arguments.keys() <= _INVOKE_KEYS
            and type(arguments.get("arguments", {})) is dict):
        return arguments
    return validate_arguments(INVOKE_TOOL, invoke_tool_definition().input_schema, arguments, limits)


def resolve_invocation(catalog: Catalog, arguments: Mapping[str, Any],
                       limits: Limits | None = None) -> tuple[ToolEntry, Any]:
    """invoke_tool's target and the arguments for it, not yet checked against its schema (the caller checks them,
    off the event loop when they are large, then runs `entry.call`). `limits` bound the check of invoke_tool's own
    arguments."""
    args = _invoke_arguments(arguments, limits)
    name = args["tool_name"]
    if name in META_TOOL_NAMES:
        raise ToolArgumentsError(f"{name} is a meta-tool: call it directly, not through invoke_tool.")
    return catalog.get(name), args.get("arguments")
