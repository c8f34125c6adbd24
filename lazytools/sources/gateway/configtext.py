"""The text of config files: JSONC (comments, trailing commas) and `${VAR}` expansion, VS Code's way."""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...safetext import clip

__all__ = ["Budget", "JsonObject", "expand_tree", "expand_variables", "parse_json", "strip_jsonc", "workspace_of"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACES = re.compile(r"\$\{|\}")
MAX_DEFAULT_DEPTH = 16
"""How deep `${A:-${B:-...}}` defaults may nest (a real config uses two or three)."""
MAX_EXPANDED_CHARS = 16 << 20
"""The most characters a config's strings may hold once expanded, all together: `${BIG}` twenty thousand times
would be gigabytes (a real config's are a few KB)."""
MAX_NUMBER_DIGITS = 100
"""Longer numbers are refused: far past any port, timeout or id, and below Python's own limit on `int()` (whose
cost grows with the square of the digits)."""


# -- ${VAR} expansion -----------------------------------------------------------------------------------------------


def expand_variables(text: str, environ: Mapping[str, str], *, workspace: Path | None = None,
                     limit: int = MAX_EXPANDED_CHARS) -> str:
    """Expand `${VAR}`, `${env:VAR}`, `${VAR:-default}`, and VS Code's `${workspaceFolder}`, `${userHome}`,
    `${pathSeparator}`. A default may itself hold variables (`${NOPE:-${HOME}}`), expanded only when it is used,
    as shells do. An unset variable without a default is an error (a `ValueError` naming it), and so is a result
    longer than `limit`, found before it is built."""
    out: list[str] = []
    for piece in _pieces(text, environ, workspace):
        limit -= len(piece)
        if limit < 0:
            raise ValueError(_TOO_LONG)
        out.append(piece)
    return "".join(out)


_TOO_LONG = f"the config's strings expand past {MAX_EXPANDED_CHARS:,} characters in all"


def _pieces(text: str, environ: Mapping[str, str], workspace: Path | None) -> Iterator[str]:
    i = 0
    while (start := text.find("${", i)) >= 0:
        end = _closing_brace(text, start + 2)
        if end < 0:
            break  # an unclosed `${` stays as it is
        yield text[i:start]
        yield from _expand_one(text[start + 2:end], environ, workspace)
        i = end + 1
    yield text[i:]


def _closing_brace(text: str, i: int) -> int:
    """The index of the `}` that closes a `${` opened just before `i`, counting nested `${ }`; -1 if none."""
    depth = 1
    for brace in _BRACES.finditer(text, i):
        if brace.group() == "}":
            depth -= 1
            if depth == 0:
                return brace.start()
        elif (depth := depth + 1) > MAX_DEFAULT_DEPTH:
            # Each level scans the text of the levels inside it, so unbounded nesting costs the square of its depth.
            raise ValueError(f"${{...}} defaults nested too deeply (more than {MAX_DEFAULT_DEPTH} levels)")
    return -1


def _expand_one(raw: str, environ: Mapping[str, str], workspace: Path | None) -> Iterator[str]:
    body = raw.strip()
    if body.startswith("input:"):
        raise ValueError(f"${{{body}}} is a VS Code prompt, which lazytools cannot show; "
                         f"put the value in an environment variable and write ${{env:NAME}}")
    if body == "workspaceFolder":
        yield str(workspace or Path.cwd())
        return
    if body == "userHome":
        yield str(Path.home())
        return
    if body in ("pathSeparator", "/"):
        yield os.sep
        return
    name, has_default, default = body.removeprefix("env:").partition(":-")
    if not _NAME.fullmatch(name):
        raise ValueError(f"${{{body}}} is not a variable lazytools knows (use ${{NAME}} or ${{env:NAME}})")
    value = environ.get(name)
    if value is None or (has_default and value == ""):
        if not has_default:
            raise ValueError(f"environment variable {name} is not set (write ${{{name}:-}} to allow it empty)")
        yield from _pieces(default, environ, workspace)
        return
    yield value


class Budget:
    """What a config's strings may still expand to, all servers together (MAX_EXPANDED_CHARS at first)."""

    def __init__(self) -> None:
        self.left = MAX_EXPANDED_CHARS

    def spend(self, chars: int) -> None:
        self.left -= chars
        if self.left < 0:
            raise ValueError(_TOO_LONG)


def expand_tree(value: Any, here: str, environ: Mapping[str, str], workspace: Path, budget: Budget,
                at: str = "") -> Any:
    """Every string of a server's entry expanded, within `budget`; a number `parse_json` could not take is
    refused here, where its field is known."""
    if isinstance(value, str):
        try:
            expanded = expand_variables(value, environ, workspace=workspace, limit=budget.left)
            budget.spend(len(expanded))
        except ValueError as exc:
            raise ConfigError(f"{here}, field {at or 'value'}: {exc}") from None
        return expanded
    if isinstance(value, dict):
        return {key: expand_tree(item, here, environ, workspace, budget, f"{at}.{key}" if at else str(key))
                for key, item in value.items()}
    if isinstance(value, list):
        return [expand_tree(item, here, environ, workspace, budget, f"{at}.{i}") for i, item in enumerate(value)]
    if isinstance(value, BadNumber):
        raise ConfigError(f"{here}, field {at or 'value'}: {value.reason}")
    return value


def workspace_of(base: Path) -> Path:
    # VS Code keeps its file in <workspace>/.vscode/mcp.json; anywhere else the file's own folder is the workspace.
    return base.parent if base.name == ".vscode" else base


# -- JSON -----------------------------------------------------------------------------------------------------------


class BadNumber:
    """A number in the file that Python's json would take badly: a traceback past 4,300 digits, `1e400` as
    infinity, `NaN`. Kept as this, and refused by `expand_tree`, which knows the field."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class JsonObject(dict[str, Any]):
    """A JSON object that remembers the keys it held more than once (json keeps the last, silently)."""

    repeated: tuple[str, ...] = ()


def parse_json(text: str) -> Any:
    """A config's JSONC text parsed: objects as JsonObject, unfit numbers as BadNumber."""
    return json.loads(strip_jsonc(text), object_pairs_hook=_object, parse_int=_integer, parse_float=_real,
                      parse_constant=lambda name: BadNumber(f"{name} is not a finite number"))


def _object(pairs: list[tuple[str, Any]]) -> JsonObject:
    found = JsonObject(pairs)
    if len(found) < len(pairs):
        found.repeated = tuple(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
    return found


def _integer(text: str) -> int | BadNumber:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        return BadNumber(f"a number of more than {MAX_NUMBER_DIGITS} digits")
    return int(text)


def _real(text: str) -> float | BadNumber:
    value = float(text)
    return value if math.isfinite(value) else BadNumber(f"{clip(text, 40)} is not a finite number")


# -- JSONC ----------------------------------------------------------------------------------------------------------


def strip_jsonc(text: str) -> str:
    """Drop // and /* */ comments and trailing commas outside strings; line numbers stay where they were."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(c for c in text[i:end] if c == "\n"))
            i = end
            continue
        elif ch in "}]":
            # A comma followed only by whitespace before a closing bracket is a trailing comma.
            j = len(out) - 1
            while j >= 0 and out[j] in " \t\r\n":
                j -= 1
            if j >= 0 and out[j] == ",":
                out[j] = " "
            out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)
