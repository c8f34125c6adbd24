"""Regex operations executed in a child interpreter; this file must import only the standard library.

It is run as a script (`python -I -S _regex_ops.py`) with a JSON request on stdin, so it cannot
rely on the package or on pydantic being importable.
"""

import json
import re
import sys
from typing import Any

__all__ = ["run"]


def _describe(m: "re.Match[str]") -> dict[str, Any]:
    return {
        "match": m.group(0),
        "start": m.start(),
        "end": m.end(),
        "groups": list(m.groups()),
        "named_groups": m.groupdict(),
    }


def run(req: dict[str, Any]) -> dict[str, Any]:
    """Perform the operation described by req and return a JSON-ready result (or {"error": ...})."""
    rx = re.compile(req["pattern"], req["flags"])
    op, text = req["op"], req.get("text", "")
    if op in ("search", "match", "fullmatch"):
        m = getattr(rx, op)(text)
        return {"matched": m is not None, **(_describe(m) if m else {})}
    if op == "finditer":
        found: list[dict[str, Any]] = []
        for m in rx.finditer(text):
            if len(found) >= req["limit"]:
                return {"count": len(found), "truncated": True, "matches": found}
            found.append(_describe(m))
        return {"count": len(found), "truncated": False, "matches": found}
    if op == "subn":
        try:
            result, n = rx.subn(req["replacement"], text, count=req["count"])
        except (re.error, IndexError) as exc:
            return {"error": f"invalid replacement template: {exc}"}
        return {"text": result, "replacements": n}
    if op == "split":
        return {"parts": ["" if p is None else p for p in rx.split(text, maxsplit=req["count"])]}
    if op == "grep":
        hits: list[list[Any]] = []
        for index, path in enumerate(req["files"]):
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
            for number, line in enumerate(lines, 1):
                if rx.search(line):
                    hits.append([index, number, line[:500]])
                    if len(hits) >= req["limit"]:
                        return {"hits": hits, "truncated": True}
        return {"hits": hits, "truncated": False}
    return {"error": f"unknown operation {op!r}"}


if __name__ == "__main__":
    json.dump(run(json.load(sys.stdin)), sys.stdout)
