"""Shared guards for the example tools: input-size caps, the result-size cap, and results made safe for JSON."""

import functools
import json
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = [
    "MAX_ERROR_CHARS",
    "MAX_ITEMS",
    "MAX_RESULT_BYTES",
    "MAX_RESULT_DEPTH",
    "MAX_RESULT_INT_BITS",
    "MAX_TEXT_CHARS",
    "bounded_tool",
    "clean_text",
    "ensure_finite",
    "ensure_max_items",
    "ensure_max_length",
    "ensure_result_size",
    "json_ready",
    "quick",
    "result_too_large",
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


def ensure_finite(value: float, what: str) -> float:
    """`value`, or a ValueError when the arithmetic overflowed (inf) or became undefined (NaN): finite inputs too
    large for a float must not come back as a successful "Infinity"."""
    if not math.isfinite(value):
        raise ValueError(f"{what} is too large for a float (the inputs are too large)")
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


def _json_size(text: str) -> int:
    """Bytes of `text` as a JSON string in UTF-8 (quotes, escapes of quotes, backslashes and control characters)."""
    if text.isascii() and text.isprintable():
        return len(text) + 2 + text.count('"') + text.count("\\")
    return len(json.dumps(clean_text(text), ensure_ascii=False).encode("utf-8"))


def json_ready(value: Any) -> Any:
    """A tool result made safe to send: strict JSON, valid UTF-8, bounded in depth and size.

    Floats that are not finite become the strings "NaN", "Infinity" and "-Infinity" (JSON has no such numbers);
    lone surrogates in strings and keys are escaped as text (`\\ud800`); results deeper than MAX_RESULT_DEPTH,
    holding an integer of more than MAX_RESULT_INT_BITS bits, or larger than MAX_RESULT_BYTES as sent raise
    ValueError. The size is counted while walking, so the walk stops as soon as the limit is passed. An object is
    sent twice (as JSON text and as structured content) and JSON text is escaped once more inside the message, so
    an object may use a little under half of MAX_RESULT_BYTES, any other JSON value a little under all of it.
    """
    if isinstance(value, str):
        limit = MAX_RESULT_BYTES - _MESSAGE_ROOM
    elif isinstance(value, dict):
        limit = int(MAX_RESULT_BYTES / 2.2) - _MESSAGE_ROOM
    else:
        limit = int(MAX_RESULT_BYTES / 1.2) - _MESSAGE_ROOM
    budget = [limit]
    out = _clean(value, 0, budget)
    if budget[0] < 0:
        raise result_too_large()
    return out


# Room for the rest of the JSON-RPC message around a result.
_MESSAGE_ROOM = 1024


def _clean(value: Any, depth: int, budget: list[int]) -> Any:
    if budget[0] < 0:
        raise result_too_large()
    if isinstance(value, str):
        budget[0] -= _json_size(value)
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
            budget[0] -= _json_size(str(key)) + 4  # ": " and ", "
            cleaned[key] = _clean(item, depth + 1, budget)
        return cleaned
    if isinstance(value, (list, tuple)):
        budget[0] -= 2
        out = []
        for item in value:
            budget[0] -= 2  # ", "
            out.append(_clean(item, depth + 1, budget))
        return out
    return value


# Error messages echo inputs; a 1 MB argument must not come back as a 1 MB error.
MAX_ERROR_CHARS = 1000


def quick(fn: F) -> F:
    """Mark a tool that returns in microseconds whatever it is given (arithmetic on a few numbers, a table
    lookup): lazytools then runs it on its event loop when the arguments are small, instead of handing it to a
    worker thread, which costs more than the work (the `lazytools_inline` attribute; see
    lazytools.function_tool). Never for anything that reads files, loops over input or runs a regex."""
    fn.lazytools_inline = True  # type: ignore[attr-defined]
    return fn


def bounded_tool(fn: F) -> F:
    """Wrap a tool so its result passes json_ready and its errors are clear (the catalog wraps every bundled tool).

    Errors that would otherwise escape as something unclear become ValueError with a message: a lone surrogate in
    an argument (it cannot be encoded as UTF-8), input nested deeper than Python can follow (RecursionError), a
    number out of a float's range (OverflowError).
    Error messages are cut to MAX_ERROR_CHARS.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return json_ready(fn(*args, **kwargs))
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end] if isinstance(exc.object, str) else ""
            raise ValueError(f"an argument holds text that cannot be encoded as UTF-8 ({ascii(bad)[:40]}: "
                             "a lone surrogate); send valid Unicode text") from None
        except RecursionError:
            raise ValueError("the input is nested too deeply to process") from None
        except OverflowError as exc:
            raise ValueError(f"a number is out of range: {exc}") from None
        except ValueError as exc:
            message = str(exc)
            if len(message) <= MAX_ERROR_CHARS:
                raise
            raise ValueError(message[:MAX_ERROR_CHARS] + f"… ({len(message):,} characters in all)") from None

    return wrapper  # type: ignore[return-value]
