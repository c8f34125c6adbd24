"""One malformed item in an upstream's list answer costs that item, not the whole list or upstream.

The SDK validates a listing page as a whole: one tool with `"properties": 5` in its input schema made every listing
fail, so the upstream never came up and its other tools were never served; one prompt without a name lost every
prompt and resource. `screen_listing` runs on the messages the upstream sends, before the SDK reads them: each tool,
prompt, resource or resource template of a listing is checked alone against the negotiated protocol version's
rules, and the ones that fail are dropped with a warning naming them. A page of prompts, resources or templates is
first cut to `keep` items, so a hostile list of 150,000 is never checked or parsed whole. Lone surrogates (JSON's
`"\\ud800"`) in any item are replaced with U+FFFD first.
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage
from mcp_types.methods import validate_server_result
from pydantic import ValidationError

from ...safetext import clip, encodable_json

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


_LISTS = {
    "tools": ("tools/list", "tool"),
    "prompts": ("prompts/list", "prompt"),
    "resources": ("resources/list", "resource"),
    "resourceTemplates": ("resources/templates/list", "resource template"),
}
"""A list answer's key: the method it answers and what one item is called (the answer does not name its method)."""


def screen_listing(item: Any, *, upstream: str, version: str | None, keep: int | None = None) -> Any:
    """`item` with the malformed items of a list answer dropped, and a page of prompts, resources or templates cut
    to its first `keep` items; any other item unchanged."""
    if not isinstance(item, SessionMessage) or not isinstance(item.message, types.JSONRPCResponse):
        return item
    result = item.message.result
    if not isinstance(result, dict) or "content" in result:
        return item
    key = next((key for key in _LISTS if isinstance(result.get(key), list)), None)
    if key is None:
        return item
    method, kind = _LISTS[key]
    listed: list[Any] = result[key]
    changed = keep is not None and key != "tools" and len(listed) > keep
    if changed:
        listed = listed[:keep]
    listed, replaced = encodable_json(listed)
    if replaced:
        # Read as they are, they reach the SDK's writer, which cannot encode them: the stdio server would exit at
        # the next tools/list and an HTTP session's list would stay broken.
        logger.warning("upstream %r: %d lone surrogate(s) in its %s list replaced with U+FFFD", upstream, replaced,
                       kind)
        changed = True
    version = version or _FALLBACK_VERSION
    deep = {index for index, one in enumerate(listed) if _deeper_than(one, MAX_TOOL_DEPTH)}
    if not deep:
        try:
            validate_server_result(method, version, {**result, key: listed})
            return _replaced(item, result, key, listed) if changed else item
        except (ValidationError, KeyError, ValueError):
            pass
    kept = []
    for index, one in enumerate(listed):
        if index in deep:
            _skipping(upstream, kind, one, index, "", f"nested more than {MAX_TOOL_DEPTH} levels deep")
            continue
        try:
            # The page's other fields come along: a 2026-07-28 page requires cacheScope, ttlMs and resultType, and
            # an item checked alone without them would fail, every item of the page with it.
            validate_server_result(method, version, {**result, key: [one]})
        except ValidationError as exc:
            errors = [error for error in exc.errors() if error["loc"][:1] == (key,)]
            if not errors:  # the page itself is wrong, not this item: the SDK reports that, as it would have
                kept.append(one)
                continue
            first = errors[0]
            where = ".".join(str(part) for part in first["loc"][2:])
            _skipping(upstream, kind, one, index, f"{clip(where, 80)}: " if where else "", first["msg"])
            continue
        except ValueError as exc:  # e.g. "Maximum serialization depth exceeded": no client could be sent it
            _skipping(upstream, kind, one, index, "", str(exc))
            continue
        except KeyError:  # nothing to check it against (an era the SDK does not know): the SDK decides
            pass
        kept.append(one)
    return _replaced(item, result, key, kept)


def _replaced(item: SessionMessage, result: dict[str, Any], key: str, listed: list[Any]) -> SessionMessage:
    assert isinstance(item.message, types.JSONRPCResponse)
    message = types.JSONRPCResponse(jsonrpc="2.0", id=item.message.id, result={**result, key: listed})
    return SessionMessage(message, metadata=item.metadata)


def _skipping(upstream: str, kind: str, one: Any, index: int, where: str, why: str) -> None:
    name = (one.get("name") or one.get("uri") or one.get("uriTemplate")) if isinstance(one, dict) else None
    logger.warning("upstream %r: skipping %s %s (number %d of its list): %s%s", clip(upstream, 60), kind,
                   clip(repr(name), 80), index + 1, where, clip(why, 160))
