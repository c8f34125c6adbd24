"""JSON tools: validate, pretty-print, get by path, flatten/unflatten and structural diff."""

import json
import re
from typing import Annotated, Any

from pydantic import Field

from ._common import MAX_RESULT_BYTES, ensure_max_length, result_too_large

__all__ = ["validate_json", "format_json", "json_get_path", "flatten_json", "unflatten_json", "diff_json"]

JsonText = Annotated[str, Field(description="JSON document as text.")]
JsonData = Annotated[dict[str, Any] | list[Any], Field(description="A JSON object or array.")]
_MAX_DEPTH = 100
_MAX_CHANGES = 1000
MAX_PATH_CHARS = 10_000
MAX_SEPARATOR_CHARS = 100


def _depth_ok(value: Any, limit: int = _MAX_DEPTH) -> None:
    """Raise ValueError if containers nest deeper than limit (checked without recursion)."""
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth >= limit:
                raise ValueError(f"JSON is nested too deeply (limit is {limit} levels)")
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def _pretty_size(value: Any, indent: int, limit: int) -> int:
    """An upper estimate of json.dumps(value, indent=indent) in characters, stopping once it passes limit."""
    size = 0
    stack = [(value, 0)]
    while stack and size <= limit:
        node, depth = stack.pop()
        size += indent * depth + 2  # indentation, newline, comma
        if isinstance(node, dict):
            size += 2 + indent * depth
            for key, child in node.items():
                size += len(str(key)) * 2 + 6
                stack.append((child, depth + 1))
        elif isinstance(node, list):
            size += 2 + indent * depth
            stack.extend((child, depth + 1) for child in node)
        elif isinstance(node, str):
            size += len(node) * 2 + 2  # escapes can double a string (quotes, backslashes, control characters)
        else:
            size += 24
    return size


def _load(text: str) -> Any:
    ensure_max_length(text, "json_text")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ValueError("JSON is nested too deeply") from None


def _type_name(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def validate_json(json_text: JsonText) -> dict[str, Any]:
    """Check whether a text is valid JSON and report the error position (line, column) if it is not."""
    try:
        value = _load(json_text)
    except ValueError as exc:
        match = re.search(r"line (\d+) column (\d+)", str(exc))
        line, column = (int(match.group(1)), int(match.group(2))) if match else (None, None)
        return {"valid": False, "error": str(exc), "line": line, "column": column, "top_level_type": None}
    return {"valid": True, "error": None, "line": None, "column": None, "top_level_type": _type_name(value)}


def format_json(
    json_text: JsonText,
    indent: Annotated[int, Field(description="Spaces per indentation level.", ge=0, le=8)] = 2,
    sort_keys: Annotated[bool, Field(description="Sort object keys alphabetically.")] = False,
    minify: Annotated[bool, Field(description="Output compact JSON on one line instead of pretty-printing.")] = False,
) -> str:
    """Pretty-print (beautify) or minify a JSON document, optionally sorting keys."""
    value = _load(json_text)
    _depth_ok(value)
    # Indentation grows with depth on every line: estimate before building (a small deep document can expand a lot).
    if _pretty_size(value, 0 if minify else indent, MAX_RESULT_BYTES) > MAX_RESULT_BYTES:
        raise result_too_large(what="the formatted JSON")
    if minify:
        return json.dumps(value, separators=(",", ":"), sort_keys=sort_keys, ensure_ascii=False)
    return json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=False)


def _split_path(path: str) -> list[str]:
    """Accept both "a.b[0].c" and "a.b.0.c"; a leading "$." (JSONPath style) is ignored; ["key"] and ['key'] too.

    A hand-written scan (linear): the regex "\\[[\"'](.*?)[\"']\\]" it replaces rescanned the rest of the path from
    every "['" (quadratic: a 20,000-character path took seconds).
    """
    if len(path) > MAX_PATH_CHARS:
        raise ValueError(f"path is too long (limit is {MAX_PATH_CHARS} characters)")
    text = path.strip()
    if text.startswith("$"):
        text = text[2:] if text.startswith("$.") else text[1:]
    # Where the next closing quote-and-bracket and the next newline are, for every position, found in one pass.
    closing = [len(text)] * (len(text) + 1)
    newline = [len(text)] * (len(text) + 1)
    bracket = [-1] * (len(text) + 1)
    for i in range(len(text) - 1, -1, -1):
        closing[i] = i if text[i] in "\"'" and text.startswith("]", i + 1) else closing[i + 1]
        newline[i] = i if text[i] == "\n" else newline[i + 1]
        bracket[i] = i if text[i] == "]" else bracket[i + 1]
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "[":
            end = bracket[i + 1]
            inner = text[i + 1 : end] if end > 0 else ""
            if inner and (inner.isdigit() or (inner[0] == "-" and inner[1:].isdigit())) and inner.isascii():
                out.append("." + inner)
                i = end + 1
                continue
            if i + 1 < len(text) and text[i + 1] in "\"'":
                close = closing[i + 2] if i + 2 <= len(text) else len(text)
                if close < len(text) and newline[i + 2] >= close:
                    out.append("." + text[i + 2 : close])
                    i = close + 2
                    continue
        out.append(text[i])
        i += 1
    return [part for part in "".join(out).split(".") if part != ""]


def _shown(walked: list[str]) -> str:
    text = ".".join(walked) or "$"
    return text if len(text) <= 200 else text[:200] + "…"


def json_get_path(
    data: JsonData,
    path: Annotated[str, Field(description="Dotted path such as 'user.addresses[0].city' or 'items.2.name'.")],
) -> dict[str, Any]:
    """Get the value at a dotted path (like user.address.city or items[0].name) inside a JSON object."""
    current: Any = data
    walked: list[str] = []
    for part in _split_path(path):
        if isinstance(current, dict):
            if part not in current:
                raise ValueError(f"key {part[:200]!r} not found at '{_shown(walked)}'; available: {list(current)[:20]}")
            current = current[part]
        elif isinstance(current, list):
            if not re.fullmatch(r"-?\d+", part):
                raise ValueError(f"'{_shown(walked)}' is an array; use a numeric index instead of {part[:200]!r}")
            if len(part) > 20:
                raise ValueError(f"index {part[:30]}… is out of range")
            index = int(part)
            if not -len(current) <= index < len(current):
                raise ValueError(f"index {index} out of range for array of length {len(current)}")
            current = current[index]
        else:
            raise ValueError(f"cannot descend into a {_type_name(current)} at '{_shown(walked)}'")
        walked.append(part)
    return {"path": path, "value": current, "type": _type_name(current)}


def _flatten(value: Any, prefix: str, sep: str, out: dict[str, Any], depth: int, budget: list[int]) -> None:
    if depth > _MAX_DEPTH:
        raise ValueError("data is nested too deeply")
    if isinstance(value, dict) and value:
        items = value.items()
    elif isinstance(value, list) and value:
        items = ((str(i), v) for i, v in enumerate(value))
    else:
        budget[0] -= len(prefix) + 8
        if budget[0] < 0:
            raise result_too_large(what="the flattened object")
        out[prefix] = value
        return
    for key, child in items:
        # Every leaf repeats its whole path: count the key before building it.
        budget[0] -= len(prefix) + len(sep) + len(str(key))
        if budget[0] < 0:
            raise result_too_large(what="the flattened object")
        _flatten(child, f"{prefix}{sep}{key}" if prefix else str(key), sep, out, depth + 1, budget)


def flatten_json(
    data: JsonData,
    separator: Annotated[str, Field(description="Joins nested keys, e.g. '.' gives 'a.b.0'.", min_length=1, max_length=MAX_SEPARATOR_CHARS)] = ".",
) -> dict[str, Any]:
    """Flatten nested JSON into a single-level object with dotted keys like 'user.address.city'."""
    if not separator:
        raise ValueError("separator must not be empty")
    ensure_max_length(separator, "separator", MAX_SEPARATOR_CHARS)
    out: dict[str, Any] = {}
    _flatten(data, "", separator, out, 0, [MAX_RESULT_BYTES])
    return out


def unflatten_json(
    data: Annotated[dict[str, Any], Field(description="Flat object whose keys are paths, e.g. {'a.b': 1, 'a.c.0': 2}.")],
    separator: Annotated[str, Field(description="Separator used in the keys.", min_length=1)] = ".",
) -> dict[str, Any] | list[Any]:
    """Rebuild nested JSON from a flat object with dotted keys (the reverse of flatten)."""
    if not separator:
        raise ValueError("separator must not be empty")
    root: dict[str, Any] = {}
    for flat_key, value in data.items():
        parts = flat_key.split(separator)
        if len(parts) > _MAX_DEPTH:
            raise ValueError(f"key {flat_key[:100]!r} has more than {_MAX_DEPTH} levels")
        node = root
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"key {flat_key!r} conflicts with a value already set at {part!r}")
            node = child
        if parts[-1] in node:
            raise ValueError(f"key {flat_key!r} conflicts with another key")
        node[parts[-1]] = value
    return _lists_from_digit_keys(root)


def _lists_from_digit_keys(node: Any) -> Any:
    # Objects whose keys are exactly 0..n-1 were arrays before flattening.
    if not isinstance(node, dict):
        return node
    converted = {k: _lists_from_digit_keys(v) for k, v in node.items()}
    if converted and sorted(converted) == sorted(str(i) for i in range(len(converted))):
        return [converted[str(i)] for i in range(len(converted))]
    return converted


def _diff(old: Any, new: Any, path: str, changes: list[dict[str, Any]], depth: int) -> None:
    if len(changes) >= _MAX_CHANGES or depth > _MAX_DEPTH:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old.keys() | new.keys():
            child = f"{path}.{key}" if path else str(key)
            if len(changes) >= _MAX_CHANGES:
                return
            if key not in new:
                changes.append({"path": child, "change": "removed", "old": old[key]})
            elif key not in old:
                changes.append({"path": child, "change": "added", "new": new[key]})
            else:
                _diff(old[key], new[key], child, changes, depth + 1)
    elif isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            if len(changes) >= _MAX_CHANGES:
                return
            child = f"{path}[{i}]"
            if i >= len(new):
                changes.append({"path": child, "change": "removed", "old": old[i]})
            elif i >= len(old):
                changes.append({"path": child, "change": "added", "new": new[i]})
            else:
                _diff(old[i], new[i], child, changes, depth + 1)
    elif old != new or type(old) is not type(new):
        changes.append({"path": path or "$", "change": "changed", "old": old, "new": new})


def diff_json(
    old: Annotated[dict[str, Any] | list[Any], Field(description="The original JSON object or array.")],
    new: Annotated[dict[str, Any] | list[Any], Field(description="The changed JSON object or array.")],
) -> dict[str, Any]:
    """Compare two JSON objects and list every added, removed and changed value by path."""
    changes: list[dict[str, Any]] = []
    _diff(old, new, "", changes, 0)
    changes.sort(key=lambda c: c["path"])
    return {"equal": not changes, "change_count": len(changes), "changes": changes, "truncated": len(changes) >= _MAX_CHANGES}
