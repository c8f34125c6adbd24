"""What a schema's titles give the model: those that restate a name (pydantic's, on every tool of a server built on
the MCP Python SDK) are left out of the tool list and of proxy results; any other title stays, and calls are still
checked against the schema as the tool gave it."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from lazytools import Catalog, Group, ToolEntry, build_server
from lazytools.schematitles import DEPTH, without_restated_titles

from .conftest import client, make_settings, text_of


class Point(BaseModel):
    x_pos: float
    y: float


async def _sdk_schema() -> dict[str, Any]:
    """The input schema the MCP Python SDK lists for a function tool, made by the SDK itself."""
    server = MCPServer("git")

    def status(repo_path: str, context_lines: int = 3, where: Point | None = None) -> str:
        return ""

    server.add_tool(status, name="git_status")
    return dict((await server.list_tools())[0].input_schema)


def _titles(node: Any) -> list[str]:
    """Every `title` keyword's value in a schema (a property named "title" is not one)."""
    if isinstance(node, list):
        return [title for item in node for title in _titles(item)]
    if not isinstance(node, dict):
        return []
    found = [node["title"]] if isinstance(node.get("title"), str) else []
    for key, value in node.items():
        if key in ("properties", "$defs"):
            found += [title for schema in value.values() for title in _titles(schema)]
        elif key != "title":
            found += _titles(value)
    return found


async def _echo(arguments: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(arguments, sort_keys=True))])


async def test_the_sdks_generated_titles_are_what_is_left_out() -> None:
    schema = await _sdk_schema()
    assert sorted(_titles(schema)) == ["Context Lines", "Point", "Repo Path", "X Pos", "Y", "statusArguments"]
    listed = without_restated_titles(schema)
    assert _titles(listed) == []
    assert listed["properties"]["repo_path"] == {"type": "string"}
    assert listed["$defs"]["Point"]["required"] == ["x_pos", "y"]
    assert schema["title"] == "statusArguments"  # the tool's own schema is not changed in place


def test_a_title_that_says_more_than_its_name_stays() -> None:
    schema = {"type": "object", "title": "Trip search", "properties": {
        "from_station": {"type": "string", "title": "出发站"},
        "title": {"type": "string", "title": "Title"},  # a property named "title": only its restating title goes
        "purpose_codes": {"type": "string", "title": "乘客类型（00=普通，0X=学生）"},
        "items": {"type": "array", "items": {"title": "One stop", "type": "string"}}}}
    listed = without_restated_titles(schema)
    assert listed["title"] == "Trip search" and set(listed["properties"]) == set(schema["properties"])
    assert sorted(_titles(listed)) == sorted(["Trip search", "出发站", "乘客类型（00=普通，0X=学生）", "One stop"])
    plain = {"type": "object", "properties": {"a": {"type": "string", "title": "Alpha"}}}
    assert without_restated_titles(plain) is plain  # nothing to leave out: the same object


def test_an_output_schema_is_listed_less_its_restated_titles_too() -> None:
    output = {"type": "object", "title": "statusOutput", "properties": {"result": {"type": "string", "title": "Result"}},
              "required": ["result"]}
    tool = ToolEntry(name="git_status", group="git", description="Status.", input_schema={"type": "object"},
                     output_schema=output, call=_echo).to_mcp()
    assert tool.output_schema == {"type": "object", "title": "statusOutput", "properties": {"result": {"type": "string"}},
                                  "required": ["result"]}  # the root's is a model's name, not an argument model's


def test_titles_deeper_than_the_bound_are_kept_and_the_walk_stays_bounded() -> None:
    deep: dict[str, Any] = {"type": "string", "title": "Leaf"}
    for _ in range(5_000):
        deep = {"type": "object", "properties": {"leaf": deep}}
    shallow = {"type": "object", "properties": {"leaf": {"type": "string", "title": "Leaf"}}}
    assert without_restated_titles(shallow) == {"type": "object", "properties": {"leaf": {"type": "string"}}}
    assert without_restated_titles(deep) is deep  # past DEPTH levels nothing is walked, and nothing recurses
    assert DEPTH < 100


async def test_clients_are_listed_and_shown_the_schema_less_its_restated_titles_and_calls_are_checked_as_given(
) -> None:
    schema = await _sdk_schema()
    catalog = Catalog()
    catalog.set_group(Group("git", ""), [ToolEntry(name="git_status", group="git", input_schema=schema, call=_echo,
                                                   description="Show the working tree status.")])
    async with client(build_server(catalog, make_settings(mode="dynamic"))) as c:
        await c.call_tool("search_tools", {"query": "working tree status"})
        listed = {tool.name: tool for tool in (await c.list_tools()).tools}["git_status"]
        assert _titles(listed.input_schema) == [] and listed.input_schema["required"] == ["repo_path"]
        refused = await c.call_tool("git_status", {"context_lines": 2})
        assert refused.is_error and "repo_path" in text_of(refused)
        called = await c.call_tool("git_status", {"repo_path": ".", "where": {"x_pos": 1, "y": 2}})
        assert not called.is_error and json.loads(text_of(called))["where"] == {"x_pos": 1, "y": 2}
    async with client(build_server(catalog, make_settings(mode="proxy"))) as c:
        text = text_of(await c.call_tool("search_tools", {"query": "working tree status"}))
    shown = json.loads(next(line for line in text.splitlines() if line.startswith("  input_schema: "))
                       .removeprefix("  input_schema: "))
    assert _titles(shown) == [] and shown["properties"]["context_lines"] == {"default": 3, "type": "integer"}
