"""Titles in a tool's schema that only restate a name, left out of what clients and the model are shown.

JSON Schema's `title` is an annotation: it validates nothing. Pydantic (and so every server built on the MCP Python
SDK or FastMCP) gives each property the title of its own name ("repo_path" → "Repo Path"), each `$defs` entry its
key, and the arguments object the function's name ("git_status" → "statusArguments"): tokens on every listing that
tell the model nothing the name beside them does not. A title that says more than its name (`出发站` for
"from_station") is kept, and so is everything else; calls are still checked against the schema as the tool gave it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["without_restated_titles"]

_KEYED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose value maps names to schemas: a property's or a definition's name is what its title restates."""
_ONE = frozenset({"items", "additionalItems", "additionalProperties", "unevaluatedItems", "unevaluatedProperties",
                  "contains", "propertyNames", "not", "if", "then", "else"})
"""Keywords whose value is one schema (`items` may also be a list of them, draft 7's tuples)."""
_MANY = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})

_ARGUMENTS_MODEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*Arguments")
"""The MCP Python SDK's name for a tool's argument model: its function's name and "Arguments"."""

DEPTH = 32
"""Schemas nested deeper than this keep their titles there: real ones nest a few levels, and a hostile upstream's
thousand levels cost no more to list than before."""


def without_restated_titles(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema` less the titles that restate a name: a property's, a definition's, or the root's when it is the
    argument model's generated name. The same object when it has none."""
    listed: Mapping[str, Any] = _walk(schema, None, root=True, depth=0)
    return listed


def _restates(title: str, name: str) -> bool:
    """Whether `title` is `name` in other case and spacing ("Repo Path" and "repo_path", "Url" and "url")."""
    return _letters(title) == _letters(name) != ""


def _letters(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())


def _walk(schema: Any, name: str | None, *, root: bool, depth: int) -> Any:
    if not isinstance(schema, Mapping) or depth > DEPTH:
        return schema
    title = schema.get("title")
    drop = isinstance(title, str) and (
        (name is not None and _restates(title, name)) or (root and _ARGUMENTS_MODEL.fullmatch(title) is not None))
    changed: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _KEYED and isinstance(value, Mapping):
            kept = {k: _walk(v, str(k), root=False, depth=depth + 1) for k, v in value.items()}
            if any(kept[k] is not value[k] for k in kept):
                changed[key] = kept
        elif key in _ONE or key in _MANY:
            kept_one = _walk_list(value, depth) if isinstance(value, list) else _walk(value, None, root=False,
                                                                                      depth=depth + 1)
            if kept_one is not value:
                changed[key] = kept_one
    if not drop and not changed:
        return schema
    return {key: changed.get(key, value) for key, value in schema.items() if not (drop and key == "title")}


def _walk_list(schemas: list[Any], depth: int) -> list[Any]:
    kept = [_walk(item, None, root=False, depth=depth + 1) for item in schemas]
    return schemas if all(a is b for a, b in zip(kept, schemas, strict=True)) else kept
