"""The meta-tools, search_tools and invoke_tool: plain functions over catalog, index and session state."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from functools import cache
from typing import Any, cast

import mcp_types as types

from ..catalog import Catalog
from ..entry import ToolEntry
from ..errors import ToolArgumentsError, UnknownToolError
from ..manifest import MANIFEST_CHARS, manifest
from ..modes import Surface
from ..search import SearchIndex
from ..search.cousage import with_co_used
from ..search.fit import DEFAULT_FIT, FitConfig
from ..search.prior import Prior
from ..search.query import QUICK_CHARS
from ..search.results import Results
from ..search.selection import RELEVANCE_FLOOR, select
from ..validation import Limits, validate_arguments
from .rendering import search_text

__all__ = [
    "INVOKE_TOOL",
    "MAX_QUERY_CHARS",
    "META_TOOL_NAMES",
    "RELEVANCE_FLOOR",
    "SEARCH_TOOLS",
    "answers_at_once",
    "invoke_tool_definition",
    "quick_search",
    "resolve_invocation",
    "search_schema",
    "search_tools",
    "search_tools_definition",
]

MAX_QUERY_CHARS = 8000
MAX_TOOL_NAMES = 50
"""Long task descriptions fit; a megabyte of text does not reach the analyser."""
SUGGESTED_NAMES = 3
"""Unknown names of one `tool_names` that get the closest names; the rest are named unknown."""

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
            "query": {"type": "string", "maxLength": MAX_QUERY_CHARS, "description": "What you need, in plain words."},
            "group": {"type": "string", "description": "Only this group's tools."},
            "tool_names": {"type": "array", "items": {"type": "string", "maxLength": 256}, "maxItems": MAX_TOOL_NAMES,
                           "description": "Exact names: the cheapest search."},
            "limit": {"type": "integer", "minimum": 1, "maximum": max_limit, "default": default_limit},
        },
        "additionalProperties": False,
    }


ALWAYS_LOAD = {"anthropic/alwaysLoad": True}
"""Claude Code defers MCP tools behind its own tool search (only their names load); a tool with this `_meta` is
loaded whole. The meta-tools are how the model finds everything else: deferring them would hide the door."""


def search_tools_definition(catalog: Catalog, max_limit: int, default_limit: int, surface: Surface,
                            manifest_chars: int = MANIFEST_CHARS) -> types.Tool:
    """search_tools as listed: what it does, how matches are used on `surface`, and the groups within
    `manifest_chars` (`manifest.manifest`)."""
    how = "Matches join your tool list." if surface == "dynamic" else "Call matches with invoke_tool."
    groups = manifest(catalog, manifest_chars)
    description = f"Find tools by what they do: {len(catalog)} are hidden until found. {how}" + (
        f"\n{groups}" if groups else "")
    return types.Tool(
        name=SEARCH_TOOLS,
        title="Search tools",
        description=description,
        input_schema=search_schema(max_limit, default_limit),
        annotations=_READ_ONLY,
        _meta=ALWAYS_LOAD,
    )


@cache  # one object: every invoke_tool call validates against its schema, which is the same for all of them
def invoke_tool_definition() -> types.Tool:
    return types.Tool(
        name=INVOKE_TOOL,
        title="Invoke a tool",
        description="Call a tool found by search_tools.",
        input_schema={
            "type": "object",
            "properties": {
                "tool_name": {"type": "string", "description": "Its exact name."},
                "arguments": {"type": "object", "description": "Per its input schema."},
            },
            "required": ["tool_name"],
            "additionalProperties": False,
        },
        # The invoked tool may do anything, so the bridge claims nothing about side effects.
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
        _meta=ALWAYS_LOAD,
    )


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
    prior: Prior | None = None,
    visible: Callable[[str], bool] | None = None,
    limits: Limits | None = None,
    fit: FitConfig = DEFAULT_FIT,
) -> Results:
    """Check search_tools' arguments, let search select (`search.selection`), and render the results into their
    `text`; the caller enables `enabled` in the session (dynamic surface) and sends the notification. The cap `enable_at_most` applies
    on the dynamic surface only. `limits` bound the check of its arguments (the server passes the configured
    ones)."""
    names_given = arguments.get("tool_names") if isinstance(arguments, Mapping) else None  # else: the schema says
    if isinstance(names_given, list) and len(names_given) > MAX_TOOL_NAMES:
        # Refused before the schema walks every item (300k names held a worker for seconds).
        raise ToolArgumentsError(f"tool_names takes at most {MAX_TOOL_NAMES} names ({len(names_given)} given).")
    args = _search_arguments(arguments, max_limit, default_limit, limits)
    query = str(args.get("query") or "").strip()
    group = args.get("group")
    names: list[str] = list(args.get("tool_names") or [])
    limit = min(int(args.get("limit", default_limit)), max_limit)
    places = limit
    if query and "limit" not in args:  # the model's own limit is kept; else each further need gets a place
        places = index.places(query, limit, max_limit)
    if not query and group is None and not names:
        raise ToolArgumentsError("search_tools needs a query, a group or tool_names (at least one).")
    if group is not None:
        catalog.check_group(group)

    named: list[ToolEntry] = []
    unknown: list[str] = []
    for name in names:
        if name not in catalog and len(unknown) >= SUGGESTED_NAMES:
            # Each suggestion reads every name of the catalog: a few are worth it, fifty are not.
            unknown.append(str(UnknownToolError(name)))
            continue
        try:
            named.append(catalog.get(name))
        except UnknownToolError as exc:  # with the closest names
            unknown.append(str(exc))
    cap = enable_at_most if surface == "dynamic" else None
    selection = select(catalog, index, query=query, named=named, group=group, limit=places, floor=floor,
                       enable_at_most=cap, pinned=pinned, prior=prior, visible=visible,
                       enabled_places=limit if places > limit else None, fit=fit)
    # After the ranking, never in place of one of its tools: what past sessions used with the top match.
    selection = with_co_used(selection, prior, catalog, query=query, group=group, enable_at_most=cap, pinned=pinned,
                             visible=visible)
    selection = replace(selection, query=query, group=group, unknown=tuple(unknown))
    return replace(selection, text=search_text(selection, limit=limit, enable_at_most=cap, surface=surface,
                                               bridge=bridge, down=catalog.not_serving()))


_SEARCH_KEYS = frozenset({"query", "group", "tool_names", "limit"})


def quick_search(index: SearchIndex, arguments: Any) -> bool:
    """Whether search_tools with these arguments may run on the event loop: plainly well-formed arguments
    (`_plain_arguments`) and a query whose cost (`SearchIndex.cost`: its length, words, needs and language, the
    catalog's size, BM25 alone, the spelling table built) says it is quick. Anything else runs in a worker thread,
    where a slow search or the schema check of hostile arguments stalls no other session."""
    if not _plain_arguments(arguments):
        return False
    query = arguments.get("query", "")
    return len(query) <= QUICK_CHARS and index.cost(query).quick


def _plain_arguments(arguments: Any) -> bool:
    """Whether search_tools' arguments are well formed by a check by hand, the limit's range aside (far cheaper than
    the JSON Schema check, which every search would otherwise pay)."""
    if type(arguments) is not dict or not arguments.keys() <= _SEARCH_KEYS:
        return False
    query, group, names = arguments.get("query", ""), arguments.get("group", ""), arguments.get("tool_names", [])
    return (type(query) is str and len(query) <= MAX_QUERY_CHARS and type(group) is str
            and type(arguments.get("limit", 1)) is int
            and type(names) is list and len(names) <= MAX_TOOL_NAMES
            and all(type(name) is str and len(name) <= 256 for name in names))


def _search_arguments(arguments: Any, max_limit: int, default_limit: int,
                      limits: Limits | None) -> Mapping[str, Any]:
    """search_tools' arguments: as given when plainly well formed; anything else gets the schema check and its
    full error."""
    if _plain_arguments(arguments) and 1 <= arguments.get("limit", default_limit) <= max_limit:
        return cast(Mapping[str, Any], arguments)
    return validate_arguments(SEARCH_TOOLS, search_schema(max_limit, default_limit), arguments, limits)


_INVOKE_KEYS = frozenset({"tool_name", "arguments"})


def _invoke_arguments(arguments: Any, limits: Limits | None) -> Mapping[str, Any]:
    """invoke_tool's own arguments, checked by hand when they are well formed (a JSON Schema check of them cost as
    much as the rest of a trivial call); anything else gets the schema check and its full error."""
    if (type(arguments) is dict and type(arguments.get("tool_name")) is str and arguments.keys() <= _INVOKE_KEYS
            and type(arguments.get("arguments", {})) is dict):
        return arguments
    # Malformed, so refused: the error is about their shape, which their values' insides do not change. The check
    # runs on the event loop, and walking 2 million zeros in an array held it for seconds.
    hollow = {key: _hollow(value) for key, value in arguments.items()} if type(arguments) is dict \
        else _hollow(arguments)
    validate_arguments(INVOKE_TOOL, invoke_tool_definition().input_schema, hollow, limits)
    return validate_arguments(INVOKE_TOOL, invoke_tool_definition().input_schema, arguments, limits)


def _hollow(value: Any) -> Any:
    """`value` with an array or object emptied (of the same kind): its shape at the top, none of its contents."""
    return [] if isinstance(value, list) else {} if isinstance(value, dict) else value


def resolve_invocation(catalog: Catalog, arguments: Mapping[str, Any], limits: Limits | None = None, *,
                       suggesting: bool = True) -> tuple[ToolEntry, Any]:
    """invoke_tool's target and the arguments for it, not yet checked against its schema (the caller checks them,
    off the event loop when they are large, then runs `entry.call`). `limits` bound the check of invoke_tool's own
    arguments; an unknown target's closest names are left to the caller unless `suggesting` (`Catalog.get`)."""
    args = _invoke_arguments(arguments, limits)
    name = args["tool_name"]
    if name in META_TOOL_NAMES:
        raise ToolArgumentsError(f"{name} is a meta-tool: call it directly, not through invoke_tool.")
    return catalog.get(name, suggesting=suggesting), args.get("arguments")


def answers_at_once(catalog: Catalog, params: Mapping[str, Any],
                    index: Callable[[], SearchIndex | None] | None = None) -> bool:
    """Whether a tools/call with `params` runs a tool that returns at once and sends nothing meanwhile (an
    in-process function marked quick, called by name or through invoke_tool; with the `index` that needs no
    waiting for, a quick search, `quick_search`): its answer needs no stream."""
    name = params.get("name")
    if name == SEARCH_TOOLS:
        searched = index() if index is not None else None
        return searched is not None and quick_search(searched, params.get("arguments", {}))
    if name == INVOKE_TOOL:
        arguments = params.get("arguments")
        name = arguments.get("tool_name") if isinstance(arguments, Mapping) else None
    return isinstance(name, str) and name in catalog and catalog.get(name).at_once
