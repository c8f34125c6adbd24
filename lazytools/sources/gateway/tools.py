"""An upstream's tools as catalog entries: every page of its `tools/list`, its one-line summary, and the config's
include/exclude and prefix applied (names made public and unique)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import mcp_types as types
from mcp import Client

from ...entry import ToolEntry, first_sentence
from ...safetext import clip
from ...toolnames import public_tool_name, unique_name
from .config import ServerConfig

__all__ = ["MAX_ABOUT_CHARS", "MAX_PAGES", "about_of", "list_tools", "summary_of", "tool_entries"]

logger = logging.getLogger(__name__)

MAX_PAGES = 100
"""Bound on tools/list pagination: a server whose cursor never ends cannot hang a refresh."""

MAX_ABOUT_CHARS = 4000
"""Each text an upstream says of itself is kept up to this many characters: instructions can run to pages, and
search reads only their start."""

Call = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]


async def list_tools(client: Client) -> list[types.Tool]:
    """Every tool the upstream lists, page after page (at most MAX_PAGES)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        tools += page.tools
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _reads_own_words(config: ServerConfig) -> bool:
    """Whether what the upstream says of itself is read: not when the operator's word stands for it (a config
    `description`), nor with `"describe": "config"`. An untrusted server words it as it likes: in another server's
    domain words, to be chosen for that server's requests, or as orders to the model."""
    return not (config.description and config.description.strip()) and config.describe != "config"


def summary_of(config: ServerConfig, client: Client) -> str:
    """The upstream's group summary: the config's description, else the first sentence it says of itself (its
    description, instructions or title), when its config lets that be read."""
    info = client.server_info
    texts = [config.description]
    if _reads_own_words(config):
        texts += [info.description if info else None, client.instructions, info.title if info else None]
    for text in texts:
        if text and text.strip():
            return first_sentence(text, limit=200)
    return ""


def about_of(config: ServerConfig, client: Client) -> str:
    """What search reads of the upstream: the config's description when it has one, else everything the upstream
    says of itself (its title, description and instructions, each bounded) when its config lets that be read."""
    info = client.server_info
    texts = [config.description]
    if _reads_own_words(config):
        texts += [info.title if info else None, info.description if info else None, client.instructions]
    return "\n\n".join(dict.fromkeys(text.strip()[:MAX_ABOUT_CHARS] for text in texts if text and text.strip()))


_MOST_SAID = 1024
"""Listing warnings remembered per upstream: past them (a listing that changes without end) they are said again."""


def tool_entries(server: str, config: ServerConfig, tools: list[types.Tool], *, call: Call,
                 pinned: bool, said: set[str] | None = None) -> list[ToolEntry]:
    """The catalog entries of `server`'s `tools` that its config allows, less those that run only as tasks; each
    calls `call(upstream name, args)`. A warning about the listing already in `said` is not logged again (a
    reconnection lists the same tools); those logged are added."""
    def warn(message: str) -> None:
        if said is None or message not in said:
            logger.warning("%s", message)
            if said is not None and len(said) < _MOST_SAID:
                said.add(message)

    allowed = [tool for tool in tools if config.allows(tool.name)]
    for pattern in config.unmatched_includes([tool.name for tool in tools]):
        warn(f"upstream {server!r}: include {clip(repr(pattern))} matches none of its tools")
    entries: list[ToolEntry] = []
    taken: set[str] = set()
    seen: set[str] = set()
    for tool in allowed:
        if tool.name in seen:
            warn(f"upstream {server!r} lists tool {clip(repr(tool.name))} twice; keeping the first")
            continue
        seen.add(tool.name)
        if tool.execution is not None and tool.execution.task_support == "required":
            # It answers only task-augmented calls, which lazytools does not make: offered, it could never run.
            warn(f"upstream {server!r}: tool {clip(repr(tool.name))} runs only as a task (execution.taskSupport "
                 '"required"), which lazytools does not forward; left out')
            continue
        # unique_name only matters when two upstream names sanitise and hash alike: collisions stay impossible.
        name = unique_name(public_tool_name(config.tool_prefix, tool.name), taken, "-")
        taken.add(name)
        entries.append(ToolEntry(
            name=name,
            group=server,
            description=tool.description or tool.title or "",
            input_schema=tool.input_schema,
            call=partial(call, tool.name),
            title=tool.title,
            output_schema=tool.output_schema,
            annotations=tool.annotations,
            upstream_name=tool.name,
            pinned=pinned,
            icons=tuple(tool.icons) if tool.icons is not None else None,
            execution=tool.execution,
            meta=tool.meta,
        ))
    return entries
