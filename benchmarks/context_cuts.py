"""What `benchmarks.context` measures besides the settings' forms: cuts of what a session is served that no setting
makes, each a rewriting of the default form's tools/list JSON and result text, for what it would save. A cut
changes neither what a search enables nor the order of what its result names, so R@5 as served and the recall of
the enabled tools are the default's. What each would lose is said beside `CUTS` and in docs/benchmarks.md."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lazytools.modes import Surface
from lazytools.search.results import Results
from lazytools.server.metatools import META_TOOL_NAMES, SEARCH_TOOLS
from lazytools.server.signatures import signature, signature_of

__all__ = ["CUTS", "Cut"]

Listed = Callable[[dict[str, Any]], dict[str, Any] | None]
"""One tool's tools/list JSON, rewritten (None: not listed)."""
Text = Callable[[str, Results, Surface], str]


def _same(tool: dict[str, Any]) -> dict[str, Any] | None:
    return tool


def _same_text(text: str, results: Results, surface: Surface) -> str:
    return text


@dataclass(frozen=True, slots=True)
class Cut:
    """A rewriting of each tool a session lists and of the result text it reads."""

    listed: Listed = _same
    text: Text = _same_text
    base: Mapping[str, Any] = field(default_factory=dict)
    """The settings of the form whose served lists and texts are cut (the defaults unless given)."""


def _all(*cuts: Cut, base: Mapping[str, Any] | None = None) -> Cut:
    def listed(tool: dict[str, Any]) -> dict[str, Any] | None:
        for cut in cuts:
            if (rewritten := cut.listed(tool)) is None:
                return None
            tool = rewritten
        return tool

    def text(text: str, results: Results, surface: Surface) -> str:
        for cut in cuts:
            text = cut.text(text, results, surface)
        return text

    return Cut(listed, text, dict(base or {}))


# -- (a) the dynamic result ------------------------------------------------------------------------------------------

def _lines(rewrite: Callable[[str, Any], str | None]) -> Text:
    """A text cut of the dynamic result's line per enabled tool (`- signature [group]`): rewritten, or dropped."""
    def text(text: str, results: Results, surface: Surface) -> str:
        if surface != "dynamic":
            return text
        heads = {f"- {signature_of(entry)} [": entry for entry in results.enabled}
        kept = []
        for line in text.split("\n"):
            entry = next((e for head, e in heads.items() if line.startswith(head)), None)
            rewritten = line if entry is None else rewrite(line, entry)
            if rewritten is not None:
                kept.append(rewritten)
        return "\n".join(kept)
    return text


def _required_only(line: str, entry: Any) -> str:
    required = set(entry.input_schema.get("required") or ())
    properties = entry.input_schema.get("properties") or {}
    shown = {key: value for key, value in properties.items() if key in required}
    narrowed = signature(replace(entry, input_schema={**entry.input_schema, "properties": shown}))
    if len(shown) < len(properties):
        narrowed = f"{narrowed[:-1]}{', ' if shown else ''}+{len(properties) - len(shown)} optional)"
    return line.replace(signature_of(entry), narrowed, 1)


_BRIDGED_HEAD = re.compile(r"^Enabled: (.*)\. (Now in your tool list; until it refreshes, call them with "
                           r"invoke_tool\(tool_name, arguments\))\.$")


def _head_unrepeated(text: str, results: Results, surface: Surface) -> str:
    """The head without the names its lines repeat: `Enabled (now in your tool list; ...):`."""
    head, _, rest = text.partition("\n")
    found = _BRIDGED_HEAD.match(head) if surface == "dynamic" and rest.startswith("- ") else None
    return text if found is None else f"Enabled ({found[2][0].lower()}{found[2][1:]}):\n{rest}"


# -- (b) the enabled tools' definitions -------------------------------------------------------------------------------

def _schema_dropped(which: Callable[[Any], bool]) -> Listed:
    def listed(tool: dict[str, Any]) -> dict[str, Any]:
        schema = tool.get("inputSchema", {})
        if "$schema" in schema and which(schema["$schema"]):
            return {**tool, "inputSchema": {k: v for k, v in schema.items() if k != "$schema"}}
        return tool
    return listed


def _is_2020_12(dialect: Any) -> bool:
    return isinstance(dialect, str) and dialect.rstrip("#") == "https://json-schema.org/draft/2020-12/schema"


def _descriptions(rewrite: Callable[[str], str]) -> Listed:
    """Every description of a tool (its own and its schema's), rewritten."""
    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, Mapping):
            return node
        return {k: rewrite(v) if k == "description" and isinstance(v, str) else walk(v) for k, v in node.items()}

    def listed(tool: dict[str, Any]) -> dict[str, Any]:
        rewritten = {**tool, "inputSchema": walk(tool.get("inputSchema", {}))}
        if isinstance(tool.get("description"), str):
            rewritten["description"] = rewrite(tool["description"])
        return rewritten
    return listed


def _layout_kept(text: str) -> str:
    """Whitespace that carries no layout: a line's trailing spaces, runs of spaces inside a line, the indentation
    every line shares, blank-line runs past one."""
    text = re.sub(r"[ \t]+\n", "\n", inspect.cleandoc(text))
    return re.sub(r"\n{3,}", "\n\n", re.sub(r"(?<=\S)[ \t]{2,}(?=\S)", " ", text))


# -- (c) the meta-tools -----------------------------------------------------------------------------------------------

def _meta(rewrite: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Listed:
    return lambda tool: rewrite(tool) if tool.get("name") in META_TOOL_NAMES else tool


_HINT_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}


def _hints_at_defaults(tool: dict[str, Any]) -> dict[str, Any]:
    """Hints the spec's defaults say anyway, and destructive/idempotent beside readOnlyHint true (the spec: meaningful
    only when readOnlyHint is false)."""
    hints = tool.get("annotations") or {}
    kept = {k: v for k, v in hints.items() if _HINT_DEFAULTS.get(k) != v
            and not (hints.get("readOnlyHint") is True and k in ("destructiveHint", "idempotentHint"))}
    rest = {k: v for k, v in tool.items() if k != "annotations"}
    return {**rest, "annotations": kept} if kept else rest


def _unsized(tool: dict[str, Any]) -> dict[str, Any]:
    if tool.get("name") != SEARCH_TOOLS:
        return tool
    description = re.sub(r" \(\d+\)", "", tool["description"]).replace("Groups (tool count): ", "Groups: ")
    return {**tool, "description": description}


def _untitled(tool: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in tool.items() if k != "title"}


_NAMES_ALONE = Cut(text=_lines(lambda line, entry: None))
_SPEC_ALLOWS = _all(Cut(text=_head_unrepeated), Cut(_descriptions(_layout_kept)), Cut(_schema_dropped(_is_2020_12)),
                    Cut(_meta(_hints_at_defaults)))

CUTS: dict[str, Cut] = {
    "(a) names alone in the dynamic result": _NAMES_ALONE,
    "(a) signatures of the required parameters alone": Cut(text=_lines(_required_only)),
    "(a) the head not naming what its lines name": Cut(text=_head_unrepeated),
    "(b) `$schema` left out where it names 2020-12": Cut(_schema_dropped(_is_2020_12)),
    "(b) every `$schema` left out": Cut(_schema_dropped(lambda dialect: True)),
    "(b) whitespace that carries no layout": Cut(_descriptions(_layout_kept)),
    "(b) every run of whitespace one space": Cut(_descriptions(lambda text: " ".join(text.split()))),
    "(c) hints at the spec's defaults left out": Cut(_meta(_hints_at_defaults)),
    "(c) the manifest without group sizes": Cut(_meta(_unsized)),
    "(c) the meta-tools without titles": Cut(_meta(_untitled)),
    "the four the spec allows (head, whitespace, 2020-12, hints)": _SPEC_ALLOWS,
    "every cut, with no bridge (dynamic_bridge false: names alone, no invoke_tool)": _all(
        _SPEC_ALLOWS, Cut(_schema_dropped(lambda dialect: True)), Cut(_descriptions(lambda text: " ".join(text.split()))),
        Cut(_meta(_unsized)), Cut(_meta(_untitled)), base={"dynamic_bridge": False}),
}
"""Each cut, applied to what the default form served (the last, to the form without the bridge). Names alone and
required parameters alone leave a call through the bridge, before the client re-lists, to guess (its error shows the
schema); every `$schema` left out reads a draft-07 schema as 2020-12; whitespace as one space loses the lines of a
description; the manifest without sizes and the meta-tools without titles lose what they say. "The spec allows"
means a client that follows the spec reads the same: the 2020-12 `$schema` is the dialect a schema without one has
from protocol 2025-11-25 on (not before), and the hints left out are what the spec's defaults say; a client that acts
only on a hint it is given (a warning on `destructiveHint: true`) would read less."""
