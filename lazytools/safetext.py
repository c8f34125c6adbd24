"""Untrusted text made safe to log or echo (escaped, cut: one helper) or to send on (lone surrogates replaced);
session ids kept out of INFO logs, and credentials (a URL's userinfo and query values, header values) out of every
log line.

A tool name, group or argument comes from a client or an upstream server. Logged as it is, a newline in it forges a
log line and a 3 MB name makes a 3 MB line; echoed in an error, it sends the model's own 3 MB back to it.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

__all__ = [
    "ECHO_LIMIT", "SessionIdRedactor", "clip", "encodable", "encodable_json", "escape", "holds_surrogates", "json_text",
    "redact_secrets", "redact_secrets_in_logs", "redact_session_ids", "redact_url", "replace_surrogates",
]

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


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def holds_surrogates(text: str) -> bool:
    """Whether `text` holds a lone surrogate (JSON's `\\ud800` escape reads as one), which UTF-8 cannot encode."""
    return _SURROGATE.search(text) is not None


def replace_surrogates(text: str) -> tuple[str, int]:
    """`text` with pairs joined and lone surrogates replaced by U+FFFD, and how many were replaced."""
    if not holds_surrogates(text):
        return text, 0
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined, joined.count("\ufffd") - text.count("\ufffd")


def encodable(text: str) -> str:
    """`text` with each lone surrogate (a command-line argument that was not UTF-8, a config value's `\\ud800`)
    replaced by U+FFFD, one character for one, so that offsets into `text` still hold (pairs are not joined, unlike
    `replace_surrogates`): a tokenizer refuses surrogates outright, and one in a request or a tool's description
    must not stop the search."""
    return _SURROGATE.sub("\ufffd", text) if holds_surrogates(text) else text


def encodable_json(value: Any) -> tuple[Any, int]:
    """A parsed JSON value (dicts, lists, strings, numbers) with every string and key made encodable as UTF-8
    (`replace_surrogates`), and how many surrogates were replaced; `value` itself when it holds none. JSON's
    `"\\ud800"` escape parses to a lone surrogate, which no transport can write back out."""
    try:
        json.dumps(value, ensure_ascii=False, check_circular=False).encode()
        return value, 0
    except UnicodeEncodeError:
        pass
    replaced = 0

    def fix(item: Any) -> Any:
        nonlocal replaced
        if isinstance(item, str):
            text, count = replace_surrogates(item)
            replaced += count
            return text
        if isinstance(item, dict):
            return {fix(key): fix(one) for key, one in item.items()}
        if isinstance(item, list):
            return [fix(one) for one in item]
        return item

    return fix(value), replaced


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


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code >= 0x10000:  # JSON escapes a character past the BMP as its UTF-16 surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def json_text(encoded: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with every unsafe character (see `_UNSAFE`) written as
    its JSON escape: the same JSON to a parser, but a person sees no reordered or hidden text and a reader that
    splits lines (U+2028, U+0085) finds one line. Other text stays as it is."""
    return _UNSAFE.sub(_json_escape, encoded)


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


REDACTED = "***"
# Both patterns run in linear time on any text: a scheme is tried only from the start of a run of scheme characters
# and taken whole ("a.a.a.a…" would otherwise be rescanned from each dot), and quoted values are taken whole.
_URL = re.compile(r"(?i)(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]*+://[^\s\"'<>\\]*+")
_HEADER_VALUE = re.compile(r"""(?i)((?:header (?:value|name)|invalid port)\s*+:?\s*+)"""
                           r"""(b?'(?:[^'\\]|\\.)*+'|b?"(?:[^"\\]|\\.)*+"|\S++)""")
"""What h11 and httpx quote of a header they refuse ("Illegal header value b'…'", "Illegal header name b'…'"), and
of a port that is not a number ("Invalid port: '…'": the text after the first ":" of a URL's authority, which is
the password when the password holds an unencoded "/")."""


_HOST_PORT = re.compile(r"(?:\[[0-9a-fA-F:.]*+\]|[^:\[\]]*+)(?::[0-9]*+)?+")
"""An authority without userinfo: a host (a bracketed IPv6 address or a name) and an optional numeric port."""


def redact_url(url: str, *, keep_fragment: bool = False) -> str:
    """`url` with its userinfo (`user:password@`), each query value and its fragment (unless `keep_fragment`)
    replaced by `***`: an upstream's URL in a config often carries its API key there. Scheme, host, port, path and
    query names stay."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    if "@" not in rest[:cut] and not _HOST_PORT.fullmatch(rest[:cut]):
        # Not a host[:port] before the first "/": a password holding an unencoded "/" (`user:pa/ss@host`), which
        # parsers take for the start of the path. The authority then ends after the last "@" before any query or
        # fragment (a "?" or "#" in a password starts those, which are redacted anyway).
        end = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
        at = rest.rfind("@", 0, end)
        if at >= 0:
            cut = min((i for i in (rest.find("/", at), rest.find("?", at), rest.find("#", at)) if i >= 0),
                      default=len(rest))
    authority, rest = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = REDACTED + "@" + authority.rpartition("@")[2]
    elif not _HOST_PORT.fullmatch(authority):  # `user:pa?ss@host`, or a port that is no number: what follows ":"
        authority = authority.partition(":")[0] + ":" + REDACTED
    rest, hashed, kept = rest.partition("#")
    path, asked, query = rest.partition("?")
    if asked:
        items = (item.partition("=") for item in query.split("&"))
        query = "&".join(f"{name}={REDACTED}" if eq else (REDACTED if name else "") for name, eq, _ in items)
    fragment = f"#{kept if keep_fragment else REDACTED}" if hashed else ""
    return f"{scheme}://{authority}{path}{asked}{query}{fragment}"


def redact_secrets(text: str) -> str:
    """`text` with every URL in it passed through `redact_url`, and the value after "header value", "header name"
    (how h11 and httpx report a header they refuse) and "invalid port" replaced by `***`."""
    if "://" in text:
        text = _URL.sub(_redacted_url, text)
    lowered = text.lower()
    if "header value" in lowered or "header name" in lowered or "invalid port" in lowered:
        text = _HEADER_VALUE.sub(lambda match: match.group(1) + REDACTED, text)
    return text


_PRINCIPAL_KEY = "oauth:"
"""Before an issuer URL in a principal's key, `oauth:<issuer>#<subject>` (identity.py): an issuer has no fragment
(RFC 8414), so what follows its "#" is the subject, who the line is about, and stays readable."""


def _redacted_url(match: re.Match[str]) -> str:
    principal = match.string.endswith(_PRINCIPAL_KEY, 0, match.start())
    return redact_url(match.group(), keep_fragment=principal)


def _redacted(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a broken format is the handler's to report, as without us
        return
    redacted = redact_secrets(message)
    if redacted != message:
        record.msg, record.args = redacted, None


def redact_secrets_in_logs() -> None:
    """Pass every log record, whichever logger made it (lazytools', the SDK's, the HTTP client's), through
    `redact_secrets` when it is made (idempotent). A record factory rather than a filter: a logger's filter sees
    only the records made by that very logger, a handler's only those of its handler."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "lazytools_redacts", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        _redacted(record)
        return record

    factory.lazytools_redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)
