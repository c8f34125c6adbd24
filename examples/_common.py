"""Shared guards for the example tools: input-size caps, the result-size cap, and results made safe for JSON."""

import functools
import math
from typing import Any, Callable, Sequence, TypeVar

__all__ = [
    "MAX_TEXT_CHARS",
    "MAX_ITEMS",
    "MAX_RESULT_BYTES",
    "MAX_RESULT_DEPTH",
    "MAX_RESULT_INT_BITS",
    "ensure_max_length",
    "ensure_max_items",
    "ensure_result_size",
    "result_too_large",
    "clean_text",
    "json_ready",
    "bounded_tool",
]

# Tools must stay fast and bounded no matter what a client sends, so every
# free-form input is capped well below anything that could stall the server.
MAX_TEXT_CHARS = 1_000_000
MAX_ITEMS = 100_000
# No tool builds a result larger than this (its JSON text, in UTF-8 bytes); it matches the server's default
# LAZYTOOLS_MAX_RESULT_BYTES (4 MiB), so a bundled tool stops itself with a clear error before the server would.
MAX_RESULT_BYTES = 4 * 1024 * 1024
# Deeper results are refused: serialisers further on (pydantic, the SDK) fail on very deep data.
MAX_RESULT_DEPTH = 100
# Python refuses to turn integers of more than 4300 digits into text; 14,000 bits is about 4,214 digits.
MAX_RESULT_INT_BITS = 14_000

F = TypeVar("F", bound=Callable[..., Any])


def ensure_max_length(value: str, name: str, limit: int = MAX_TEXT_CHARS) -> str:
    """Return value unchanged, or raise ValueError if it is longer than limit."""
    if len(value) > limit:
        raise ValueError(f"{name} is too long: {len(value)} characters (limit is {limit})")
    return value


def ensure_max_items(values: Sequence[object], name: str, limit: int = MAX_ITEMS) -> None:
    """Raise ValueError if a list input has more than limit items."""
    if len(values) > limit:
        raise ValueError(f"{name} has too many items: {len(values)} (limit is {limit})")


def result_too_large(size: int | None = None, what: str = "the result") -> ValueError:
    """The error every tool raises when its output would pass MAX_RESULT_BYTES."""
    about = f" (about {size:,} bytes)" if size is not None else ""
    return ValueError(
        f"{what} would be larger than the {MAX_RESULT_BYTES:,}-byte limit for a tool result{about}; "
        "ask for less (a smaller input, a limit, a narrower pattern)"
    )


def ensure_result_size(size: int, what: str = "the result") -> None:
    """Raise the result-size error if an estimated output size passes MAX_RESULT_BYTES."""
    if size > MAX_RESULT_BYTES:
        raise result_too_large(size, what)


def clean_text(text: str) -> str:
    """Text that encodes as UTF-8: lone surrogates (from '\\ud800' escapes) become the visible escape `\\ud800`."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def json_ready(value: Any) -> Any:
    """A tool result made safe to send: strict JSON, valid UTF-8, bounded in depth and size.

    Floats that are not finite become the strings "NaN", "Infinity" and "-Infinity" (JSON has no such numbers);
    lone surrogates in strings and keys are escaped as text (`\\ud800`); results deeper than MAX_RESULT_DEPTH,
    holding an integer of more than MAX_RESULT_INT_BITS bits, or larger than MAX_RESULT_BYTES as JSON raise
    ValueError. The size is counted while walking, so the walk stops as soon as the limit is passed.
    """
    budget = [MAX_RESULT_BYTES]
    out = _clean(value, 0, budget)
    if budget[0] < 0:
        raise result_too_large()
    return out


def _clean(value: Any, depth: int, budget: list[int]) -> Any:
    if budget[0] < 0:
        raise result_too_large()
    if isinstance(value, str):
        budget[0] -= _utf8_size(value) + 2
        return clean_text(value)
    if isinstance(value, bool) or value is None:
        budget[0] -= 5
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_RESULT_INT_BITS:
            raise ValueError(f"the result holds an integer of {value.bit_length():,} bits, too large to show "
                             f"(limit is {MAX_RESULT_INT_BITS:,} bits, about 4,200 digits)")
        budget[0] -= value.bit_length() // 3 + 2
        return value
    if isinstance(value, float):
        budget[0] -= 24
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if depth >= MAX_RESULT_DEPTH and isinstance(value, (dict, list, tuple)):
        raise ValueError(f"the result is nested more than {MAX_RESULT_DEPTH} levels deep")
    if isinstance(value, dict):
        budget[0] -= 2
        cleaned: dict[Any, Any] = {}
        for key, item in value.items():
            key = clean_text(key) if isinstance(key, str) else key
            budget[0] -= _utf8_size(str(key)) + 4
            cleaned[key] = _clean(item, depth + 1, budget)
        return cleaned
    if isinstance(value, (list, tuple)):
        budget[0] -= 2
        return [_clean(item, depth + 1, budget) for item in value]
    return value


def bounded_tool(fn: F) -> F:
    """Wrap a tool so its result passes json_ready (the catalog applies this to every bundled tool)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return json_ready(fn(*args, **kwargs))

    return wrapper  # type: ignore[return-value]
