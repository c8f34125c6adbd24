"""One malformed tool in an upstream's `tools/list` answer costs that tool, not the whole upstream.

The SDK validates a listing page as a whole: one tool with `"properties": 5` in its input schema made every listing
fail, so the upstream never came up and its other tools were never served. `screen_listing` runs on the messages the
upstream sends, before the SDK reads them: each tool of a listing is checked alone against the negotiated
protocol version's rules, and the ones that fail are dropped with a warning naming them.
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage
from mcp_types.methods import validate_server_result
from pydantic import ValidationError

from ...safetext import clip

__all__ = ["MAX_TOOL_DEPTH", "screen_listing"]

logger = logging.getLogger(__name__)

_FALLBACK_VERSION = "2025-11-25"
MAX_TOOL_DEPTH = 64
"""A listed tool nested deeper than this (its input schema, say) is skipped: the deepest of the 647 real tools of
benchmarks/data/multiserver nests 23 levels, while from about 97 the SDK's client refuses the `tools/list` answer that
carries it ("recursion limit exceeded") and from 127 lazytools could not write that answer at all."""


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests more than `limit` levels of objects and arrays (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return False


def screen_listing(item: Any, *, upstream: str, version: str | None) -> Any:
    """`item` with the malformed tools of a tools/list answer dropped; any other item unchanged."""
    if not isinstance(item, SessionMessage) or not isinstance(item.message, types.JSONRPCResponse):
        return item
    result = item.message.result
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list) or "content" in result:
        return item
    version = version or _FALLBACK_VERSION
    deep = {index for index, tool in enumerate(tools) if _deeper_than(tool, MAX_TOOL_DEPTH)}
    if not deep:
        try:
            validate_server_result("tools/list", version, result)
            return item
        except (ValidationError, KeyError, ValueError):
            pass
    kept = []
    for index, tool in enumerate(tools):
        if index in deep:
            _skipping(upstream, tool, index, "", f"nested more than {MAX_TOOL_DEPTH} levels deep")
            continue
        try:
            # The page's other fields come along: a 2026-07-28 page requires cacheScope, ttlMs and resultType, and
            # a tool checked alone without them would fail, every tool of the page with it.
            validate_server_result("tools/list", version, {**result, "tools": [tool]})
        except ValidationError as exc:
            errors = [error for error in exc.errors() if error["loc"][:1] == ("tools",)]
            if not errors:  # the page itself is wrong, not this tool: the SDK reports that, as it would have
                kept.append(tool)
                continue
            first = errors[0]
            where = ".".join(str(part) for part in first["loc"][2:])
            _skipping(upstream, tool, index, f"{clip(where, 80)}: " if where else "", first["msg"])
            continue
        except ValueError as exc:  # e.g. "Maximum serialization depth exceeded": no client could be sent this tool
            _skipping(upstream, tool, index, "", str(exc))
            continue
        except KeyError:  # nothing to check it against (an era the SDK does not know): the SDK decides
            pass
        kept.append(tool)
    message = types.JSONRPCResponse(jsonrpc="2.0", id=item.message.id, result={**result, "tools": kept})
    return SessionMessage(message, metadata=item.metadata)


def _skipping(upstream: str, tool: Any, index: int, where: str, why: str) -> None:
    name = tool.get("name") if isinstance(tool, dict) else None
    logger.warning("upstream %r: skipping tool %s (number %d of its list): %s%s", clip(upstream, 60),
                   clip(repr(name), 80), index + 1, where, clip(why, 160))
