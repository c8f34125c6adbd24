"""Build this folder's tools.jsonl and queries.jsonl from RestBench (RestGPT's datasets and OpenAPI specs).

    python benchmarks/data/restbench/build.py SOURCE_DIR

SOURCE_DIR holds tmdb_oas.json, spotify_oas.json, tmdb.json and spotify.json as RestGPT distributes them. Each
endpoint (method and path) becomes a tool `server__operationId` whose description is the operation's summary and
description and whose input schema holds its path, query and JSON body parameters; each instruction becomes a query
whose gold is the endpoints of its solution path, in order, each once.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SERVERS = ("tmdb", "spotify")
METHODS = ("get", "post", "put", "delete", "patch")
FIXES = {
    # Typos in RestBench's gold paths, each checked against the spec: the path as the API has it.
    "GET /person/{movie_id}/movie_credits": "GET /person/{person_id}/movie_credits",
    "GET /track/{id}": "GET /tracks/{id}",
}


def resolve(spec: dict[str, Any], node: Any, depth: int = 0) -> Any:
    """`node` with its local `$ref`s replaced by what they point to (bounded: specs can be recursive)."""
    if depth > 6:
        return {}
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = spec
            for part in ref[2:].split("/"):
                target = target[part]
            return resolve(spec, target, depth + 1)
        return {key: resolve(spec, value, depth + 1) for key, value in node.items()}
    if isinstance(node, list):
        return [resolve(spec, item, depth + 1) for item in node]
    return node


def clean(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def schema_of(spec: dict[str, Any], path_item: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in [*path_item.get("parameters", []), *operation.get("parameters", [])]:
        parameter = resolve(spec, parameter)
        if parameter.get("in") not in ("path", "query"):
            continue
        schema = dict(parameter.get("schema") or {"type": "string"})
        schema = {k: v for k, v in schema.items() if k in ("type", "enum", "default", "items")}
        if parameter.get("description"):
            schema["description"] = clean(parameter["description"])
        properties[parameter["name"]] = schema
        if parameter.get("required"):
            required.append(parameter["name"])
    body = resolve(spec, operation.get("requestBody") or {})
    content = (body.get("content") or {}).get("application/json") or {}
    for name, prop in ((content.get("schema") or {}).get("properties") or {}).items():
        kept = {k: v for k, v in prop.items() if k in ("type", "enum", "items")}
        if prop.get("description"):
            kept["description"] = clean(prop["description"])
        properties.setdefault(name, kept)
    schema_out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema_out["required"] = list(dict.fromkeys(required))
    return schema_out


def tools_of(server: str, spec: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    tools: list[dict[str, Any]] = []
    by_endpoint: dict[str, str] = {}
    for path, item in spec["paths"].items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            name = re.sub(r"[^A-Za-z0-9_-]+", "_", operation.get("operationId") or f"{method}_{path}").strip("_")
            summary, description = clean(operation.get("summary", "")), clean(operation.get("description", ""))
            text = description if description.startswith(summary) else (f"{summary}. {description}" if description
                                                                           else summary)
            tool_id = f"{server}__{name}"
            tools.append({"id": tool_id, "server": server, "name": name, "description": text,
                          "input_schema": schema_of(spec, item, operation)})
            by_endpoint[f"{method.upper()} {path}"] = tool_id
    return tools, by_endpoint


def main(source: Path) -> None:
    tools: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for server in SERVERS:
        spec = json.loads((source / f"{server}_oas.json").read_text(encoding="utf-8"))
        found, by_endpoint = tools_of(server, spec)
        tools.extend(found)
        for number, item in enumerate(json.loads((source / f"{server}.json").read_text(encoding="utf-8"))):
            steps = [FIXES.get(clean(step), clean(step)) for step in item["solution"]]
            gold = list(dict.fromkeys(by_endpoint[step] for step in steps))
            queries.append({"id": f"{server}-{number:03d}", "query": clean(item["query"]), "relevant_tool_ids": gold,
                            "split": server})
    (HERE / "tools.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tools), "utf-8")
    (HERE / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), "utf-8")
    print(f"{len(tools)} tools, {len(queries)} queries")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
