"""Untrusted text made safe to log or echo (escaped, cut: one helper), and session ids kept out of INFO logs.

A tool name, group or argument comes from a client or an upstream server. Logged as it is, a newline in it forges a
log line and a 3 MB name makes a 3 MB line; echoed in an error, it sends the model's own 3 MB back to it.
"""

from __future__ import annotations

import logging
import re

__all__ = ["ECHO_LIMIT", "SessionIdRedactor", "clip", "escape", "redact_session_ids"]

ECHO_LIMIT = 200
"""Characters of an untrusted value kept in a log line or an error message."""

# C0 and C1 controls, DEL, the Unicode line and paragraph separators, lone surrogates (not encodable as UTF-8), and
# the invisible characters that change what a reader sees: zero-width spaces and joiners, direction marks, embeddings,
# overrides and isolates (U+202E shows "exe.txt" as "txt.exe"), the word joiner, the byte-order mark and the tag
# characters (U+E0000-E007F spell hidden ASCII a model reads but a person does not see).
_UNSAFE = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
    r"\ud800-\udfff\U000e0000-\U000e007f]"
)


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape(text: str) -> str:
    """`text` with every unsafe character (see `_UNSAFE`) written as a visible escape, nothing cut."""
    return _UNSAFE.sub(_escape, text)


def clip(value: object, limit: int = ECHO_LIMIT) -> str:
    """`value` (its str, or its repr when it is not a string) on one line, at most `limit` characters of it kept,
    with what was cut counted: safe to put in a log line or an error message."""
    text = value if isinstance(value, str) else repr(value)
    cut = len(text) - limit
    if cut > 0:
        text = text[:limit]
    text = escape(text)
    return f"{text}… (+{cut:,} chars)" if cut > 0 else text


class SessionIdRedactor(logging.Filter):
    """Cuts session ids in the SDK's INFO lines to their first 8 characters: over HTTP a session id is a bearer
    credential (whoever holds it acts in that session), and INFO logs are shipped and read widely."""

    _ID = re.compile(r"(?i)(session(?: id)?:?\s+)([^\s:]{8})[^\s:]*")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.INFO:
            message = record.getMessage()
            redacted = self._ID.sub(r"\1\2…", message)
            if redacted != message:
                record.msg, record.args = redacted, None
        return True


_REDACTED_LOGGERS = ("mcp.server.streamable_http_manager", "mcp.server.streamable_http", "mcp.client.streamable_http")
"""The SDK's loggers that print whole session ids at INFO (servers' own and upstreams')."""


def redact_session_ids() -> None:
    """Install `SessionIdRedactor` on the SDK's loggers (idempotent)."""
    for name in _REDACTED_LOGGERS:
        target = logging.getLogger(name)
        if not any(isinstance(f, SessionIdRedactor) for f in target.filters):
            target.addFilter(SessionIdRedactor())
