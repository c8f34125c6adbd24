"""lazytools: an MCP server that keeps the model's context small by showing tools only once they are found."""

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
from .server.core import LazyServer, build_server
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
