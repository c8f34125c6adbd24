"""Shared input-size guards used by the example tool modules."""

from typing import Sequence

__all__ = [
    "MAX_TEXT_CHARS",
    "MAX_ITEMS",
    "ensure_max_length",
    "ensure_max_items",
]

# Tools must stay fast and bounded no matter what a client sends, so every
# free-form input is capped well below anything that could stall the server.
MAX_TEXT_CHARS = 1_000_000
MAX_ITEMS = 100_000


def ensure_max_length(value: str, name: str, limit: int = MAX_TEXT_CHARS) -> str:
    """Return value unchanged, or raise ValueError if it is longer than limit."""
    if len(value) > limit:
        raise ValueError(f"{name} is too long: {len(value)} characters (limit is {limit})")
    return value


def ensure_max_items(values: Sequence[object], name: str, limit: int = MAX_ITEMS) -> None:
    """Raise ValueError if a list input has more than limit items."""
    if len(values) > limit:
        raise ValueError(f"{name} has too many items: {len(values)} (limit is {limit})")
