"""Resource URIs as a server acts on them, for exclusions: the forms compared, and what is refused outright.

A read reaches its server with the URI as the client wrote it, but the router's template match and the server
percent-decode it: `docs://page/%73ecrets` is `docs://page/secrets` to both, `file:///a/%2E%2E/b` is `file:///b`
to a file server. So an exclusion is checked against every form a server may act on, and matches if any form does:
the URI as written, its RFC 3986 normalised form (scheme and host in lower case, escapes of unreserved characters
decoded and the other escapes' hex in upper case, dot segments removed, runs of `/` collapsed), and that form fully
percent-decoded, each compared case-insensitively (a case-insensitive file system reads `PRIVATE` as `private`).

A URI whose decoding changes its structure cannot be compared that way, and is refused by a server that has
exclusions: an escape that is not `%` and two hex digits, an encoded `/`, `\\` or `%` (one decoding more makes a
new segment or a new escape), an encoded or raw control character (`%00` cuts a C string short), a raw `\\`.
A server without exclusions gets URIs as they are: there is nothing to bypass.
"""

from __future__ import annotations

import re
import string
from urllib.parse import unquote

__all__ = ["UnsafeUriError", "normalised", "uri_forms"]

_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_ESCAPE = re.compile(r"%(.{0,2})", re.DOTALL)
_HEX = frozenset(string.hexdigits)
_STRUCTURAL = frozenset("/\\%")
_PARTS = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(\?[^#]*)?(#.*)?$", re.DOTALL)
"""RFC 3986 appendix B: scheme, authority, path, query, fragment."""


class UnsafeUriError(ValueError):
    """A URI whose percent-decoding changes its structure: refused where exclusions apply."""


def _decode_unreserved(text: str) -> str:
    def escape(match: re.Match[str]) -> str:
        digits = match.group(1)
        if len(digits) != 2 or not set(digits) <= _HEX:
            raise UnsafeUriError(f"invalid escape %{digits}")
        char = chr(int(digits, 16))
        if ord(char) < 0x20 or ord(char) == 0x7F:
            raise UnsafeUriError(f"an encoded control character (%{digits})")
        if char in _STRUCTURAL:
            raise UnsafeUriError(f"an encoded {char!r} (%{digits})")
        return char if char in _UNRESERVED else "%" + digits.upper()

    return _ESCAPE.sub(escape, text)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, with empty segments (runs of `/`) dropped too."""
    absolute = path.startswith("/")
    segments: list[str] = []
    parts = path.split("/")
    for segment in parts:
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
            continue
        segments.append(segment)
    trailing = parts[-1] in ("", ".", "..") and bool(segments)
    return ("/" if absolute else "") + "/".join(segments) + ("/" if trailing else "")


def normalised(uri: str) -> str:
    """`uri` after RFC 3986 syntax-based normalisation (see the module's docstring), case kept but the scheme's
    and host's; raises UnsafeUriError for a URI that cannot be normalised safely."""
    if any(ord(char) < 0x20 or ord(char) == 0x7F or char == "\\" for char in uri):
        raise UnsafeUriError("a control character or backslash")
    match = _PARTS.match(uri)
    if match is None:  # pragma: no cover - the pattern matches every string
        raise UnsafeUriError("not a URI")
    scheme, authority, path, query, fragment = match.groups()
    out = f"{scheme.lower()}:" if scheme else ""
    if authority is not None:
        userinfo, at, host = authority.rpartition("@")
        out += "//" + _decode_unreserved(userinfo) + at + _decode_unreserved(host).lower()
    out += _remove_dot_segments(_decode_unreserved(path))
    out += _decode_unreserved(query or "") + _decode_unreserved(fragment or "")
    return out


def uri_forms(uri: str) -> tuple[str, ...]:
    """The forms of `uri` an exclusion is checked against (lower case; see the module's docstring); raises
    UnsafeUriError for a URI that cannot be normalised safely."""
    form = normalised(uri)
    return tuple(dict.fromkeys((uri.lower(), form.lower(), unquote(form).lower())))
