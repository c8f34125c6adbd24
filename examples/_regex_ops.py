"""Regex operations executed in a child interpreter; this file must import only the standard library.

It is run as a script (`python -I -S _regex_ops.py`): stdin holds one line of JSON (the request), then, for "grep",
the raw bytes of the files to search back to back (their sizes are in the request). Its output is bounded: an
operation whose result would pass the request's "max_bytes" stops with an error instead of building it, and the
script limits its own address space, so neither time (the parent's timeout) nor memory is unbounded.
"""

import json
import re
import sys
from typing import Any

__all__ = ["MEMORY_LIMIT_BYTES", "run"]

# The child's address-space limit: ample for a 1 MB text and a few MB of results, far below the machine.
MEMORY_LIMIT_BYTES = 1 << 30


class _TooLarge(Exception):
    pass


def _span_size(m: "re.Match[str]") -> int:
    # Measured from the spans, before any group text is copied out of the subject.
    size = 64 + (m.end() - m.start())
    for index in range(1, (m.re.groups or 0) + 1):
        start, end = m.span(index)
        size += 8 + (end - start if start >= 0 else 0)
    for index in m.re.groupindex.values():  # named groups are listed twice
        start, end = m.span(index)
        size += 8 + (end - start if start >= 0 else 0)
    return size


def _describe(m: "re.Match[str]") -> dict[str, Any]:
    return {
        "match": m.group(0),
        "start": m.start(),
        "end": m.end(),
        "groups": list(m.groups()),
        "named_groups": m.groupdict(),
    }


def _spend(budget: list[int], size: int) -> None:
    budget[0] -= size
    if budget[0] < 0:
        raise _TooLarge


def run(req: dict[str, Any], blobs: "list[bytes] | None" = None) -> dict[str, Any]:
    """Perform the operation described by req and return a JSON-ready result (or {"error": ...})."""
    try:
        return _run(req, blobs or [])
    except _TooLarge:
        limit = req.get("max_bytes", 0)
        return {"error": f"the result would be larger than the {limit:,}-byte limit for a tool result; "
                         "ask for fewer matches, a shorter text or a narrower pattern", "too_large": True}


def _run(req: dict[str, Any], blobs: "list[bytes]") -> dict[str, Any]:
    rx = re.compile(req["pattern"], req["flags"])
    op, text = req["op"], req.get("text", "")
    # JSON escapes can make a character up to 6 bytes; "\n" and quotes 2. Counting characters with a margin of
    # a quarter keeps the cap honest for ordinary text without re-encoding every piece.
    budget = [int(req.get("max_bytes", 1 << 62) * 0.75)]
    if op in ("search", "match", "fullmatch"):
        m = getattr(rx, op)(text)
        if m is not None:
            _spend(budget, _span_size(m))
        return {"matched": m is not None, **(_describe(m) if m else {})}
    if op == "finditer":
        found: list[dict[str, Any]] = []
        for m in rx.finditer(text):
            if len(found) >= req["limit"]:
                return {"count": len(found), "truncated": True, "matches": found}
            _spend(budget, _span_size(m))
            found.append(_describe(m))
        return {"count": len(found), "truncated": False, "matches": found}
    if op == "subn":
        def expand(m: "re.Match[str]") -> str:
            # Expanding one match at a time lets the size be checked before the whole text is built.
            piece = m.expand(req["replacement"])
            _spend(budget, len(piece) - (m.end() - m.start()))
            return piece

        _spend(budget, len(text))
        replacement = req["replacement"]
        most = req["count"] or len(text) + 1  # matches there can be at most
        try:
            rx.sub(replacement, "")  # a broken template is refused even when nothing matches
            if "\\" not in replacement and most * len(replacement) <= budget[0]:
                # A literal replacement whose worst case fits: the C loop, no per-match call.
                result, n = rx.subn(replacement, text, count=req["count"])
            else:
                result, n = rx.subn(expand, text, count=req["count"])
        except (re.error, IndexError) as exc:
            return {"error": f"invalid replacement template: {exc}"}
        return {"text": result, "replacements": n}
    if op == "split":
        parts: list[str] = []
        last = 0
        for done, m in enumerate(rx.finditer(text)):
            if req["count"] and done >= req["count"]:
                break
            _spend(budget, _span_size(m) + (m.start() - last))
            parts.append(text[last : m.start()])
            parts.extend("" if g is None else g for g in m.groups())
            last = m.end()
        parts.append(text[last:])
        return {"parts": parts}
    if op == "grep":
        hits: list[list[Any]] = []
        for index, blob in enumerate(blobs):
            for number, line in enumerate(blob.decode("utf-8", errors="replace").splitlines(), 1):
                if rx.search(line):
                    hits.append([index, number, line[:500]])
                    if len(hits) >= req["limit"]:
                        return {"hits": hits, "truncated": True}
        return {"hits": hits, "truncated": False}
    return {"error": f"unknown operation {op!r}"}


def _main() -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    except (ImportError, ValueError, OSError):
        pass  # not on this platform: the parent's timeout still bounds the run
    stream = sys.stdin.buffer
    req = json.loads(stream.readline())
    blobs = [stream.read(size) for size in req.pop("sizes", [])]
    try:
        answer = run(req, blobs)
    except MemoryError:
        answer = {"error": "the regular expression used too much memory and was stopped", "too_large": True}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    _main()
