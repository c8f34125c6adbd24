"""How much a JSON text holds, read without parsing it. A parser makes one Python object per array or object, each
tracked by the garbage collector, so a text of millions of small arrays costs seconds to parse (more than its bytes
suggest) and holds whatever thread parses it: the GIL is held throughout. Counting first is a few passes in C.
An object's top-level members (`top_level`) are read the same way, without reading inside them: shared by the
transports (a request's id) and the gateway (the id of an upstream's answer that is not read)."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["NESTED", "containers", "top_level"]

_NOT_STRUCTURE = bytes(byte for byte in range(256) if byte not in b'"[{')


def containers(text: str | bytes, bound: int) -> int:
    """Arrays and objects in the JSON text `text` (its `[` and `{` outside strings), counted without parsing it:
    exact when more than `bound`; at or under it, the brackets inside strings may be counted too (the count then
    says only that the text is within the bound). The brackets are counted in C first; only when they pass `bound`
    are those inside strings taken off: escaped backslashes and quotes dropped, every byte but quotes and brackets
    dropped, then every other run between quotes (a string's contents). Never a Python loop per value."""
    raw = text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    if raw <= bound:
        return raw
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    structure = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    return len(b"".join(structure.split(b'"')[::2]))


NESTED: Any = {}
"""What `top_level` gives for a member whose value is an array or an object (it reads no deeper)."""

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]|[^\s"\[\]{}:,]+')


def top_level(text: str | bytes, most: int = 65_536) -> dict[str, Any] | None:
    """The members of the JSON object `text`, each scalar read and each array or object as NESTED, without reading
    inside them: the id and method of a request nested too deep for Python's json (about 1,000 levels: a
    RecursionError), so that its refusal carries the id its client waits on. None when `text` is not one object.
    Only the first `most` characters are read (clients write the id before the params; reading megabytes of
    brackets token by token would hold the event loop): past them, the members read so far if an id is among them
    (else None: an id may follow, so a request cannot be told from a notification)."""
    cut = len(text) > most
    text = text[:most]
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    tokens = _TOKEN.finditer(text)
    first = next(tokens, None)
    if first is None or first.group() != "{" or text[: first.start()].strip():
        return None
    members: dict[str, Any] = {}
    depth, state, key = 1, "key", ""
    try:
        for match in tokens:
            token = match.group()
            if depth > 1:
                depth += 1 if token in "[{" else -1 if token in "]}" else 0
            elif state == "key" and token.startswith('"'):
                key, state = json.loads(token), "colon"
            elif state == "colon" and token == ":":
                state = "value"
            elif state == "value" and token in "[{":
                members[key], depth, state = NESTED, 2, "comma"
            elif state == "value" and token not in "]}:,":
                members[key], state = json.loads(token), "comma"
            elif state == "comma" and token == ",":
                state = "key"
            elif token == "}" and (state == "comma" or (state == "key" and not members)):
                return members if not text[match.end():].strip() else None
            else:
                return None
    except ValueError:  # a scalar that is not JSON
        return None
    return members if cut and "id" in members else None
