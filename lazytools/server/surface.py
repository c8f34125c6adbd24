"""Which surface a session gets, and what that surface lets it see and do: the surface policy in one place.

Dynamic: the session's tools/list grows as search enables tools, and the client hears `list_changed`.
Proxy: tools/list is static (pinned tools and the meta-tools); found tools are called through invoke_tool.
A request without a session (stateless HTTP, the 2026-07-28 protocol) always gets the proxy surface.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..modes import Mode, Surface

if TYPE_CHECKING:
    from ..state.sessions import SessionState
    from .access import Access

__all__ = ["SessionView", "choose_surface", "is_stateless_era"]


def is_stateless_era(protocol_version: str) -> bool:
    """True for 2026-07-28 and later, where tools/list must not vary per connection."""
    return protocol_version in MODERN_PROTOCOL_VERSIONS


def choose_surface(
    *,
    mode: Mode,
    protocol_version: str,
    has_session: bool,
    client_name: str | None,
    table: Mapping[str, Surface],
    default: Surface,
) -> Surface:
    """The surface for one connection. The spec's rules come first; `mode` overrides only the client table."""
    if is_stateless_era(protocol_version) or not has_session:
        return "proxy"
    if mode != "auto":
        return mode
    if client_name is not None and client_name.lower() in table:
        return table[client_name.lower()]
    return default


@dataclass(frozen=True, slots=True)
class SessionView:
    """What one session (or a request without one) lists and may call, and whether its searches enable tools."""

    surface: Surface
    enabled: Collection[str] = ()
    """Tools that search enabled in this session, in order; empty without a session."""
    bridge: bool = True
    """`dynamic_bridge`: dynamic sessions also get invoke_tool, for clients that do not re-list in time."""
    access: Access | None = None
    """What the request's principal may see and call (server/access.py): every name is looked up in its catalog."""

    @classmethod
    def of(cls, state: SessionState | None, *, bridge: bool, access: Access | None = None) -> SessionView:
        """No session means the proxy surface: nothing to remember enabled tools in, nobody to notify."""
        if state is None:
            return cls("proxy", (), bridge, access)
        return cls(state.surface, state.enabled, bridge, access)

    @property
    def search_enables(self) -> bool:
        """Whether tools found by search join this session's list (and a `list_changed` is sent)."""
        return self.surface == "dynamic"

    @property
    def offers_invoke(self) -> bool:
        """Whether invoke_tool is listed and callable."""
        return self.surface == "proxy" or self.bridge

    def lists_enabled(self) -> Collection[str]:
        """The enabled tools this session's tools/list shows (beside the pinned and meta-tools)."""
        return self.enabled if self.search_enables else ()

    def may_call(self, name: str, pinned: Collection[str]) -> bool:
        """Whether `name` may be called directly (not through invoke_tool)."""
        return name in pinned or name in self.lists_enabled()
