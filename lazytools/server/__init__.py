"""The MCP server without a transport: sessions, the surface policy, the meta-tools and the low-level wiring.

`core` holds `LazyServer` (import it from `lazytools` or `lazytools.server.core`).
"""
