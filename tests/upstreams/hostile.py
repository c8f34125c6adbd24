"""A real MCP server over stdio that speaks JSON-RPC by hand, so that it can say what the SDK would refuse to write:
schemas that are broken or refer outside themselves, lone surrogates, `NaN`, results of any size.

    python tests/upstreams/hostile.py [--ref-url URL] [--ref-file URL] [--no-schema] [--deep-schema LEVELS]
                                      [--surrogate-listing]

Tools: `surrogate` (a lone \\ud800 in its text), `nan` (NaN and Infinity in structured content), `big` (`size` bytes
of text), `crowded` (structured content of `size` empty arrays), `big_error` (a JSON-RPC error whose message is
`size` characters), `server_error` (error -32000), `chatty` (`size` bytes on its stderr),
`deep_result` (structured content `size` arrays deep), `crowded_middle` and `big_middle` (`crowded`'s and `big`'s answers
with the id neither first nor last: `{"jsonrpc", "result", "id", "more"}`, `more` as large as the result), `echo`,
and tools whose input schema is hostile: `ref_url`, `ref_file` (external `$ref`), `bad_pattern` (`pattern: "("`),
`ref_loop` (`$ref: "#"`), `broken` (`properties: 5`), `slow_pattern` (catastrophic backtracking), `unique`
(`uniqueItems` on objects). `--no-schema` adds `no_schema`, listed without any `inputSchema`; `--deep-schema` adds
`deep`, whose input schema nests objects LEVELS deep. `--surrogate-listing` lists a lone surrogate too: in `echo`'s
description and in a tool's name (`odd\\ud800name`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

OBJECT: dict[str, Any] = {"type": "object"}
NO_SCHEMA: dict[str, Any] = {}
"""Stands for a tool listed with no inputSchema at all (compared by identity)."""
DESCRIPTIONS: dict[str, str] = {}
"""Descriptions other than "The NAME tool."."""


def schemas(ref_url: str, ref_file: str) -> dict[str, dict[str, Any]]:
    text = {"type": "object", "properties": {"text": {"type": "string"}}}
    return {
        "echo": text,
        "surrogate": OBJECT,
        "nan": OBJECT,
        "big": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
        "crowded": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
        "crowded_middle": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
        "big_middle": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
        "big_error": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
        "server_error": OBJECT,
        "chatty": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
        "deep_result": {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
        "wide": {"type": "object", "properties": {"size": {"type": "integer"}, "keys": {"type": "boolean"}},
                 "required": ["size"]},
        "ref_url": {"type": "object", "properties": {"text": {"$ref": ref_url}, "n": {"type": "integer"}}},
        "ref_file": {"type": "object", "properties": {"text": {"$ref": ref_file}, "n": {"type": "integer"}}},
        "bad_pattern": {"type": "object", "properties": {"text": {"type": "string", "pattern": "("},
                                                         "n": {"type": "integer"}}},
        "ref_loop": {"type": "object", "properties": {"n": {"type": "integer"}}, "allOf": [{"$ref": "#"}]},
        "broken": {"type": "object", "properties": 5},
        "slow_pattern": {"type": "object", "properties": {"text": {"type": "string", "pattern": "^(a|aa)+$"}}},
        "unique": {"type": "object", "properties": {"items": {"type": "array", "uniqueItems": True}}},
    }


def answer(message: dict[str, Any], tools: dict[str, dict[str, Any]]) -> str | None:
    method = message.get("method")
    if "id" not in message:
        return None
    ident = json.dumps(message["id"])
    if method == "initialize":
        version = json.dumps(message["params"]["protocolVersion"])
        result = ('{"protocolVersion": %s, "capabilities": {"tools": {}}, '
                  '"serverInfo": {"name": "hostile", "version": "1"}}' % version)
    elif method == "tools/list":
        listed = [{"name": name, "description": DESCRIPTIONS.get(name, f"The {name} tool."),
                   **({} if schema is NO_SCHEMA else {"inputSchema": schema})} for name, schema in tools.items()]
        result = json.dumps({"tools": listed})
    elif method == "tools/call" and message["params"]["name"] == "server_error":
        return '{"jsonrpc": "2.0", "id": %s, "error": {"code": -32000, "message": "quota exceeded"}}' % ident
    elif method == "tools/call" and message["params"]["name"] == "big_error":
        size = int(message["params"]["arguments"]["size"])
        return '{"jsonrpc": "2.0", "id": %s, "error": {"code": -32603, "message": "%s"}}' % (ident, "e" * size)
    elif method == "tools/call" and message["params"]["name"] in ("crowded_middle", "big_middle"):
        name, size = message["params"]["name"], int(message["params"]["arguments"]["size"])
        more = "[%s]" % ",".join(["[]"] * size) if name == "crowded_middle" else json.dumps("y" * size)
        return '{"jsonrpc": "2.0", "result": %s, "id": %s, "more": %s}' % (call(name[:-7], {"size": size}), ident, more)
    elif method == "tools/call":
        result = call(message["params"]["name"], message["params"].get("arguments") or {})
    elif method == "ping":
        result = "{}"
    else:
        return '{"jsonrpc": "2.0", "id": %s, "error": {"code": -32601, "message": "no"}}' % ident
    return '{"jsonrpc": "2.0", "id": %s, "result": %s}' % (ident, result)


def call(name: str, arguments: dict[str, Any]) -> str:
    if name == "surrogate":
        return '{"content": [{"type": "text", "text": "before \\ud800 after"}]}'
    if name == "nan":
        return '{"content": [{"type": "text", "text": "odd numbers"}], "structuredContent": {"a": NaN, "b": -Infinity}}'
    if name == "big":
        return json.dumps({"content": [{"type": "text", "text": "x" * int(arguments["size"])}]})
    if name == "chatty":  # `size` bytes on stderr, in lines, as a server that logs a lot at its start does
        for _ in range(int(arguments["size"]) // 100):
            sys.stderr.write("c" * 99 + "\n")
        sys.stderr.flush()
        return json.dumps({"content": [{"type": "text", "text": "said it all"}]})
    if name == "deep_result":  # structured content `size` arrays deep: parsed, but past pydantic's depth limit
        depth = int(arguments["size"])
        return '{"content": [{"type": "text", "text": "deep"}], "structuredContent": {"a": %s}}' % (
            "[" * depth + "]" * depth)
    if name == "wide":  # structured content of `size` keys (a dict), or of `size` numbers (a list)
        size = int(arguments["size"])
        inside = ("{%s}" % ",".join(f'"k{n}": {n}' for n in range(size))) if arguments.get("keys", True) \
            else "[%s]" % ",".join(str(n) for n in range(size))
        return '{"content": [{"type": "text", "text": "wide"}], "structuredContent": {"a": %s}}' % inside
    if name == "crowded":
        return ('{"content": [{"type": "text", "text": "rows"}], "structuredContent": {"rows": [%s]}}'
                % ",".join(["[]"] * int(arguments["size"])))
    return json.dumps({"content": [{"type": "text", "text": f"{name} got {json.dumps(arguments, sort_keys=True)}"}]})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ref-url", default="http://127.0.0.1:9/schema.json")
    parser.add_argument("--ref-file", default="file:///etc/hostname")
    parser.add_argument("--no-schema", action="store_true")
    parser.add_argument("--deep-schema", type=int, default=0)
    parser.add_argument("--surrogate-listing", action="store_true")
    args = parser.parse_args()
    tools = schemas(args.ref_url, args.ref_file)
    if args.no_schema:
        tools["no_schema"] = NO_SCHEMA
    if args.deep_schema:
        deep: dict[str, Any] = {"type": "object"}
        for _ in range(args.deep_schema):
            deep = {"type": "object", "properties": {"x": deep}}
        tools["deep"] = deep
    if args.surrogate_listing:
        DESCRIPTIONS["echo"] = "Echoes its arguments \ud800 back."  # json.dumps writes it as the escape
        tools["odd\ud800name"] = OBJECT
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        reply = answer(message, tools)
        if reply is not None:
            sys.stdout.write(reply + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
