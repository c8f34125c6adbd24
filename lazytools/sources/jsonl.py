"""Catalogs from JSONL files: one tool per line (`id`, `name`, `description`, optional `input_schema`, `server`).

Such files describe tools that lazytools cannot run (benchmark catalogs, exported tool lists). They are loaded to
measure search on them (`lazytools eval`) and to serve them, so that a client can be tried against a large,
realistic catalog; calling one of these tools fails with a clear "no implementation" error.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types

from ..catalog import Catalog, Group
from ..entry import CallFn, ToolEntry, first_sentence
from ..errors import ConfigError, ToolExecutionError
from ..smallfiles import read_small_file
from ..toolnames import MAX_NAME_LENGTH, clean_name, unique_name

__all__ = [
    "MAX_JSONL_BYTES", "SERVERS_FILE", "JsonlCatalog", "JsonlSource", "JsonlTool", "ServerText", "load_jsonl_catalog",
    "read_jsonl", "read_servers", "read_tools", "servers_beside",
]

MAX_JSONL_BYTES = 256 << 20
"""A tools, queries or servers file larger than this is refused unread (the largest catalog measured here is 1 MB;
100,000 tools of a kilobyte each fit)."""
MAX_ABOUT_CHARS = 4000
"""What one server says of itself is kept up to this many characters (instructions can run to pages)."""

_EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}
@dataclass(frozen=True, slots=True)
class JsonlTool:
    """One line of a tools file, checked but not yet given a public name."""

    id: str
    name: str
    description: str
    input_schema: Mapping[str, Any]
    server: str | None


@dataclass(frozen=True, slots=True)
class JsonlCatalog:
    """A catalog built from a tools file, with the file's tool id of every public name."""

    catalog: Catalog
    ids: Mapping[str, str]
    """Public tool name → the `id` it has in the file (evaluation scores by id)."""


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; a line that is not a JSON object is a ConfigError."""
    try:
        # Within bounds, as a config file is: a FIFO nobody writes would wait for ever, /dev/zero fill the memory.
        lines = read_small_file(path, MAX_JSONL_BYTES).decode("utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8") from exc
    except ValueError as exc:  # not a regular file, or too large
        raise ConfigError(f"{path}: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise ConfigError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        yield number, record


def _text(path: Path, number: int, record: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = record.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise ConfigError(f"{path}:{number}: {key!r} must be a non-empty string")
    return value


def read_tools(path: Path) -> list[JsonlTool]:
    """The tools of a JSONL file; unknown keys are ignored, duplicate ids and bad fields are errors."""
    tools: list[JsonlTool] = []
    seen: set[str] = set()
    for number, record in read_jsonl(path):
        tool_id = record.get("id")
        if isinstance(tool_id, int) and not isinstance(tool_id, bool):
            tool_id = str(tool_id)
        if not isinstance(tool_id, str) or not tool_id:
            raise ConfigError(f"{path}:{number}: 'id' must be a non-empty string")
        if tool_id in seen:
            raise ConfigError(f"{path}:{number}: tool id {tool_id!r} appears twice")
        seen.add(tool_id)
        name = _text(path, number, record, "name", required=False) or tool_id
        description = _text(path, number, record, "description", required=False) or ""
        schema = record.get("input_schema", record.get("inputSchema"))
        if schema is None:
            schema = _EMPTY_SCHEMA
        if not isinstance(schema, dict):
            raise ConfigError(f"{path}:{number}: 'input_schema' must be a JSON object")
        server = _text(path, number, record, "server", required=False)
        tools.append(JsonlTool(tool_id, name, description, schema, server))
    return tools


@dataclass(frozen=True, slots=True)
class ServerText:
    """What one server of a servers file says of itself: its description and its instructions."""

    description: str
    instructions: str


SERVERS_FILE = "servers.jsonl"
"""Read beside a tools file when no servers file is named: what its servers say of themselves."""


def servers_beside(tools: Path) -> Path | None:
    """The servers file beside a tools file, if there is one."""
    beside = tools.with_name(SERVERS_FILE)
    return beside if beside.is_file() else None


def read_servers(path: Path) -> dict[str, ServerText]:
    """A servers file: one JSON object a line with `server` and optional `description` and `instructions` (what a
    server's config and its `initialize` answer say of it)."""
    servers: dict[str, ServerText] = {}
    for number, record in read_jsonl(path):
        name = _text(path, number, record, "server", required=True) or ""
        description = _text(path, number, record, "description", required=False) or ""
        instructions = _text(path, number, record, "instructions", required=False) or ""
        servers[clean_name(name)] = ServerText(description[:MAX_ABOUT_CHARS], instructions[:MAX_ABOUT_CHARS])
    return servers


def _public_names(tools: list[JsonlTool]) -> list[str]:
    """Unique SEP-986 names: the tool's own name, prefixed with its server where two servers share it."""
    counts: dict[str, int] = {}
    for tool in tools:
        counts[clean_name(tool.name)] = counts.get(clean_name(tool.name), 0) + 1
    names: list[str] = []
    taken: set[str] = set()
    for tool in tools:
        base = clean_name(tool.name)
        if counts[base] > 1 and tool.server:
            base = f"{clean_name(tool.server)}__{base}"
        name = unique_name(base[:MAX_NAME_LENGTH], taken, "_")
        taken.add(name)
        names.append(name)
    return names


def _no_implementation(name: str, path: Path) -> CallFn:
    async def call(arguments: dict[str, Any]) -> types.CallToolResult:
        raise ToolExecutionError(
            f"{name} has no implementation: it comes from the catalog file {path.name}, which describes tools "
            "without running them. Use it to try search, not to do the task."
        )

    return call


@dataclass(frozen=True, slots=True)
class JsonlSource:
    """A tools file as a `Source`: loaded once when opened."""

    path: Path

    @asynccontextmanager
    async def open(self, catalog: Catalog) -> AsyncIterator[JsonlCatalog]:
        beside = servers_beside(self.path)
        yield load_jsonl_catalog(self.path, catalog, servers=read_servers(beside) if beside is not None else None)


def load_jsonl_catalog(path: Path, catalog: Catalog | None = None, *,
                       servers: Mapping[str, ServerText] | None = None) -> JsonlCatalog:
    """Load `path` into `catalog` (a new one by default), one group per `server` (the file's stem otherwise), each
    described as `servers` (from `read_servers`) says, as a gateway's config and upstreams would."""
    tools = read_tools(path)
    catalog = catalog if catalog is not None else Catalog()
    default_group = clean_name(path.stem)
    by_group: dict[str, list[ToolEntry]] = {}
    ids: dict[str, str] = {}
    for tool, name in zip(tools, _public_names(tools), strict=True):
        group = clean_name(tool.server) if tool.server else default_group
        entry = ToolEntry(
            name=name,
            group=group,
            description=tool.description,
            input_schema=tool.input_schema,
            call=_no_implementation(name, path),
            upstream_name=tool.name if tool.name != name else None,
        )
        by_group.setdefault(group, []).append(entry)
        ids[name] = tool.id
    placeholder = f"Tools from {path.name} (no implementation)"
    for group, entries in by_group.items():
        told = (servers or {}).get(group)
        if told is None or not (told.description or told.instructions):
            catalog.set_group(Group(group, placeholder), entries)
            continue
        summary = first_sentence(told.description or told.instructions, limit=200)
        about = "\n\n".join(text for text in (told.description, told.instructions) if text)
        catalog.set_group(Group(group, summary, about=about), entries)
    return JsonlCatalog(catalog, ids)
