"""Every exception lazytools raises on purpose, in one place.

    LazyToolsError
    ├── ConfigError (ValueError)          bad settings or config file; names the field
    ├── UnknownToolError (KeyError)       a tool name that is not in the catalog; carries close matches
    ├── ToolNotEnabledError               a catalog tool called directly before search_tools enabled it
    ├── ToolArgumentsError (ValueError)   arguments that do not match the tool's input schema
    ├── ToolExecutionError                a tool (in-process or upstream) failed while running
    ├── PolicyRefusedError                the policy refuses a call's arguments (its tool is one the user may see)
    ├── RateLimitedError                  the principal made more calls this minute than its limit
    ├── StateUnavailableError             the shared session store (Redis) did not answer in time
    ├── UnknownPromptError (KeyError)     prompts/get of a prompt no upstream serves
    ├── UnknownResourceError (KeyError)   resources/read of a URI no upstream serves
    └── UpstreamError                     an upstream MCP server could not serve a call
        ├── UpstreamUnavailableError      not connected: failed to start, crashed, or is reconnecting
        └── UpstreamTimeoutError          did not answer within the per-call timeout

Inside the library these carry meaning and propagate; the server converts them to `isError` tool results (and
StateUnavailableError to a JSON-RPC error, as the HTTP transport does to a 503) and the CLI to messages and exit
codes. Nothing else converts them.
"""

from __future__ import annotations

from collections.abc import Sequence

from .safetext import clip

__all__ = [
    "ConfigError",
    "LazyToolsError",
    "PolicyRefusedError",
    "RateLimitedError",
    "StateUnavailableError",
    "ToolArgumentsError",
    "ToolExecutionError",
    "ToolNotEnabledError",
    "UnknownPromptError",
    "UnknownResourceError",
    "UnknownToolError",
    "UpstreamError",
    "UpstreamTimeoutError",
    "UpstreamUnavailableError",
]


class LazyToolsError(Exception):
    """Base class of every lazytools error."""


class ConfigError(LazyToolsError, ValueError):
    """Settings or a config file are invalid."""


class UnknownToolError(LazyToolsError, KeyError):
    """A tool name that the catalog does not hold."""

    def __init__(self, name: str, suggestions: Sequence[str] = (), *, candidates: Sequence[str] | None = None) -> None:
        self.name = name
        self.suggestions = list(suggestions)
        self.candidates = candidates
        """The names to suggest from, when the suggestions are left to the boundary that answers the client (the
        server spells a name against a large catalog in a worker thread, not on its event loop)."""
        super().__init__(name)

    def __str__(self) -> str:
        message = f"Unknown tool '{clip(self.name)}'."
        if self.suggestions:
            message += " Did you mean: " + ", ".join(self.suggestions) + "?"
        else:
            message += " Call search_tools to find tools by what they do."
        return message


class UnknownPromptError(LazyToolsError, KeyError):
    """A prompt name that no upstream serves."""

    def __str__(self) -> str:
        return f"Unknown prompt {self.args[0]!r}"


class UnknownResourceError(LazyToolsError, KeyError):
    """A resource URI that no upstream serves."""

    def __str__(self) -> str:
        return f"No upstream server serves resource {self.args[0]!r}"


class ToolNotEnabledError(LazyToolsError):
    """A catalog tool was called directly in a dynamic session before search_tools enabled it."""

    def __init__(self, name: str, *, bridge: bool = True) -> None:
        self.name = name
        self.bridge = bridge
        """Whether the session lists invoke_tool, the other way to call it (a session without it is not sent there)."""
        super().__init__(name)

    def __str__(self) -> str:
        message = (f"Tool '{clip(self.name)}' is not enabled in this session. Call search_tools first "
                   f'(for example search_tools(tool_names=["{self.name}"]))')
        return message + (", or call it through invoke_tool." if self.bridge else ".")


class ToolArgumentsError(LazyToolsError, ValueError):
    """Arguments that do not match a tool's input schema."""


class UnknownGroupError(ToolArgumentsError):
    """A group the catalog does not have, asked for by name (search_tools' `group`); the message names the close
    ones and all of them."""


class ToolExecutionError(LazyToolsError):
    """A tool raised while running; the message is the tool's own."""


class PolicyRefusedError(LazyToolsError):
    """The policy refuses these arguments for a tool the principal may otherwise call."""


class RateLimitedError(LazyToolsError):
    """A principal's calls this minute passed its limit."""

    def __init__(self, principal: str, limit: int, retry_after: float) -> None:
        self.retry_after = retry_after
        super().__init__(f"Rate limit: {clip(principal)} may make {limit} calls per minute; try again in "
                         f"{max(1, round(retry_after))} s.")


class StateUnavailableError(LazyToolsError):
    """The shared session store did not answer (down, unreachable or slower than the state timeout)."""


class UpstreamError(LazyToolsError):
    """An upstream MCP server could not serve a request."""

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        super().__init__(f"Upstream server {server!r}: {message}")


class UpstreamUnavailableError(UpstreamError):
    """The upstream is not connected (failed to start, crashed, or is reconnecting)."""


class UpstreamTimeoutError(UpstreamError):
    """The upstream did not answer in time."""
