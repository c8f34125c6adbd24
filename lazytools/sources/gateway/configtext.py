"""The text of config files: JSONC (comments, trailing commas) and `${VAR}` expansion, VS Code's way."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import ConfigError

__all__ = ["expand_tree", "expand_variables", "strip_jsonc", "workspace_of"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACES = re.compile(r"\$\{|\}")
MAX_DEFAULT_DEPTH = 16
"""How deep `${A:-${B:-...}}` defaults may nest (a real config uses two or three)."""


# -- ${VAR} expansion -----------------------------------------------------------------------------------------------


def expand_variables(text: str, environ: Mapping[str, str], *, workspace: Path | None = None) -> str:
    """Expand `${VAR}`, `${env:VAR}`, `${VAR:-default}`, and VS Code's `${workspaceFolder}`, `${userHome}`,
    `${pathSeparator}`. A default may itself hold variables (`${NOPE:-${HOME}}`), expanded only when it is used,
    as shells do. An unset variable without a default is an error (a `ValueError` naming it)."""
    out: list[str] = []
    i = 0
    while (start := text.find("${", i)) >= 0:
        end = _closing_brace(text, start + 2)
        if end < 0:
            break  # an unclosed `${` stays as it is
        out.append(text[i:start])
        out.append(_expand_one(text[start + 2:end], environ, workspace))
        i = end + 1
    out.append(text[i:])
    return "".join(out)


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


def _expand_one(raw: str, environ: Mapping[str, str], workspace: Path | None) -> str:
    body = raw.strip()
    if body.startswith("input:"):
        raise ValueError(f"${{{body}}} is a VS Code prompt, which lazytools cannot show; "
                         f"put the value in an environment variable and write ${{env:NAME}}")
    if body == "workspaceFolder":
        return str(workspace or Path.cwd())
    if body == "userHome":
        return str(Path.home())
    if body in ("pathSeparator", "/"):
        return os.sep
    name, has_default, default = body.removeprefix("env:").partition(":-")
    if not _NAME.fullmatch(name):
        raise ValueError(f"${{{body}}} is not a variable lazytools knows (use ${{NAME}} or ${{env:NAME}})")
    value = environ.get(name)
    if value is None or (has_default and value == ""):
        if has_default:
            return expand_variables(default, environ, workspace=workspace)
        raise ValueError(f"environment variable {name} is not set (write ${{{name}:-}} to allow it empty)")
    return value


def expand_tree(value: Any, here: str, environ: Mapping[str, str], workspace: Path, at: str = "") -> Any:
    if isinstance(value, str):
        try:
            return expand_variables(value, environ, workspace=workspace)
        except ValueError as exc:
            raise ConfigError(f"{here}, field {at or 'value'}: {exc}") from None
    if isinstance(value, dict):
        return {key: expand_tree(item, here, environ, workspace, f"{at}.{key}" if at else str(key))
                for key, item in value.items()}
    if isinstance(value, list):
        return [expand_tree(item, here, environ, workspace, f"{at}.{i}") for i, item in enumerate(value)]
    return value


def workspace_of(base: Path) -> Path:
    # VS Code keeps its file in <workspace>/.vscode/mcp.json; anywhere else the file's own folder is the workspace.
    return base.parent if base.name == ".vscode" else base


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
