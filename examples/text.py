"""Text utilities: counting, case conversion, slugs, wrapping, diffs, extraction."""

import difflib
import re
import textwrap
import unicodedata
from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import Field

from ._common import MAX_RESULT_BYTES, ensure_max_length, result_too_large

__all__ = [
    "count_text_stats",
    "word_frequency",
    "slugify_text",
    "convert_case",
    "reverse_text",
    "truncate_text",
    "wrap_text",
    "diff_texts",
    "find_and_replace",
    "extract_emails",
    "extract_urls",
]

Text = Annotated[str, Field(description="The input text.")]

_WORD_RE = re.compile(r"\b[\w'’-]+\b")
# Every pattern here runs in linear time on any input (tests/examples/test_adversarial.py tries the worst ones).
# A run of end marks is matched only from its first character and never given back: "[.!?]+(?=\s|$)" alone
# retried from every dot of a long run of dots, which is quadratic.
_SENTENCE_END_RE = re.compile(r"(?<![.!?])[.!?]++(?=\s|$)")
# An address starts where a run of address characters starts (leading punctuation skipped) and the local part is
# taken whole: "\b[A-Za-z0-9._%+-]+@" alone restarted at every word boundary of a long run such as "a.a.a.a".
_EMAIL_RE = re.compile(r"(?<![A-Za-z0-9._%+-])[._%+-]*+([A-Za-z0-9][A-Za-z0-9._%+-]*+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b)")
_URL_RE = re.compile(r"\b(?:https?|ftp)://[^\s<>\"'`]+|\bwww\.[^\s<>\"'`]+", re.IGNORECASE)
# Punctuation that commonly follows a URL in prose but is rarely part of it.
_URL_TRAILING = ".,;:!?)]}'\""
DIFF_MAX_LINES = 5_000
"""Lines of each text `diff_texts` compares at most (see there why)."""


def count_text_stats(text: Text) -> dict[str, Any]:
    """Word count: count the words, characters, lines, sentences and paragraphs in a text and estimate reading time."""
    ensure_max_length(text, "text")
    words = _WORD_RE.findall(text)
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    return {
        "characters": len(text),
        "characters_without_spaces": sum(1 for c in text if not c.isspace()),
        "words": len(words),
        "lines": len(text.splitlines()),
        "sentences": len(_SENTENCE_END_RE.findall(text)) or (1 if words else 0),
        "paragraphs": len(paragraphs),
        "average_word_length": round(sum(len(w) for w in words) / len(words), 2) if words else 0.0,
        # 200 words per minute is the usual figure for silent reading.
        "reading_time_minutes": round(len(words) / 200, 2),
    }


def word_frequency(
    text: Text,
    top: Annotated[int, Field(description="How many of the most frequent words to return.", ge=1, le=1000)] = 10,
    case_sensitive: Annotated[bool, Field(description="Treat 'Word' and 'word' as different words.")] = False,
    min_length: Annotated[int, Field(description="Ignore words shorter than this many characters.", ge=1)] = 1,
) -> list[dict[str, Any]]:
    """Find the most frequent words in a text with their counts."""
    ensure_max_length(text, "text")
    words = _WORD_RE.findall(text if case_sensitive else text.lower())
    counts = Counter(w for w in words if len(w) >= min_length)
    return [{"word": w, "count": n} for w, n in counts.most_common(top)]


def slugify_text(
    text: Text,
    separator: Annotated[str, Field(description="Character placed between words.")] = "-",
    max_length: Annotated[int, Field(description="Maximum slug length; 0 means unlimited.", ge=0)] = 0,
) -> str:
    """Turn a title or phrase into a URL-friendly lowercase ASCII slug, e.g. 'Hello World!' -> 'hello-world'."""
    ensure_max_length(text, "text")
    if len(separator) > 3:
        raise ValueError("separator must be at most 3 characters long")
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = separator.join(re.findall(r"[a-z0-9]+", ascii_text.lower()))
    if max_length and len(slug) > max_length:
        slug = slug[:max_length].rstrip(separator) if separator else slug[:max_length]
    return slug


def _split_words(text: str) -> list[str]:
    # Insert breaks at camelCase / PascalCase / acronym boundaries before splitting.
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    # A lookaround pair is checked once per position; "([A-Z]+)([A-Z][a-z])" rescanned a long capital run from
    # every letter of it (quadratic).
    spaced = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])", " ", spaced)
    return [w for w in re.split(r"[\W_]+", spaced) if w]


def convert_case(
    text: Text,
    style: Annotated[
        Literal["snake", "camel", "pascal", "kebab", "constant", "title", "sentence", "upper", "lower"],
        Field(description="Target case style, e.g. snake -> my_var, camel -> myVar, kebab -> my-var."),
    ],
) -> str:
    """Convert text or an identifier to snake_case, camelCase, PascalCase, kebab-case, CONSTANT_CASE, Title Case and more."""
    ensure_max_length(text, "text", 100_000)
    if style == "upper":
        return text.upper()
    if style == "lower":
        return text.lower()
    words = _split_words(text)
    lower = [w.lower() for w in words]
    if style == "snake":
        return "_".join(lower)
    if style == "kebab":
        return "-".join(lower)
    if style == "constant":
        return "_".join(w.upper() for w in words)
    if style == "camel":
        return (lower[0] + "".join(w.capitalize() for w in lower[1:])) if lower else ""
    if style == "pascal":
        return "".join(w.capitalize() for w in lower)
    if style == "title":
        return " ".join(w.capitalize() for w in lower)
    sentence = " ".join(lower)
    return sentence[:1].upper() + sentence[1:]


def reverse_text(
    text: Text,
    unit: Annotated[Literal["characters", "words", "lines"], Field(description="What to reverse the order of.")] = "characters",
) -> str:
    """Reverse a text by characters, by word order or by line order."""
    ensure_max_length(text, "text")
    if unit == "characters":
        return text[::-1]
    if unit == "words":
        return " ".join(reversed(text.split()))
    return "\n".join(reversed(text.splitlines()))


def truncate_text(
    text: Text,
    max_length: Annotated[int, Field(description="Maximum length of the result including the ellipsis.", ge=1)],
    ellipsis: Annotated[str, Field(description="Marker appended when the text is cut.")] = "…",
    whole_words: Annotated[bool, Field(description="Cut at a word boundary instead of mid-word.")] = True,
) -> str:
    """Shorten a text to a maximum length, adding an ellipsis and optionally cutting at a word boundary."""
    ensure_max_length(text, "text")
    if len(text) <= max_length:
        return text
    if len(ellipsis) >= max_length:
        raise ValueError("max_length must be longer than the ellipsis")
    cut = text[: max_length - len(ellipsis)]
    if whole_words and not text[len(cut)].isspace() and " " in cut.strip():
        cut = cut[: cut.rstrip().rfind(" ")]
    return cut.rstrip() + ellipsis


def wrap_text(
    text: Text,
    width: Annotated[int, Field(description="Maximum line width in characters.", ge=5, le=1000)] = 80,
    indent: Annotated[str, Field(description="Prefix added to every wrapped line.")] = "",
) -> str:
    """Word-wrap a text to a given line width, keeping paragraphs separated by blank lines."""
    ensure_max_length(text, "text")
    ensure_max_length(indent, "indent", 100)  # it is repeated on every line
    paragraphs = re.split(r"\n\s*\n", text)
    wrapped = [
        textwrap.fill(" ".join(p.split()), width=width, initial_indent=indent, subsequent_indent=indent)
        for p in paragraphs
    ]
    return "\n\n".join(wrapped)


def diff_texts(
    old_text: Annotated[str, Field(description="The original text.")],
    new_text: Annotated[str, Field(description="The changed text.")],
    context_lines: Annotated[int, Field(description="Unchanged lines shown around each change.", ge=0, le=100)] = 3,
    old_label: Annotated[str, Field(description="Name shown for the original in the diff header.")] = "old",
    new_label: Annotated[str, Field(description="Name shown for the changed text in the diff header.")] = "new",
) -> dict[str, Any]:
    """Compare two texts line by line and return a unified diff with counts of added and removed lines."""
    ensure_max_length(old_text, "old_text", 200_000)
    ensure_max_length(new_text, "new_text", 200_000)
    old_lines, new_lines = old_text.splitlines(), new_text.splitlines()
    # difflib's time grows with the product of the line counts: 40,000 one-character lines a side, alternately
    # equal, took 82 s of CPU; at this bound the worst case measured is under 3 s (on a busy machine).
    for name, side in (("old_text", old_lines), ("new_text", new_lines)):
        if len(side) > DIFF_MAX_LINES:
            raise ValueError(f"{name} has too many lines: {len(side)} (limit is {DIFF_MAX_LINES})")
    lines = list(difflib.unified_diff(old_lines, new_lines, old_label, new_label, n=context_lines, lineterm=""))
    body = [line for line in lines if not line.startswith(("---", "+++"))]
    return {
        "identical": old_text == new_text,
        "added_lines": sum(1 for line in body if line.startswith("+")),
        "removed_lines": sum(1 for line in body if line.startswith("-")),
        "diff": "\n".join(lines),
    }


def find_and_replace(
    text: Text,
    find: Annotated[str, Field(description="Literal text to look for (not a regular expression).")],
    replace: Annotated[str, Field(description="Text to put in its place.")],
    case_sensitive: Annotated[bool, Field(description="Match letter case exactly.")] = True,
    whole_word: Annotated[bool, Field(description="Only replace matches that are whole words.")] = False,
    max_replacements: Annotated[int, Field(description="Stop after this many replacements; 0 means all.", ge=0)] = 0,
) -> dict[str, Any]:
    """Find and replace literal text, optionally case-insensitive or whole words only, and report how many were replaced."""
    ensure_max_length(text, "text")
    if not find:
        raise ValueError("find must not be empty")
    ensure_max_length(find, "find", 10_000)
    subject, needle = text, find
    if not case_sensitive and len(text.lower()) == len(text) and len(find.lower()) == len(find):
        # Searching lower-cased copies is linear; re.IGNORECASE on a long literal compares it at every position
        # (a 1,000-character find in 1 MB of text took 2.8 s). Equal lengths keep positions the same.
        subject, needle = text.lower(), find.lower()
    pattern = re.escape(needle)
    if whole_word:
        pattern = rf"\b{pattern}\b"
    flags = 0 if case_sensitive or subject is not text else re.IGNORECASE
    if flags and len(text) * len(find) > 20_000_000:
        raise ValueError("text and find are too long for a case-insensitive search of this text; shorten them")
    compiled = re.compile(pattern, flags)
    pieces: list[str] = []
    size, last, count = 0, 0, 0
    for match in compiled.finditer(subject):
        if max_replacements and count >= max_replacements:
            break
        size += (match.start() - last) + len(replace)
        if size > MAX_RESULT_BYTES:
            raise result_too_large(what="the replaced text")
        pieces.append(text[last : match.start()])
        pieces.append(replace)  # literal: backslashes in `replace` stay as they are
        last = match.end()
        count += 1
    pieces.append(text[last:])
    return {"text": "".join(pieces), "replacements": count}


def extract_emails(
    text: Text,
    unique: Annotated[bool, Field(description="Drop duplicates (case-insensitive), keeping first occurrence order.")] = True,
) -> list[str]:
    """Extract all email addresses found in a text."""
    ensure_max_length(text, "text")
    found = _EMAIL_RE.findall(text)
    return _dedupe(found, key=str.lower) if unique else found


def extract_urls(
    text: Text,
    unique: Annotated[bool, Field(description="Drop duplicate URLs, keeping first occurrence order.")] = True,
) -> list[str]:
    """Extract all web links (http, https, ftp and www. URLs) found in a text."""
    ensure_max_length(text, "text")
    found = [u.rstrip(_URL_TRAILING) for u in _URL_RE.findall(text)]
    return _dedupe(found, key=lambda s: s) if unique else found


def _dedupe(items: list[str], key: Any) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        k = key(item)
        if k not in seen:
            seen.add(k)
            out.append(item)
    return out
