"""The tool-name policy, in one place: what a public tool name may be and how sources make one.

Every source goes through here: in-process functions (checked as they are), JSONL catalogs (cleaned, prefixed with
their server where two servers share a name) and upstream servers (`prefix__tool`, hashed when changed). The catalog
checks every name it holds with `check_tool_name`. Matching names inside a search query is search's business
(`search/names.py`), not policy.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container

from .errors import ConfigError

__all__ = [
    "MAX_NAME_LENGTH",
    "MAX_PREFIX_LENGTH",
    "check_tool_name",
    "clean_name",
    "public_tool_name",
    "server_prefix",
    "unique_name",
]

MAX_NAME_LENGTH = 64
"""SEP-986 allows 128 characters, but many clients cap tool names at 64."""

MAX_PREFIX_LENGTH = 24
"""Keeps `prefix__tool` readable and leaves most of the 64 characters to the tool's own name."""

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_.\-]")
_INVALID_RUNS = re.compile(r"[^A-Za-z0-9_.\-]+")


def check_tool_name(name: str) -> None:
    """Raise `ConfigError` unless `name` is 1-64 characters of A-Z a-z 0-9 _ - ."""
    if not _NAME_RE.fullmatch(name) or len(name) > MAX_NAME_LENGTH:
        raise ConfigError(
            f"Tool name {name!r} is invalid: use 1-{MAX_NAME_LENGTH} characters of A-Z a-z 0-9 _ - ."
        )


def unique_name(name: str, taken: Container[str], separator: str) -> str:
    """`name`, or `name` cut to fit a suffix such as `-2`, `-3`… so that it is not in `taken`."""
    candidate, n = name, 2
    while candidate in taken:
        suffix = f"{separator}{n}"
        candidate, n = name[: MAX_NAME_LENGTH - len(suffix)] + suffix, n + 1
    return candidate


def clean_name(text: str) -> str:
    """Free text (a JSONL catalog's tool or server name) made of name characters only, never empty."""
    return _INVALID_RUNS.sub("_", text.strip()).strip("_") or "tool"


def server_prefix(name: str) -> str:
    """A server name made safe as a tool-name prefix: no `__` inside and no `_` at either end, so the first
    `__` of a public name always ends the prefix and two servers can never produce the same public name."""
    safe = re.sub(r"_+", "_", _INVALID_CHARS.sub("_", name)).strip("_")
    if len(safe) > MAX_PREFIX_LENGTH or not safe:
        digest = hashlib.sha256(name.encode()).hexdigest()[:6]
        safe = (safe[: MAX_PREFIX_LENGTH - 7].rstrip("_") + "-" + digest).lstrip("-")
    return safe


def public_tool_name(prefix: str, tool: str) -> str:
    """`prefix__tool`, at most 64 characters of A-Z a-z 0-9 _ . -. A name that had to be changed (characters
    replaced or cut) also gets a hash of the original, so two upstream names cannot end up the same."""
    clean = _INVALID_CHARS.sub("_", tool) or "_"
    name = f"{prefix}__{clean}"
    if clean == tool and len(name) <= MAX_NAME_LENGTH:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME_LENGTH - 9]}_{digest}"
