"""Tiny real MCP servers that the gateway tests start as upstreams."""
