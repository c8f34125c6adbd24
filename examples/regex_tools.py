"""Regular-expression tools; matching runs in a child process with a timeout to stop runaway patterns."""

import re
from typing import Annotated, Any, Literal

from pydantic import Field

from . import _regex_runner

__all__ = [
    "regex_test",
    "regex_find_all",
    "regex_replace",
    "regex_split",
    "regex_escape",
    "regex_validate",
    "regex_explain_flags",
]

_MAX_PATTERN = 1000
_MAX_TEXT = 1_000_000
_MAX_REPLACEMENT = 10_000
_FLAG_LETTERS: dict[str, tuple[re.RegexFlag, str]] = {
    "i": (re.IGNORECASE, "IGNORECASE: letters match regardless of case"),
    "m": (re.MULTILINE, "MULTILINE: ^ and $ match at the start/end of every line"),
    "s": (re.DOTALL, "DOTALL: . also matches newlines"),
    "x": (re.VERBOSE, "VERBOSE: whitespace and # comments in the pattern are ignored"),
    "a": (re.ASCII, "ASCII: \\w, \\d, \\s and \\b match ASCII characters only"),
}

Pattern = Annotated[str, Field(description="Python regular expression, e.g. '(\\d{4})-(\\d{2})'.")]
Text = Annotated[str, Field(description="Text to search.")]
Flags = Annotated[str, Field(description="Flag letters: i=ignore case, m=multiline, s=dot matches newline, x=verbose, a=ASCII.")]


def _flag_value(flags: str) -> int:
    if len(flags) > 10:
        raise ValueError("flags is too long: give each letter once, e.g. 'im'")
    value = 0
    for letter in flags.lower():
        if letter not in _FLAG_LETTERS:
            raise ValueError(f"unknown flag {letter!r}; use any of: {''.join(_FLAG_LETTERS)}")
        value |= _FLAG_LETTERS[letter][0]
    return value


def _compile(pattern: str, flags: str) -> re.Pattern[str]:
    if len(pattern) > _MAX_PATTERN:
        raise ValueError(f"pattern is too long (limit is {_MAX_PATTERN} characters)")
    flag_value = _flag_value(flags)
    try:
        compiled = re.compile(pattern, flag_value)
    except re.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from None
    return compiled


def _check_text(text: str) -> None:
    if len(text) > _MAX_TEXT:
        raise ValueError(f"text is too long for regex search (limit is {_MAX_TEXT} characters)")


def regex_test(
    pattern: Pattern,
    text: Text,
    flags: Flags = "",
    mode: Annotated[
        Literal["search", "match", "fullmatch"],
        Field(description="search = anywhere, match = at the start, fullmatch = the whole text."),
    ] = "search",
) -> dict[str, Any]:
    """Test whether a regular expression matches a text and return the first match with its capture groups."""
    compiled = _compile(pattern, flags)
    _check_text(text)
    return _regex_runner.run_regex({"op": mode, "pattern": pattern, "flags": compiled.flags, "text": text})


def regex_find_all(
    pattern: Pattern,
    text: Text,
    flags: Flags = "",
    max_matches: Annotated[int, Field(description="Stop after this many matches.", ge=1, le=10_000)] = 100,
) -> dict[str, Any]:
    """Find all matches of a regular expression in a text, with positions and capture groups."""
    compiled = _compile(pattern, flags)
    _check_text(text)
    request = {"op": "finditer", "pattern": pattern, "flags": compiled.flags, "text": text, "limit": max_matches}
    return _regex_runner.run_regex(request)


def regex_replace(
    pattern: Pattern,
    replacement: Annotated[str, Field(description="Replacement; use \\1 or \\g<name> to insert captured groups.")],
    text: Text,
    flags: Flags = "",
    count: Annotated[int, Field(description="Maximum replacements; 0 replaces all.", ge=0)] = 0,
) -> dict[str, Any]:
    """Search and replace text using a regular expression, with backreferences to captured groups."""
    compiled = _compile(pattern, flags)
    _check_text(text)
    if len(replacement) > _MAX_REPLACEMENT:
        raise ValueError(f"replacement is too long (limit is {_MAX_REPLACEMENT} characters)")
    # More replacements than the text has places is "all" (and a count past C's ssize_t overflowed in re).
    count = min(count, len(text) + 1)
    request = {"op": "subn", "pattern": pattern, "flags": compiled.flags, "text": text, "replacement": replacement, "count": count}
    return _regex_runner.run_regex(request)


def regex_split(
    pattern: Pattern,
    text: Text,
    flags: Flags = "",
    max_split: Annotated[int, Field(description="Maximum number of splits; 0 means no limit.", ge=0)] = 0,
) -> list[str]:
    """Split a text into parts wherever a regular expression matches."""
    compiled = _compile(pattern, flags)
    _check_text(text)
    max_split = min(max_split, len(text) + 1)  # as for regex_replace's count
    request = {"op": "split", "pattern": pattern, "flags": compiled.flags, "text": text, "count": max_split}
    parts: list[str] = _regex_runner.run_regex(request)["parts"]
    return parts


def regex_escape(
    text: Annotated[str, Field(description="Literal text to match exactly.")],
) -> str:
    """Escape special characters so a literal text can be used safely inside a regular expression."""
    if len(text) > _MAX_TEXT:
        raise ValueError(f"text is too long (limit is {_MAX_TEXT} characters)")
    return re.escape(text)


def regex_validate(pattern: Pattern, flags: Flags = "") -> dict[str, Any]:
    """Check whether a regular expression is valid, and list its capture groups or the error position."""
    try:
        compiled = _compile(pattern, flags)
    except ValueError as exc:
        position = getattr(exc.__context__, "pos", None)
        return {"valid": False, "error": str(exc), "error_position": position}
    names = {index: name for name, index in compiled.groupindex.items()}
    return {
        "valid": True,
        "group_count": compiled.groups,
        "groups": [{"index": i, "name": names.get(i)} for i in range(1, compiled.groups + 1)],
        "flags": [_FLAG_LETTERS[letter][1] for letter in dict.fromkeys(flags.lower())],
    }


def regex_explain_flags(
    flags: Annotated[str, Field(description="Flag letters to explain, e.g. 'im'. Empty explains all flags.")] = "",
) -> dict[str, str]:
    """Explain what regular expression flag letters (i, m, s, x, a) do."""
    _flag_value(flags)
    letters = dict.fromkeys(flags.lower()) if flags else _FLAG_LETTERS
    return {letter: _FLAG_LETTERS[letter][1] for letter in letters}
