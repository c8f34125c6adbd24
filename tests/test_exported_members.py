"""The public surface of the package is deliberate: this list changes only on purpose."""

from __future__ import annotations

import lazytools


def test_exported_members() -> None:
    assert sorted(lazytools.__all__) == sorted([
        "Catalog", "ConfigError", "FunctionGroup", "Group", "LazyServer", "LazyToolsError", "Settings",
        "ToolArgumentsError", "ToolEntry", "ToolExecutionError", "ToolNotEnabledError", "UnknownToolError",
        "UpstreamError", "UpstreamTimeoutError", "UpstreamUnavailableError", "build_server", "function_tool",
    ])
    for name in lazytools.__all__:
        assert getattr(lazytools, name) is not None
