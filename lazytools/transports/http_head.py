"""What the checks in front of `/mcp` read of a request's headers, read in one pass over them per request.

The header count and size (http_limits.py), Host, Origin and the token (http_guard.py), the body's type and length
and the session (http.py, and the session table in http_sessions.py) are all read from one `Head`, made by whichever
of them comes first and left on the ASGI scope for the others: building a Starlette `Headers` in each layer decoded
and searched every header again and again. ASGI servers give header names lowercased (uvicorn does, with either
parser), which the names below are.
"""

from __future__ import annotations

from starlette.types import Scope

__all__ = ["HEAD_KEY", "Head", "head_of"]

HEAD_KEY = "lazytools.head"
"""The ASGI scope key under which a request's `Head` is kept once read."""

_HOST, _ORIGIN, _AUTHORIZATION, _CONTENT_TYPE, _CONTENT_LENGTH, _SESSION, _VERSION = range(7)
_READ = {b"host": _HOST, b"origin": _ORIGIN, b"authorization": _AUTHORIZATION, b"content-type": _CONTENT_TYPE,
         b"content-length": _CONTENT_LENGTH, b"mcp-session-id": _SESSION, b"mcp-protocol-version": _VERSION}


class Head:
    """A request's header fields as the edge's checks read them (values decoded as latin-1, as Starlette does).

    Where a field may come more than once and the checks read only one, it is the first, as `Headers.get` reads
    it; every Host and every Origin is kept, since more than one is itself a reason to refuse."""

    __slots__ = ("authorization", "content_length", "content_type", "count", "hosts", "origins", "plain_type",
                 "session", "session_id", "size", "version")

    def __init__(self, scope: Scope) -> None:
        headers = scope.get("headers", ())
        self.count: int = len(headers)
        """How many header fields."""
        self.hosts: list[str] = []
        self.origins: list[str] = []
        self.authorization: str | None = None
        self.content_type: str | None = None
        self.content_length: str | None = None
        self.version: str | None = None
        """MCP-Protocol-Version, which the SDK routes the request by."""
        self.session = False
        """Whether an Mcp-Session-Id came."""
        self.session_id: str | None = None
        """The first Mcp-Session-Id (the session table orders its sessions by their requests)."""
        self.plain_type = True
        """Whether every Content-Type's media type is spelled lowercase already (see `McpEndpoint`)."""
        # About the bytes of the request line and headers on the wire: `name: value` and CRLF for each field.
        size = (len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") + len(scope["method"])
                + 12 + 4 * len(headers))
        read = _READ.get
        for name, value in headers:
            size += len(name) + len(value)
            field = read(name)
            if field is None:
                continue
            if field == _HOST:
                self.hosts.append(value.decode("latin-1"))
            elif field == _ORIGIN:
                self.origins.append(value.decode("latin-1"))
            elif field == _CONTENT_TYPE:
                media = value.partition(b";")[0]
                if media != media.strip().lower():
                    self.plain_type = False
                if self.content_type is None:
                    self.content_type = value.decode("latin-1")
            elif field == _SESSION:
                self.session = True
                if self.session_id is None:
                    self.session_id = value.decode("latin-1")
            elif field == _AUTHORIZATION:
                if self.authorization is None:
                    self.authorization = value.decode("latin-1")
            elif field == _CONTENT_LENGTH:
                if self.content_length is None:
                    self.content_length = value.decode("latin-1")
            elif self.version is None:
                self.version = value.decode("latin-1")
        self.size: int = size


def head_of(scope: Scope) -> Head:
    """The request's `Head`: read from its headers the first time, then kept on the scope."""
    head = scope.get(HEAD_KEY)
    if not isinstance(head, Head):
        head = scope[HEAD_KEY] = Head(scope)
    return head
