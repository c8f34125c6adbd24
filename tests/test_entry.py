"""Catalog entries: the one-line summary used in manifests and search results, and what a client is sent."""

from __future__ import annotations

import mcp_types as types
import pytest

from lazytools import Catalog, Group, ToolEntry, build_server
from lazytools.entry import (
    DESCRIPTION_CHARS,
    EXTRA_CHARS,
    SCHEMA_CHARS,
    TITLE_CHARS,
    compact_json,
    first_sentence,
    plain_summary,
)

from .conftest import client, make_settings, text_of
from .fixtures.catalogs import _never


@pytest.mark.parametrize(("text", "expected"), [
    ("Convert a date from one zone to another, e.g. UTC to CET. More text.",
     "Convert a date from one zone to another, e.g. UTC to CET."),
    ("Count words.\n\nDetails here.", "Count words."),
    ("Is it prime? Then say so.", "Is it prime?"),
    ("No full stop at all", "No full stop at all"),
    ("Line one\nstill the same sentence. Next.", "Line one still the same sentence."),
    ("x" * 200, "x" * 159 + "…"),
])
def test_first_sentence(text: str, expected: str) -> None:
    assert first_sentence(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("# Everything Server – Server Instructions\n\nAudience: These instructions are written for an agent.\n"
     "Follow them to use the server.\n\n## Tools\n\n- Use `get-roots-list` to see roots\n- Another",
     "Use get-roots-list to see roots."),
    ("# Weather\n\nForecasts from the **national** service, see [docs](https://example.com/x). More.",
     "Forecasts from the national service, see docs."),
    ("```json\n{\"a\": 1}\n```\nReads files. Writes files.", "Reads files."),
    ("# Only a heading", ""),
    ("---\n<div>\n", ""),
    ("Use this server to fetch current documentation whenever the user asks about a library, framework, SDK.",
     "Use this server to fetch current documentation whenever the user asks about a library, framework…"),
    ("snake_case_names stay whole.", "snake_case_names stay whole."),
])
def test_plain_summary(text: str, expected: str) -> None:
    assert plain_summary(text) == expected
    assert len(plain_summary(text)) <= 100


class _WholeTextGuard(str):
    """A description that fails if anything reads it whole rather than a prefix of it."""

    def strip(self, chars: str | None = None) -> str:
        raise AssertionError("the whole description was read")

    split = splitlines = strip  # type: ignore[assignment]


def test_the_summary_reads_a_bounded_prefix_and_is_escaped() -> None:
    huge = _WholeTextGuard("Get\x1b[2J the \u202eweather. " + "x" * 1_000_000)
    entry = ToolEntry(name="t", group="g", description=huge, input_schema={}, call=_never)
    assert entry.summary == "Get\\x1b[2J the \\u202eweather."
    assert ToolEntry(name="t", group="g", description="x" * 200, input_schema={}, call=_never).summary == "x" * 159 + "…"


def test_a_client_is_sent_a_bounded_description_and_title_that_say_they_were_cut() -> None:
    long = ToolEntry(name="t", group="g", description="d" * 1_000_000, title="T" * 10_000, input_schema={},
                     call=_never)
    tool = long.to_mcp()
    assert tool.description is not None and tool.description.startswith("d" * DESCRIPTION_CHARS)
    assert len(tool.description) < DESCRIPTION_CHARS + 100 and "(cut: 990,000 more characters" in tool.description
    assert tool.title is not None and len(tool.title) < TITLE_CHARS + 100 and "cut" in tool.title
    real = ToolEntry(name="t", group="g", description="Real.\n\n" + "r" * 6_993, title="Real", input_schema={},
                     call=_never)
    assert real.to_mcp().description == real.description and real.to_mcp().title == "Real"


def test_icons_meta_and_an_annotations_title_past_their_bounds_are_not_sent() -> None:
    # An upstream tool with a 3 MB data: URI icon and 2 MB of _meta made each tools/list of a session that had
    # enabled it 5 MB: over HTTP the SDK client refused the event (1 MiB) and the session could list no tool.
    icon = types.Icon(src="data:image/png;base64," + "A" * 3_000_000, mime_type="image/png")
    huge = ToolEntry(name="t", group="g", description="Paint.", input_schema={}, call=_never, icons=(icon,),
                     meta={"x": "m" * 2_000_000}, annotations=types.ToolAnnotations(title="A" * 1_000_000))
    tool = huge.to_mcp()
    assert tool.icons is None and tool.meta is None
    assert tool.annotations is not None and tool.annotations.title is not None
    assert len(tool.annotations.title) < TITLE_CHARS + 100 and "cut" in tool.annotations.title
    assert len(compact_json(tool.model_dump(mode="json", by_alias=True, exclude_none=True))) < 2 * EXTRA_CHARS
    small = types.Icon(src="data:image/png;base64," + "A" * 6_000, mime_type="image/png")
    real = ToolEntry(name="t", group="g", description="Paint.", input_schema={}, call=_never, icons=(small,),
                     meta={"ui/resourceUri": "ui://paint/app.html"}, annotations=types.ToolAnnotations(title="Paint"))
    assert real.to_mcp().icons == [small] and real.to_mcp().meta == {"ui/resourceUri": "ui://paint/app.html"}
    assert real.to_mcp().annotations == types.ToolAnnotations(title="Paint")


async def test_tools_list_stays_bounded_when_enabled_tools_have_huge_descriptions() -> None:
    catalog = Catalog()
    catalog.set_group(Group("huge", "Huge tools."), [
        ToolEntry(name=f"weather_{i}", group="huge", description=f"Weather {i}. " + "w " * 20_000,
                  input_schema={"type": "object"}, call=_never) for i in range(20)])
    async with client(build_server(catalog, make_settings(mode="dynamic"))) as c:
        found = await c.call_tool("search_tools", {"query": "weather", "limit": 20})
        listed = (await c.list_tools()).tools
    assert not found.is_error and len(text_of(found)) < 20_000, len(text_of(found))
    enabled = [tool for tool in listed if tool.name.startswith("weather_")]
    assert len(enabled) == 20
    assert all(len(tool.description or "") < DESCRIPTION_CHARS + 100 for tool in enabled)
    assert all((tool.description or "").endswith("more characters not sent)") for tool in enabled)


async def test_pinned_tools_are_held_to_the_tools_list_budget_too() -> None:
    # Found by a README-only review: pinned tools (ALWAYS_AVAILABLE_TOOLS, or a server's "defer_loading": false)
    # were listed whole whatever their size, so twenty at every cap made every session's tools/list 1.5 MB.
    properties = {f"p{i}": {"type": "string", "description": "painting parameter " * 4} for i in range(265)}
    schema = {"type": "object", "properties": properties}
    catalog = Catalog()
    catalog.set_group(Group("caps", "Tools at every cap."), [
        ToolEntry(name=f"paint_{i}", group="caps", description=f"Paint picture {i}. " + "paint a picture " * 600,
                  input_schema=schema, output_schema=schema, call=_never) for i in range(20)])
    pinned = [f"paint_{i}" for i in range(20)]
    async with client(build_server(catalog, make_settings(mode="dynamic", always_available_tools=pinned))) as c:
        listed = (await c.list_tools()).tools
    assert [tool.name for tool in listed][:20] == pinned and listed[-1].name == "invoke_tool"
    size = len(compact_json([tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed]))
    assert size < 1 << 20, size
    whole = [tool for tool in listed[:20] if tool.output_schema is not None]
    assert whole and whole == listed[:len(whole)] and len(whole) < 20
    assert all(tool.input_schema == {"type": "object"} for tool in listed[len(whole):20])


async def test_tools_list_stays_under_a_clients_event_limit_when_enabled_tools_are_at_every_cap() -> None:
    # Each field within its own bound (a description of 9,700 characters, input and output schemas of 31,000), twenty
    # such tools enabled by one search made tools/list 1.5 MB: the SDK client over HTTP refused it (its 1 MiB event)
    # and the session could list no tool. Past the list's budget the last ones are listed lean.
    properties = {f"p{i}": {"type": "string", "description": "painting parameter " * 4} for i in range(265)}
    schema = {"type": "object", "properties": properties}
    assert 30_000 < len(compact_json(schema)) < SCHEMA_CHARS
    catalog = Catalog()
    catalog.set_group(Group("caps", "Tools at every cap."), [
        ToolEntry(name=f"paint_{i}", group="caps", description=f"Paint picture {i}. " + "paint a picture " * 600,
                  input_schema=schema, output_schema=schema, call=_never) for i in range(20)])
    async with client(build_server(catalog, make_settings(mode="dynamic"))) as c:
        await c.call_tool("search_tools", {"query": "paint a picture", "limit": 20})
        listed = (await c.list_tools()).tools
    enabled = [tool for tool in listed if tool.name.startswith("paint_")]
    assert len(enabled) == 20
    size = len(compact_json([tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed]))
    assert size < 1 << 20, size
    full = [tool for tool in enabled if tool.output_schema is not None]
    assert full and full == enabled[:len(full)]  # the first ones whole, the rest lean: named, described, callable
    for tool in enabled[len(full):]:
        assert tool.input_schema == {"type": "object"} and "search_tools" in (tool.description or "")
        assert (tool.description or "").startswith(tool.name.replace("paint_", "Paint picture ") + ".")
