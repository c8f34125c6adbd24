"""What one client request may make the server keep or send back, the same on every transport.

The SDK keeps an `initialize` request's params (`clientInfo`, `capabilities`, any extra field) for the whole life of
its session, and the request itself until the session's next message, which a client need never send; it writes a
request's id into the answer, and its `progressToken` into every progress notification, whole. Without bounds one
request of a few MB costs that much for the 30 minutes an idle session lives, or comes back as large as it came.
Each transport checks its requests here before the SDK reads them and turns the `Refusal` into the JSON-RPC error
it sends (`transports/http.py`, `transports/stdio.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import pydantic_core

from ..jsonshape import NESTED, top_level
from ..safetext import holds_surrogates

__all__ = ["DEPTH_REFUSAL", "MAX_ID_CHARS", "MAX_INITIALIZE_VALUES", "MAX_JSON_DEPTH", "NESTED",
           "Refusal", "crowded_refusal", "echoable", "json_size", "refusal", "request_id", "too_deep",
           "top_level"]

MAX_ID_CHARS = 256
"""Characters of a string id or progressToken, digits of an integer one. Clients number their requests or use
UUIDs (36 characters); 256 leaves room for any prefix a client adds and keeps every answer small."""

MAX_INITIALIZE_VALUES = 256
"""JSON values (objects, arrays, strings, numbers, ...) an initialize request's params may hold. A byte bound alone
lets small values through in numbers, and each costs a Python object or more: 16 KiB of empty objects held 458 KiB
a session. A client declaring every capability of the 2025-11-25 specification, with three icons, sends 46."""


MAX_JSON_DEPTH = 200
"""Levels of arrays and objects the SDK's parser (pydantic's) reads in a message; it refuses one nested deeper as
"recursion limit exceeded", though Python's json reads deeper ones."""


def too_deep(body: bytes) -> bool:
    """Whether the JSON text `body` nests deeper than the SDK's parser reads (MAX_JSON_DEPTH). Read by that parser
    only when the text holds more brackets than the bound: a message with fewer cannot nest that deep."""
    if body.count(b"[") + body.count(b"{") <= MAX_JSON_DEPTH:
        return False
    try:
        pydantic_core.from_json(body)
    except ValueError as exc:
        return "recursion limit exceeded" in str(exc)
    return False


def crowded_refusal(count: int, most: int) -> str:
    """The words of the refusal of a message holding `count` arrays and objects, more than `most`
    (LAZYTOOLS_MAX_MESSAGE_CONTAINERS). Each is an object the garbage collector tracks, and a message is parsed three
    times before a tool sees it: 4 MiB of nested arrays (about two million) held the event loop, every session's,
    for seconds, and a worker thread would not help, as the parsers hold the GIL throughout."""
    return (f"Invalid request: it holds {count:,} arrays and objects, more than the {most:,} this server reads in "
            f"one message (LAZYTOOLS_MAX_MESSAGE_CONTAINERS)")


_ID_AT_END = re.compile(r'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,%d}")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$'
                        % MAX_ID_CHARS)
"""An id written as the outermost object's last member (the TypeScript SDK writes `{method, params, jsonrpc, id}`),
or just before its `jsonrpc`: an "id" inside the params is followed by more closing brackets."""


def request_id(text: str | bytes, *, tail: str | bytes = "") -> Any:
    """The id of the request `text` holds, read without parsing all of it: from its top level (`top_level`, within
    its first 64 KiB), else from its end (`tail`: its last characters, when `text` is only its start). None when
    neither shows one."""
    members = top_level(text)
    if members is not None and "id" in members:
        return members["id"]
    end = tail or text[-512:]
    if isinstance(end, bytes):
        end = end.decode("utf-8", "replace")
    found = _ID_AT_END.search(end[-512:])
    return json.loads(found.group(1)) if found is not None else None


DEPTH_REFUSAL = (f"Invalid request: it nests arrays and objects more than {MAX_JSON_DEPTH} levels deep, more than "
                 "this server reads")
"""The words of the refusal of a request nested deeper than MAX_JSON_DEPTH."""


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: the JSON-RPC error code and message, and whether its id may be echoed."""

    code: int
    message: str
    echo_id: bool


def _length(value: Any) -> int | None:
    """Characters of a string, digits of an integer (its sign left out), None for any other value."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return len(str(abs(value)))
    return None


def _writable(value: Any) -> bool:
    """Whether `value` can be written back: not a string holding a lone surrogate (`safetext.holds_surrogates`)."""
    return not (isinstance(value, str) and holds_surrogates(value))


def echoable(request_id: Any) -> str | int | None:
    """`request_id` when an error may carry it (a string or an integer within MAX_ID_CHARS), else None: JSON-RPC's
    id null, for a request whose id cannot be read or is not sent back."""
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return None
    length = _length(request_id)
    return request_id if length is not None and length <= MAX_ID_CHARS and _writable(request_id) else None


def json_size(value: Any) -> int:
    """Bytes of `value` as compact JSON (UTF-8): the size of a message that arrived already parsed."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:  # deeper than Python writes: larger than any bound is what matters
        return 1 << 62
    return len(text.encode("utf-8", errors="surrogatepass"))


def _more_values_than(value: Any, most: int) -> bool:
    """Whether `value` holds more than `most` JSON values, itself included; walked by hand (a deep one must not
    recurse) and only until the count passes `most`."""
    pending = [value]
    count = 0
    while pending:
        count += 1
        if count > most:
            return True
        item = pending.pop()
        if isinstance(item, Mapping):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def refusal(request_id: Any, method: Any, params: Any, *, size: Callable[[], int], max_initialize_bytes: int
            ) -> Refusal | None:
    """Why the request (a message with a method and an id, already read as JSON) is refused by these bounds, or
    None. `size` gives its bytes as it arrived, asked for only for an initialize. Notifications and answers are not
    checked: nothing of theirs is sent back, and a session keeps only its last one."""
    length = _length(request_id)
    if length is not None and length > MAX_ID_CHARS:
        return Refusal(types.INVALID_REQUEST, f"Invalid Request: an id may hold at most {MAX_ID_CHARS} characters "
                                              f"(or digits); this one holds {length:,}", echo_id=False)
    if not _writable(request_id):
        # The answer carries the id: the SDK's writer cannot encode it, and on stdio that ended the server.
        return Refusal(types.INVALID_REQUEST, "Invalid Request: an id must be text that can be sent back (this one "
                                              "holds an unpaired surrogate such as \\ud800)", echo_id=False)
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    if isinstance(meta, Mapping) and not _writable(meta.get("progressToken")):
        return Refusal(types.INVALID_PARAMS, "Invalid params: a progressToken must be text that can be sent back "
                                             "(this one holds an unpaired surrogate such as \\ud800)", echo_id=True)
    token = _length(meta.get("progressToken")) if isinstance(meta, Mapping) else None
    if token is not None and token > MAX_ID_CHARS:
        return Refusal(types.INVALID_PARAMS, f"Invalid params: a progressToken may hold at most {MAX_ID_CHARS} "
                                             f"characters (or digits); this one holds {token:,}", echo_id=True)
    if method != "initialize":
        return None
    taken = size()
    if taken > max_initialize_bytes:
        return Refusal(types.INVALID_PARAMS, f"Invalid params: an initialize request may take at most "
                                             f"{max_initialize_bytes:,} bytes (LAZYTOOLS_MAX_INITIALIZE_BYTES); this "
                                             f"one takes {taken:,}. The server keeps its clientInfo and capabilities "
                                             f"for the whole session", echo_id=True)
    if _more_values_than(params, MAX_INITIALIZE_VALUES):
        return Refusal(types.INVALID_PARAMS, f"Invalid params: an initialize request's params may hold at most "
                                             f"{MAX_INITIALIZE_VALUES} JSON values; these hold more. The server keeps "
                                             f"its clientInfo and capabilities for the whole session", echo_id=True)
    return None
