"""Resource URIs as a server acts on them, for exclusions: the forms compared, and what is refused outright.

A read reaches its server with the URI as the client wrote it, but the router's template match and the server
percent-decode it: `docs://page/%73ecrets` is `docs://page/secrets` to both, `file:///a/%2E%2E/b` is `file:///b`
to a file server. So an exclusion is checked against every form a server may act on, and matches if any form does:
the URI as written, its RFC 3986 normalised form (scheme in lower case, escapes of unreserved characters decoded and
the other escapes' hex in upper case, runs of `/` collapsed), and that form fully percent-decoded. The forms keep
their case: a deny or an exclusion compares them case-insensitively (a case-insensitive file system reads `PRIVATE`
as `private`), an allow case-sensitively (the server receives `HANDBOOK`, not `handbook`).

A URI whose meaning depends on who parses it cannot be compared at all, and is refused where exclusions or a
policy's resource rules apply: a `.` or `..` segment, raw or encoded, anywhere after `scheme:` (RFC 3986 reads
`docs://handbook/../secret` as the host `handbook`, while a template `docs://{+path}` reads `handbook/../secret`
as a path and a server may resolve it to `secret`; `docs://./secret` likewise), an escape that is not `%` and two
hex digits, an encoded `/`, `\\` or `%` (one decoding more makes a new segment or a new escape), an encoded or raw
control character (`%00` cuts a C string short), a raw `\\`. A server without exclusions gets URIs as they are:
there is nothing to bypass.
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
_SEGMENT_BREAK = re.compile(r"[/?#]")
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


def _refuse_dot_segments(rest: str) -> None:
    """Raise for a `.` or `..` segment (raw or percent-encoded) in `rest`, the URI after its scheme, authority
    included: whether it is a host or a path segment depends on the parser, so no reading of it is safe."""
    for segment in _SEGMENT_BREAK.split(rest):
        if _decode_unreserved(segment) in (".", ".."):
            raise UnsafeUriError("a '.' or '..' segment")


def _collapse_slashes(path: str) -> str:
    """`path` with runs of `/` made one (servers and file systems read `a//b` as `a/b`)."""
    return re.sub(r"/{2,}", "/", path)


def normalised(uri: str) -> str:
    """`uri` after RFC 3986 syntax-based normalisation (see the module's docstring), case kept but the scheme's;
    raises UnsafeUriError for a URI that cannot be compared safely."""
    if any(ord(char) < 0x20 or ord(char) == 0x7F or char == "\\" for char in uri):
        raise UnsafeUriError("a control character or backslash")
    match = _PARTS.match(uri)
    if match is None:  # pragma: no cover - the pattern matches every string
        raise UnsafeUriError("not a URI")
    scheme, authority, path, query, fragment = match.groups()
    _refuse_dot_segments(uri[len(scheme) + 1:] if scheme else uri)
    out = f"{scheme.lower()}:" if scheme else ""
    if authority is not None:
        userinfo, at, host = authority.rpartition("@")
        out += "//" + _decode_unreserved(userinfo) + at + _decode_unreserved(host)
    out += _collapse_slashes(_decode_unreserved(path))
    out += _decode_unreserved(query or "") + _decode_unreserved(fragment or "")
    return out


def uri_forms(uri: str) -> tuple[str, ...]:
    """The forms of `uri` that exclusions and a policy's resource rules are checked against, case kept (see the
    module's docstring): the one function every check of a resource URI goes through. Raises UnsafeUriError for a
    URI that cannot be compared safely."""
    form = normalised(uri)
    return tuple(dict.fromkeys((uri, form, unquote(form))))
