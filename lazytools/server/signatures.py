"""A tool's one-line signature and its schema text, as search results show them: `name(a: string, b?: integer)`
that a model can call from, and the input schema as compact JSON. Every name and value comes from the tool's
author (an upstream server, a tools file), so each is escaped and cut here. Both are made once per entry object."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..entry import ToolEntry
from ..safetext import clip
from ..schematitles import without_restated_titles
from ..validation import compact_json, schema_text

__all__ = ["NAME_CHARS", "SIGNATURE_CHARS", "schema_of", "signature", "signature_of"]

SIGNATURE_CHARS = 600
"""A signature is cut here: a few dozen parameters fit, a schema built to flood the result does not."""
_PARAMS_SHOWN = 40
NAME_CHARS = 64
"""Characters of a parameter name shown (an upstream's names are not checked like tool names)."""
_OPTIONS_SHOWN = 12
"""Enum values (or anyOf/oneOf options) shown per parameter before "…": the bundled unit converters' 11 fit."""
_VALUE_CHARS = 40
_DEPTH = 4
"""Nested arrays and options deeper than this read "any"."""


_RENDERED: dict[tuple[int, bool], tuple[ToolEntry, str]] = {}
_RENDERED_KEPT = 20_000


def signature_of(entry: ToolEntry) -> str:
    """`signature(entry)`, remembered per entry object (a tenth of a served search at 10,000 tools was spent
    rebuilding the same lines)."""
    return _remembered(entry, False)


def schema_of(entry: ToolEntry) -> str:
    """`schema_text` of the entry's input schema less `$schema` and the titles that restate a name, remembered per
    entry object: a proxy search shows the schema of every tool it returns, and serializing the same schema again
    for every search would cost each one."""
    return _remembered(entry, True)


def _remembered(entry: ToolEntry, schema: bool) -> str:
    """The entry's signature or schema text, made once. The entry is kept with its text, so its id cannot be reused
    while remembered; a changed tool is a new entry object (its schema is not changed in place)."""
    key = (id(entry), schema)
    known = _RENDERED.get(key)
    if known is not None and known[0] is entry:
        return known[1]
    if len(_RENDERED) >= _RENDERED_KEPT:
        _RENDERED.clear()
    text = schema_text(_without_meta(without_restated_titles(entry.input_schema))) if schema else signature(entry)
    _RENDERED[key] = (entry, text)
    return text


def _without_meta(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """The schema less its `$schema` (which JSON Schema draft it follows: nothing a call needs, a dozen tokens)."""
    return {key: value for key, value in schema.items() if key != "$schema"} if "$schema" in schema else schema


def signature(entry: ToolEntry) -> str:
    """`name(a: string, b?: integer)`: a parameter summary a model can call from on the first try: the item shape
    of an array of objects (`observations: {entityName: string, contents: string[]}[]`), a string's format when the
    schema or its description gives one (`time: string<HH:MM>`, `pattern: string<glob>`). Names and values come
    from the tool's author, so they are escaped and cut, and so is the whole line."""
    properties = entry.input_schema.get("properties") or {}
    if not isinstance(properties, Mapping) or not properties:
        return clip(f"{entry.name}()", SIGNATURE_CHARS)
    glob = "glob" in entry.description.lower()
    required = _required(entry.input_schema)
    # Required parameters first, in schema order: a cut line still shows everything a first call must pass.
    names = list(properties)
    ordered = [n for n in names if n in required] + [n for n in names if n not in required]
    ordered = ordered[:_PARAMS_SHOWN]
    head = f"{clip(entry.name, SIGNATURE_CHARS // 2)}("
    used = len(head) + 1
    params: list[str] = []
    for position, pname in enumerate(ordered):
        field = _fields({pname: properties[pname]}, required, 0, glob=glob, most=1)[0]
        left = len(ordered) - position
        if pname in required:
            if used + len(field) + 2 > SIGNATURE_CHARS:
                field = f"{clip(pname, NAME_CHARS)}: …"  # the name of a required parameter is never cut
        elif used + len(field) + 2 + _MORE_CHARS > SIGNATURE_CHARS:
            params.append(f"+{left + len(names) - len(ordered)} optional")
            break
        params.append(field)
        used += len(field) + 2
    else:
        if len(names) > len(ordered):
            params.append(f"… {len(names) - len(ordered)} more")
    return f"{head}{', '.join(params)})"


_MORE_CHARS = 16
"""Room kept for ", +N optional)" when optional parameters are cut."""


def _required(schema: Mapping[str, Any]) -> set[str]:
    listed = schema.get("required")
    return {name for name in listed if isinstance(name, str)} if isinstance(listed, list) else set()


def _fields(properties: Mapping[str, Any], required: set[str], depth: int, *, glob: bool = False,
            most: int) -> list[str]:
    """`name?: type` for the first `most` properties, and how many more there are."""
    shown = []
    for pname, spec in list(properties.items())[:most]:
        mark = "" if pname in required else "?"
        kind = _type_of(spec, depth)
        if kind == "string" and glob and str(pname).lower() in _PATTERN_NAMES:
            kind = "string<glob>"  # the tool's description says its pattern is a glob
        shown.append(f"{clip(pname, NAME_CHARS)}{mark}: {kind}")
    if len(properties) > most:
        shown.append(f"… {len(properties) - most} more")
    return shown


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
    if kind == "object" and depth > 0 and isinstance(spec.get("properties"), Mapping) and spec["properties"]:
        # An array's items (or a nested object): their shape is what a first call gets wrong.
        inner = _fields(spec["properties"], _required(spec), depth + 1, most=_ITEM_FIELDS_SHOWN)
        return "{" + ", ".join(inner) + "}"
    if kind == "string":
        return f"string<{hint}>" if (hint := _string_format(spec)) else "string"
    return clip(kind, _VALUE_CHARS)


def _string_format(spec: Mapping[str, Any]) -> str | None:
    """A string's format: the schema's `format`, else one its description names (HH:MM, YYYY-MM-DD, ISO 8601, a
    glob, a regex, a cron expression)."""
    given = spec.get("format")
    if isinstance(given, str) and given:
        return clip(given, _VALUE_CHARS)
    description = spec.get("description")
    if isinstance(description, str):
        read = description[:_DESCRIPTION_READ]
        if read.isascii() and not any(word in read.lower() for word in _FORMAT_HEADS):
            return None  # most descriptions name no format, and these substring checks cost far less than the search
        found = _FORMAT_WORDS.search(read)
        if found is not None:
            return clip(found.group(0), _VALUE_CHARS)
    return None


_PATTERN_NAMES = frozenset({"pattern", "patterns", "glob", "include", "exclude"})
_ITEM_FIELDS_SHOWN = 8
"""Properties of an array's item object shown before "… N more"."""
_DESCRIPTION_READ = 300
"""Characters of a parameter's description searched for a format: its opening says it, a long one is not read."""
_FORMAT_WORDS = re.compile(
    r"\b(?:YYYY-MM-DD(?:[T ]HH:MM(?::SS)?)?|HH:MM(?::SS)?|ISO[ -]?8601|RFC ?3339|glob|regex|cron)\b",
    re.IGNORECASE,
)
_FORMAT_HEADS = ("yyyy-mm-dd", "hh:mm", "iso", "rfc", "glob", "regex", "cron")
"""What each of `_FORMAT_WORDS`' forms begins with, lower-cased: ASCII text that holds none of them holds no format
(outside ASCII the search's case folding reaches further than `str.lower`, so such text is searched)."""


def _options(shown: list[str], total: int) -> str:
    """`a|b|c`, and `|…` when there were more than those shown."""
    return "|".join(shown) + ("|…" if total > _OPTIONS_SHOWN else "")
