"""What the catalog holds: one `ToolEntry` per tool, whatever its source."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import mcp_types as types

from .safetext import escape
from .schematitles import without_restated_titles
from .toolnames import MAX_NAME_LENGTH

__all__ = [
    "DESCRIPTION_CHARS", "EXTRA_CHARS", "LEAN_DESCRIPTION_CHARS", "MAX_NAME_LENGTH", "SCHEMA_CHARS", "CallFn",
    "ToolEntry", "compact_json", "first_sentence", "listed_bytes", "plain_summary",
]

DESCRIPTION_CHARS = 10_000
"""A tool's description as clients are sent it (tools/list) is cut here. The longest of the 647 real tools in
benchmarks/data/multiserver is 6,993 characters, so real descriptions pass whole; an upstream's megabyte does not,
and 20 enabled tools (the default max_enabled) at the cap are about 200 KB of text, well under the SDK client's
1 MiB limit on one server-sent event. Search still reads the whole description."""

SCHEMA_CHARS = 32_000
"""A schema is shown or sent (tools/list, a proxy search result, an argument error) only up to this size as compact
JSON: the largest of the 647 real tools of benchmarks/data/multiserver is 18,953 characters (LINE's flex messages),
while one upstream schema of thousands of enum values would fill the model's context (or the SDK client's 1 MiB
event) by itself. With descriptions, 20 enabled tools at both caps are about 850 KB, with output schemas 1.5 MB: the
server lists the tools past its budget lean (`TOOLS_LIST_BYTES` in server/core.py)."""
TITLE_CHARS = 200
"""A tool's title (a display name) as clients are sent it is cut here, and so is its annotations' title."""
EXTRA_CHARS = 16_000
"""A tool's icons (all of them together) and its `_meta` are each sent only up to this size as compact JSON, else
left out: one upstream tool with a 3 MB `data:` icon and 2 MB of `_meta` made every tools/list of a session that had
enabled it 5 MB, which the SDK client over HTTP refused (its 1 MiB event), so that session could list no tool. A
64-pixel PNG icon inlined is 4-8 KB; `_meta` holds a few keys."""

LEAN_DESCRIPTION_CHARS = 1_000
"""A tool listed lean (`to_mcp(lean=True)`: in a tools/list past its budget) keeps this much of its description."""

_SUMMARY_SCAN = 2_000
"""The first sentence is looked for in this many characters: enough for any opening sentence (it is cut at 160),
and a summary of a megabyte description costs no more than one of a line."""

CallFn = Callable[[dict[str, Any]], Awaitable[types.CallToolResult]]
"""How to run a tool: validated arguments in, an MCP result out. Raising is allowed; the server converts."""


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """A tool as lazytools knows it: its public name, where it comes from and how to call it."""

    name: str
    """Public, unique name (SEP-986 characters, at most 64 long)."""
    group: str
    """The upstream server or the in-process category the tool belongs to."""
    description: str
    input_schema: Mapping[str, Any]
    call: CallFn = field(compare=False, repr=False)
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: types.ToolAnnotations | None = None
    upstream_name: str | None = None
    """The name the tool has upstream (an upstream server's or a tools file's own name); `None` when it equals
    `name`."""
    pinned: bool = False
    """Listed from the start in every surface, like ALWAYS_AVAILABLE_TOOLS (an upstream with defer_loading false)."""
    icons: tuple[types.Icon, ...] | None = None
    execution: types.ToolExecution | None = None
    meta: Mapping[str, Any] | None = None
    """The tool's `_meta`, as its upstream gave it."""
    trusted_schema: bool = False
    """The schema is the server author's own (an in-process function's type hints), not an upstream's: small
    arguments are checked on the event loop, skipping a worker-thread round trip on every call."""
    checks_arguments: bool = False
    """The tool's call checks small arguments against its input schema itself, exactly (an in-process function's
    argument model, in strict mode), and refuses them with the schema's messages: the server does not check them
    first."""
    at_once: bool = False
    """The call is an in-process function that runs on the event loop and returns at once (marked quick): it
    sends nothing while it runs, so its answer needs no stream."""

    @property
    def summary(self) -> str:
        """The first sentence of the description, escaped, for compact listings."""
        return _summary(self.description)

    def to_mcp(self, *, lean: bool = False) -> types.Tool:
        """The tool as tools/list sends it: description and titles cut (see `DESCRIPTION_CHARS`), schemas less the
        titles that restate a name (`schematitles`), schemas over `SCHEMA_CHARS` left out (an input schema as an open
        object, said in the description), icons or `_meta` over `EXTRA_CHARS` left out, the rest as it is. `lean`: the
        name, titles, annotations and a shorter description only, for a list too large whole. Calls are still checked
        against the whole input schema as the tool gave it."""
        if lean:
            return types.Tool(name=self.name, title=_cut(self.title, TITLE_CHARS) if self.title is not None else None,
                              description=_cut(self.description, LEAN_DESCRIPTION_CHARS) + _LEAN_NOTE,
                              input_schema={"type": "object"}, annotations=self._listed_annotations(),
                              execution=self.execution)
        description = _cut(self.description, DESCRIPTION_CHARS)
        input_schema, size = _listed(self.input_schema)
        if size > SCHEMA_CHARS:
            input_schema = {"type": "object"}
            description += (f"\n(Its input schema, {size:,} characters, is not sent; search_tools shows its "
                            "parameters, and a call that does not fit says why.)")
        output_schema, size = _listed(self.output_schema) if self.output_schema is not None else (None, 0)
        if size > SCHEMA_CHARS:
            output_schema = None
        annotations = self._listed_annotations()
        icons = list(self.icons) if self.icons is not None else None
        if icons and len(compact_json([icon.model_dump(mode="json", exclude_none=True) for icon in icons])) > \
                EXTRA_CHARS:
            icons = None
        meta = dict(self.meta) if self.meta is not None else None
        if meta and len(compact_json(meta)) > EXTRA_CHARS:
            meta = None
        return types.Tool(
            name=self.name,
            title=_cut(self.title, TITLE_CHARS) if self.title is not None else None,
            description=description,
            input_schema=input_schema,
            output_schema=output_schema,
            annotations=annotations,
            icons=icons,
            execution=self.execution,
            _meta=meta,
        )

    def _listed_annotations(self) -> types.ToolAnnotations | None:
        annotations = self.annotations
        if annotations is not None and annotations.title is not None and len(annotations.title) > TITLE_CHARS:
            annotations = annotations.model_copy(update={"title": _cut(annotations.title, TITLE_CHARS)})
        return annotations


_LEAN_NOTE = ("\n(Listed without its schemas: the tool list was full. search_tools with its name in tool_names shows "
              "its parameters, and a call that does not fit says why.)")


def listed_bytes(tool: types.Tool) -> int:
    """The bytes `tool` takes in a tools/list answer (UTF-8 JSON, as the SDK writes it)."""
    text = compact_json(tool.model_dump(mode="json", by_alias=True, exclude_none=True))
    return len(text.encode("utf-8", "surrogatepass"))


def _listed(schema: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """The schema as listed (less the titles that restate a name) and its size as compact JSON."""
    listed = dict(schema)
    text = compact_json(listed)
    if '"title"' in text:  # most schemas hold no title at all, and their listing costs no walk
        listed = dict(without_restated_titles(listed))
        text = compact_json(listed)
    return listed, len(text)


@lru_cache(maxsize=4096)
def _summary(description: str) -> str:
    # Every search result lists each match's summary: remembered per description (a str keeps its hash).
    return escape(first_sentence(description[:_SUMMARY_SCAN]))


def compact_json(value: Any) -> str:
    """`value` as JSON without spaces, non-ASCII kept: how schemas and values are measured, shown and cut."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _cut(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and a note saying so."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (cut: {len(text) - limit:,} more characters not sent)"


# A sentence ends at ". ", "? " or "! ", but not after an abbreviation such as "e.g." or "etc.".
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)(?<!\bapprox)[.?!](?=\s)")


def first_sentence(text: str, limit: int = 160) -> str:
    line = " ".join(text.strip().split("\n\n", 1)[0].split())
    end = _SENTENCE_END.search(line)
    if end is not None and end.start() < limit:
        return line[: end.start() + 1]
    if len(line) > limit:
        return line[: limit - 1].rstrip() + "…"
    return line


_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING_OR_RULE = re.compile(r"^\s*(#{1,6}\s|[-*_=]{3,}\s*$|<[^>]+>\s*$)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+>•]|\d+[.)])\s+")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_ABOUT_ITSELF = re.compile(
    r"\b(these|the following) instructions\b|^audience\s*:|^follow (them|these)\b", re.IGNORECASE
)


def plain_summary(text: str, limit: int = 100) -> str:
    """The first real sentence of a server's or group's text, as plain words: headings, rules, code blocks and
    sentences about the instructions themselves skipped, links, emphasis and list markers removed, cut at
    `limit` on a word boundary. Empty when nothing is left ("# Everything Server – Server Instructions")."""
    kept: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or _HEADING_OR_RULE.match(line):
            kept.append("")
            continue
        item = _LIST_MARKER.match(line) is not None
        line = _EMPHASIS.sub("", _LINK.sub(r"\1", _LIST_MARKER.sub("", line))).strip()
        if item and line and line[-1] not in ".?!:;":
            line += "."  # a list item is a sentence of its own
        kept.append(line)
    words = " ".join(" ".join(kept).split())
    while words:
        sentence = first_sentence(words, limit=10_000)
        words = words[len(sentence):].strip()
        if not _ABOUT_ITSELF.search(sentence):
            break
    else:
        return ""
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:-–—")
    return cut + "…"
