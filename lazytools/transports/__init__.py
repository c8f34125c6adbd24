"""Transports: they hand the MCP server a stream pair, or an ASGI app; the server never imports them."""

from .stdio import serve_stdio

__all__ = ["serve_stdio"]
