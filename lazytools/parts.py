"""Results of many parts: the content blocks past a bound joined or dropped, early, before the protocol's types
read each one.

Every content block costs the protocol's types tens of microseconds on the event loop (parsed as the upstream's
message, validated as a result, validated again as the reply), so a result of 100,000 one-letter text blocks,
well under the byte limit, held every session of the process for seconds. Plain text blocks are joined, a line
each, which keeps what they say; past the bound other blocks are dropped, and a last text block says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["MAX_RESULT_PARTS", "fewer_parts"]

MAX_RESULT_PARTS = 1_000
"""Content blocks a result passes on; past it, runs of plain text blocks are joined and then the rest dropped."""

Block = TypeVar("Block")


def fewer_parts(blocks: Sequence[Block], plain_text: Callable[[Block], str | None], text: Callable[[str], Block],
                limit: int = MAX_RESULT_PARTS) -> list[Block] | None:
    """None when `blocks` are at most `limit`; else each run of plain text blocks (`plain_text` gives a block's
    text, None for any other block) joined into one (`text` makes it), and if that is still over the limit, the
    first `limit - 1`; a last block says what was done."""
    if len(blocks) <= limit:
        return None
    parts: list[Block] = []
    run: list[str] = []
    for block in blocks:
        said = plain_text(block)
        if said is not None:
            run.append(said)
            continue
        if run:
            parts.append(text("\n".join(run)))
            run = []
        parts.append(block)
    if run:
        parts.append(text("\n".join(run)))
    note = f"[lazytools: the result's {len(blocks):,} parts were more than {limit:,}: its text parts are joined"
    if len(parts) >= limit:
        note += f", and the {len(parts) - limit + 1:,} parts after the first {limit - 1:,} were dropped"
        parts = parts[: limit - 1]
    parts.append(text(note + "]"))
    return parts
