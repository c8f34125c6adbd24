"""The last step of every tools/call result, in-process or upstream: make it serialisable, then bound its size.

No tool output may break the transport. Two things did: a lone surrogate in a string (UTF-8 cannot encode it, so
the SDK's writer raised and the stdio server exited, the HTTP request went unanswered), and sheer size. Here:

- lone surrogates (in text, in structured content, in keys) are **replaced** with U+FFFD, and a note says how many;
  a valid pair written as two escapes is joined into its character first;
- NaN and ±Infinity in structured content become `null` (as JavaScript's JSON.stringify does);
- a result whose JSON is larger than `max_bytes` is **truncated**: text is cut where the budget ends, what does not
  fit (other blocks, structured content) is dropped, and a last text block says what happened and how big it was;
- a result of more than `MAX_RESULT_PARTS` content blocks has its runs of plain text blocks joined (`parts.py`).
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

import mcp_types as types
import pydantic_core
from pydantic import ValidationError

from ..parts import fewer_parts
from ..safetext import clip, replace_surrogates

__all__ = ["sendable"]

logger = logging.getLogger(__name__)

_NOTE_ROOM = 400
"""Bytes kept free for the note that says a result was cut."""


def _plain_text(block: types.ContentBlock) -> str | None:
    plain = type(block) is types.TextContent and block.annotations is None and block.meta is None
    return block.text if plain else None  # type: ignore[union-attr]


def _serialised(result: types.CallToolResult) -> str:
    return result.model_dump_json(by_alias=True, exclude_none=True)


def sendable(result: types.CallToolResult, *, max_bytes: int, tool: str) -> types.CallToolResult:
    """`result` as it can be sent: at most `MAX_RESULT_PARTS` blocks (`parts.py`), every string encodable,
    non-finite numbers null, at most about `max_bytes`."""
    parts = fewer_parts(result.content, _plain_text, lambda text: types.TextContent(text=text))
    if parts is not None:
        logger.warning("tools/call %s: result of %d parts joined to %d", clip(tool), len(result.content), len(parts))
        result = result.model_copy(update={"content": parts})
    try:
        size = len(_serialised(result).encode())
    except Exception:  # noqa: BLE001 - a lone surrogate, or anything else the serialiser refuses
        result = _repaired(result, tool)
        size = len(_serialised(result).encode())
    if size <= max_bytes:
        return result
    logger.warning("tools/call %s: result of %d bytes truncated to LAZYTOOLS_MAX_RESULT_BYTES (%d)",
                   clip(tool), size, max_bytes)
    return _truncated(result, size, max_bytes)


def _repaired(result: types.CallToolResult, tool: str) -> types.CallToolResult:
    counts = {"surrogates": 0, "non_finite": 0}

    def fix(value: Any) -> Any:
        if isinstance(value, str):
            text, replaced = replace_surrogates(value)
            counts["surrogates"] += replaced
            return text
        if isinstance(value, float) and not math.isfinite(value):
            counts["non_finite"] += 1
            return None
        if isinstance(value, dict):
            return {fix(key): fix(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [fix(item) for item in value]
        return value

    try:
        data = fix(result.model_dump(mode="python", by_alias=True, exclude_none=True))
        repaired = types.CallToolResult.model_validate(data)
        _serialised(repaired)
    except (ValidationError, ValueError, TypeError, RecursionError) as exc:
        logger.warning("tools/call %s: result cannot be serialised (%s)", clip(tool), type(exc).__name__)
        return types.CallToolResult(is_error=True, content=[types.TextContent(
            text=f"The result of {clip(tool)} could not be sent: it is not serialisable as JSON "
                 f"({type(exc).__name__}: {clip(str(exc))}).")])
    if counts["surrogates"]:
        repaired.content.append(types.TextContent(
            text=f"[lazytools: {counts['surrogates']} lone surrogate(s) in this result, which UTF-8 cannot encode, "
                 "were replaced with U+FFFD]"))
        logger.info("tools/call %s: replaced %d lone surrogate(s) in the result", clip(tool), counts["surrogates"])
    return repaired


def _truncated(result: types.CallToolResult, size: int, max_bytes: int) -> types.CallToolResult:
    budget = max(max_bytes - _NOTE_ROOM, 0)
    kept: list[types.ContentBlock] = []
    used = 0
    dropped = 0
    for block in result.content:
        block_size = len(block.model_dump_json(by_alias=True, exclude_none=True).encode())
        if used + block_size <= budget:
            kept.append(block)
            used += block_size
            continue
        room = budget - used
        if isinstance(block, types.TextContent) and room > 64:
            kept.append(_cut_text(block, room))
            used = budget
        dropped += 1
    note = (f"[lazytools: result truncated: it was {size:,} bytes, more than LAZYTOOLS_MAX_RESULT_BYTES "
            f"({max_bytes:,}); text was cut at the limit")
    if result.structured_content is not None:
        note += ", structured content dropped"
    note += "]"
    kept.append(types.TextContent(text=note))
    return types.CallToolResult(content=kept, is_error=result.is_error)


def _cut_text(block: types.TextContent, room: int) -> types.TextContent:
    """The longest head of `block` whose JSON fits in `room` bytes.

    The bound is on JSON bytes, which escapes (six for a control character) and UTF-8 make longer than the text has
    characters: the head is cut from the text as JSON writes it, so a few passes over it find it, however long."""
    wrapper = len(_block_json(""))
    allowed = max(room - wrapper, 0)
    # Every character takes at least one byte of JSON: no more than `allowed` of them can fit.
    escaped = pydantic_core.to_json(block.text[:allowed])[1:-1][:allowed]
    head = ""
    # The cut may fall inside an escape (up to 5 bytes of `\u00XX`) or a UTF-8 sequence (at most 3 bytes):
    # the longest of the next few shorter cuts that reads back whole is the head.
    for end in range(len(escaped), max(len(escaped) - 6, 0) - 1, -1):
        try:
            head = json.loads(b'"' + escaped[:end] + b'"')
            break
        except ValueError:
            continue
    # JSON as pydantic writes it is what `room` bounds; were it ever longer than read back above, each character
    # dropped takes at least one byte with it.
    while head and (over := len(_block_json(head)) - room) > 0:
        head = head[:-over]
    return types.TextContent(text=head)


def _block_json(text: str) -> bytes:
    return types.TextContent(text=text).model_dump_json(by_alias=True, exclude_none=True).encode()
