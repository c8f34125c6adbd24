"""How much a JSON text holds, read without parsing it. A parser makes one Python object per array or object, each
tracked by the garbage collector, so a text of millions of small arrays costs seconds to parse (more than its bytes
suggest) and holds whatever thread parses it: the GIL is held throughout. Counting first is a few passes in C."""

from __future__ import annotations

__all__ = ["containers"]

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
