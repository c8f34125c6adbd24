"""lazytools: an MCP server that keeps the model's context small by showing tools only once they are found.

The names below load on first use (PEP 562): `python -m lazytools` and the `lazytools` command import this package
before any code of theirs runs, and the server's modules take about a second to import, a second in which Ctrl-C
must already end the command quietly (`lazytools/__main__.py`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import build_server
    from .catalog import Catalog, Group
    from .entry import ToolEntry
    from .errors import (
        ConfigError,
        LazyToolsError,
        ToolArgumentsError,
        ToolExecutionError,
        ToolNotEnabledError,
        UnknownToolError,
        UpstreamError,
        UpstreamTimeoutError,
        UpstreamUnavailableError,
    )
    from .server.core import LazyServer
    from .settings import Settings
    from .sources.functions import FunctionGroup, function_tool

__all__ = [
    "Catalog",
    "ConfigError",
    "FunctionGroup",
    "Group",
    "LazyServer",
    "LazyToolsError",
    "Settings",
    "ToolArgumentsError",
    "ToolEntry",
    "ToolExecutionError",
    "ToolNotEnabledError",
    "UnknownToolError",
    "UpstreamError",
    "UpstreamTimeoutError",
    "UpstreamUnavailableError",
    "build_server",
    "function_tool",
]

_HOMES = {
    "Catalog": "catalog", "Group": "catalog", "ToolEntry": "entry", "LazyServer": "server.core",
    "build_server": "app", "Settings": "settings", "FunctionGroup": "sources.functions",
    "function_tool": "sources.functions",
    **{name: "errors" for name in __all__ if name.endswith("Error")},
}
"""The module each public name lives in."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # found once; later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
