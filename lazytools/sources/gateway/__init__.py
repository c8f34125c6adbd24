"""Upstream MCP servers as a source: the config file (`config`, `configtext`), one connection each (`upstream`),
all of them together (`gateway`)."""
