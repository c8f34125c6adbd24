"""Where tools come from. Each source fills its groups of the catalog for as long as it is open.

- `functions`: Python functions in this process (the bundled examples, a library user's tools).
- `jsonl`: a tools file, described but not runnable (benchmark catalogs, exported tool lists).
- `gateway`: the upstream MCP servers of a config file, kept connected.

Tool names follow one policy (`lazytools.toolnames`), whatever the source.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from ..catalog import Catalog

__all__ = ["Source", "StaticSource"]


class Source(Protocol):
    """A source of tools: `open(catalog)` fills its groups and keeps them current until the context ends.

    What `open` yields may have a `front` (`server.passthrough.UpstreamFeatures`): the server then serves what the source
    offers besides tools (the gateway's prompts and resources) and tells it of client sessions."""

    def open(self, catalog: Catalog) -> AbstractAsyncContextManager[object]: ...


@dataclass(frozen=True, slots=True)
class StaticSource:
    """A source whose tools are known at once and never change (functions, a JSONL file)."""

    fill: Callable[[Catalog], object]

    @asynccontextmanager
    async def open(self, catalog: Catalog) -> AsyncIterator[object]:
        yield self.fill(catalog)
