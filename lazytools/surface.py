"""Which surface a session gets: dynamic (list grows, notification sent) or proxy (static, invoke_tool)."""

from __future__ import annotations

from collections.abc import Mapping

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .settings import Mode, Surface

__all__ = ["choose_surface", "is_stateless_era"]


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
