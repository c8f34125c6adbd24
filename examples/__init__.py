"""Bundled example catalog of real, local tools, grouped by category, for the lazytools MCP server."""

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from . import (
    colors,
    cron,
    csvtools,
    dates,
    encoding,
    files,
    finance,
    hashing,
    jsontools,
    mathtools,
    random_tools,
    regex_tools,
    semver,
    text,
    units,
)
from ._common import bounded_tool

__all__ = ["CATEGORY_SUMMARIES", "build_catalog"]

CATEGORY_SUMMARIES: dict[str, str] = {
    "text": "Text utilities: counts, case conversion, slugs, wrapping, diffs, find/replace",
    "math": "Calculator, statistics, primes, number bases, equations, interest and loans",
    "units": "Unit conversion: length, mass, temperature, data size, speed, volume, more",
    "dates": "Dates and time zones: current time, zone conversion, date arithmetic",
    "data": "JSON and CSV: validate, pretty-print, query, flatten, diff, convert, tables",
    "hashing": "Hashes, HMAC, UUIDs, secure passwords and tokens, JWT inspection",
    "encoding": "Encode and decode base64, URL, hex, HTML entities; parse URLs; Unicode",
    "regex": "Regular expressions: test, find all, replace, split, escape, validate",
    "files": "Read-only access to files under the configured root: list, read, search",
    "colors": "Colors: hex/RGB/HSL conversion, WCAG contrast, lighten/darken, palettes",
    "dev": "Developer helpers: semantic versions and cron schedules",
    "random": "Randomness: dice rolls, random numbers, random picks and shuffles",
}

# Modules are listed per category; each module's __all__ names exactly its tools.
_MODULES: dict[str, list[ModuleType]] = {
    "text": [text],
    "math": [mathtools, finance],
    "units": [units],
    "dates": [dates],
    "data": [jsontools, csvtools],
    "hashing": [hashing],
    "encoding": [encoding],
    "regex": [regex_tools],
    "colors": [colors],
    "dev": [semver, cron],
    "random": [random_tools],
}


def build_catalog(files_root: Path | None, *, ungranted: str = "") -> dict[str, list[Callable[..., Any]]]:
    """Return {category: [tool functions]} for every category; file tools are bound to files_root (with None,
    they refuse every call, saying `ungranted`)."""
    catalog: dict[str, list[Callable[..., Any]]] = {
        category: [getattr(module, name) for module in modules for name in module.__all__]
        for category, modules in _MODULES.items()
    }
    catalog["files"] = files.make_file_tools(Path(files_root) if files_root is not None else None,
                                             **({"why": ungranted} if ungranted else {}))
    # Every result is checked on the way out: strict JSON, valid UTF-8, bounded depth and size (see _common).
    return {category: [bounded_tool(fn) for fn in catalog[category]] for category in CATEGORY_SUMMARIES}
