"""Encoding and decoding: base64, URL percent-encoding, URL parsing, hex, HTML entities, Unicode."""

import base64
import binascii
import html
import unicodedata
import urllib.parse
from typing import Annotated, Any

from pydantic import Field

from ._common import ensure_max_length

__all__ = [
    "base64_encode",
    "base64_decode",
    "url_encode",
    "url_decode",
    "parse_url",
    "hex_encode",
    "hex_decode",
    "html_escape",
    "html_unescape",
    "unicode_char_info",
]

Text = Annotated[str, Field(description="The input text.")]


def _decoded_bytes(raw: bytes) -> dict[str, Any]:
    # Binary payloads are common (images, keys), so fall back to hex instead of failing.
    try:
        return {"text": raw.decode("utf-8"), "is_utf8": True, "hex": None, "byte_length": len(raw)}
    except UnicodeDecodeError:
        return {"text": None, "is_utf8": False, "hex": raw[:10_000].hex(), "byte_length": len(raw)}


def base64_encode(
    text: Text,
    url_safe: Annotated[bool, Field(description="Use the URL-safe alphabet (- and _ instead of + and /).")] = False,
) -> str:
    """Encode text (UTF-8) to Base64."""
    ensure_max_length(text, "text")
    raw = text.encode("utf-8")
    return (base64.urlsafe_b64encode(raw) if url_safe else base64.b64encode(raw)).decode("ascii")


def base64_decode(
    data: Annotated[str, Field(description="Base64 or base64url text; missing padding is tolerated.")],
) -> dict[str, Any]:
    """Decode Base64 (standard or URL-safe) back to text, or to hex if the content is binary."""
    ensure_max_length(data, "data")
    cleaned = "".join(data.split())
    cleaned += "=" * (-len(cleaned) % 4)
    try:
        raw = base64.b64decode(cleaned.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("input is not valid Base64") from None
    return _decoded_bytes(raw)


def url_encode(
    text: Text,
    plus_for_spaces: Annotated[bool, Field(description="Encode spaces as '+' (HTML form style) instead of %20.")] = False,
    safe: Annotated[str, Field(description="Characters to leave unencoded, e.g. '/' for paths.")] = "",
) -> str:
    """Percent-encode text for use in a URL or query string (URL encode)."""
    ensure_max_length(text, "text")
    return urllib.parse.quote_plus(text, safe=safe) if plus_for_spaces else urllib.parse.quote(text, safe=safe)


def url_decode(
    text: Annotated[str, Field(description="Percent-encoded text, e.g. 'a%20b%26c'.")],
    plus_as_space: Annotated[bool, Field(description="Treat '+' as a space (HTML form style).")] = True,
) -> str:
    """Decode percent-encoded URL text back to plain text (URL decode)."""
    ensure_max_length(text, "text")
    return urllib.parse.unquote_plus(text) if plus_as_space else urllib.parse.unquote(text)


def parse_url(
    url: Annotated[str, Field(description="An absolute URL, e.g. 'https://user@example.com:8080/p?a=1&a=2#top'.")],
) -> dict[str, Any]:
    """Split a URL into scheme, host, port, path, query parameters and fragment."""
    ensure_max_length(url, "url", 100_000)
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"invalid URL: {exc}") from None
    if not parts.scheme or not parts.netloc:
        raise ValueError("URL must be absolute, like 'https://example.com/path'")
    return {
        "scheme": parts.scheme,
        "username": parts.username,
        "host": parts.hostname,
        "port": port,
        "path": parts.path,
        "query": parts.query,
        "query_params": urllib.parse.parse_qs(parts.query, keep_blank_values=True),
        "fragment": parts.fragment,
    }


def hex_encode(
    text: Text,
    separator: Annotated[str, Field(description="Optional text placed between bytes, e.g. ' ' or ':'.")] = "",
) -> str:
    """Encode text (UTF-8) as hexadecimal bytes."""
    ensure_max_length(text, "text")
    raw = text.encode("utf-8")
    return raw.hex(separator) if separator else raw.hex()


def hex_decode(
    data: Annotated[str, Field(description="Hex digits; spaces, colons and a 0x prefix are ignored.")],
) -> dict[str, Any]:
    """Decode hexadecimal bytes back to text (UTF-8), or report the bytes if they are not text."""
    ensure_max_length(data, "data")
    cleaned = data.strip().removeprefix("0x").removeprefix("0X")
    cleaned = "".join(ch for ch in cleaned if ch not in " :-\n\t")
    try:
        raw = bytes.fromhex(cleaned)
    except ValueError:
        raise ValueError("input is not valid hex (needs an even number of 0-9/a-f digits)") from None
    return _decoded_bytes(raw)


def html_escape(
    text: Text,
    quote: Annotated[bool, Field(description="Also escape double and single quotes.")] = True,
) -> str:
    """Escape special HTML characters (&, <, >, quotes) as HTML entities."""
    ensure_max_length(text, "text")
    return html.escape(text, quote=quote)


def html_unescape(text: Text) -> str:
    """Convert HTML entities such as &amp;, &lt;, &#39; and &eacute; back to plain characters."""
    ensure_max_length(text, "text")
    return html.unescape(text)


def unicode_char_info(
    text: Annotated[str, Field(description="Characters to inspect (up to 200).", max_length=200)],
) -> list[dict[str, Any]]:
    """Show the Unicode code point, name, category and UTF-8 bytes of each character in a text."""
    if len(text) > 200:
        raise ValueError("text is too long (limit is 200 characters)")
    return [
        {
            "char": ch,
            "code_point": f"U+{ord(ch):04X}",
            "decimal": ord(ch),
            "name": unicodedata.name(ch, "<unnamed>"),
            "category": unicodedata.category(ch),
            "utf8_hex": ch.encode("utf-8", "surrogatepass").hex(" "),
        }
        for ch in text
    ]
