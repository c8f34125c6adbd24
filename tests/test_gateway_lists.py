"""An upstream's prompts, resources and templates lists each stand alone, are bounded, and are looked up by index
(issue #20, items 2 and 7), against real SDK servers (tests/upstreams/partial.py)."""

from __future__ import annotations

import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate

from lazytools.server import passthrough
from lazytools.sources.gateway import prompts as front_module
from lazytools.sources.gateway.offerings import MAX_PAGES

from .upstreams.helpers import opened

PARTIAL = Path(__file__).resolve().parent / "upstreams" / "partial.py"

pytestmark = pytest.mark.process


def partial(name: str, *flags: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(PARTIAL), "--name", name, *flags], "timeout": 20}


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_server_without_templates_serves_its_prompts_and_resources(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # A plain SDK server with resources but no templates handler answers resources/templates/list with -32601.
    async with opened(tmp_path, {"p": partial("p")}) as o, Client(o.server, mode="legacy") as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == ["p__p1", "p__p2"]
        assert [str(r.uri) for r in (await client.list_resources()).resources] == ["partial://p/r1", "partial://p/r2"]
        assert (await client.list_resource_templates()).resource_templates == []
        read = await client.read_resource("partial://p/r1")
        assert read.contents[0] == types.TextResourceContents(uri="partial://p/r1", text="p reads partial://p/r1")
        got = await client.get_prompt("p__p2")
        assert got.messages[0].content == types.TextContent(text="p prompt p2")
    assert not [m for m in _warnings(caplog) if "'p'" in m], _warnings(caplog)  # a missing method is no warning


async def test_a_failing_prompts_list_costs_only_the_prompts(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with opened(tmp_path, {"p": partial("p", "--fail-prompts", "--templates")}) as o, \
            Client(o.server, mode="legacy") as client:
        assert (await client.list_prompts()).prompts == []
        assert [r.name for r in (await client.list_resources()).resources] == ["r1", "r2"]
        assert [t.name for t in (await client.list_resource_templates()).resource_templates] == ["t1", "t2"]
        assert (await client.read_resource("partial://p/t2/x")).contents[0].uri == "partial://p/t2/x"
    assert any("listing its prompts failed" in m for m in _warnings(caplog)), _warnings(caplog)


async def test_a_malformed_prompt_or_resource_is_skipped_alone(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    async with opened(tmp_path, {"p": partial("p", "--malformed")}) as o, Client(o.server, mode="legacy") as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == ["p__p1", "p__p2"]
        assert [r.name for r in (await client.list_resources()).resources] == ["r1", "r2"]
        assert (await client.read_resource("partial://p/r2")).contents[0].uri == "partial://p/r2"
    warnings = _warnings(caplog)
    assert any("skipping prompt" in m and "number 2" in m and "name" in m for m in warnings), warnings
    assert any("skipping resource 'a resource without a URI'" in m and "uri" in m for m in warnings), warnings


async def test_long_lists_reach_the_client_in_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Sent in one answer, the 10,000 resources of an ordinary file server were 1.9 MB: over HTTP the SDK client
    # refused it (its 1 MiB event), so that session could list no resource. They now come in pages, by count
    # and by size, each naming the next.
    monkeypatch.setattr(passthrough, "PAGE_ITEMS", 4)
    async with opened(tmp_path, {"p": partial("p", "--count", "10", "--templates")}) as o, \
            Client(o.server, mode="legacy") as client:
        for listing, of in ((client.list_prompts, "prompts"), (client.list_resources, "resources"),
                            (client.list_resource_templates, "resource_templates")):
            pages: list[list[str]] = []
            cursor: str | None = None
            while not pages or cursor is not None:
                page = await listing(cursor=cursor)
                pages.append([item.name for item in getattr(page, of)])
                cursor = page.next_cursor
            assert [len(names) for names in pages] == [4, 4, 2], (of, pages)
            assert [n for names in pages for n in names][-1].endswith("10")
        monkeypatch.setattr(passthrough, "PAGE_CHARS", 120)  # partial.py's resources are 35 characters of JSON each
        first = await client.list_resources()
        assert len(first.resources) == 3 and first.next_cursor == "3"
        monkeypatch.setattr(passthrough, "PAGE_CHARS", 20)  # each alone too large for a page: none is sent
        assert (await client.list_resources()).resources == []
        with pytest.raises(MCPError, match="cursor"):
            await client.list_resources(cursor="not-a-cursor")


async def test_lists_longer_than_the_bound_are_cut_with_a_warning(tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    async with opened(tmp_path, {"p": partial("p", "--count", "10", "--templates")},
                      max_upstream_offerings=3) as o, Client(o.server, mode="legacy") as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == ["p__p1", "p__p2", "p__p3"]
        assert [r.name for r in (await client.list_resources()).resources] == ["r1", "r2", "r3"]
        assert [t.name for t in (await client.list_resource_templates()).resource_templates] == ["t1", "t2", "t3"]
        with pytest.raises(MCPError) as refused:  # the fourth is not served, by list or by template
            await client.read_resource("partial://p/r4")
        assert refused.value.code == -32002
    warnings = _warnings(caplog)
    for what in ("prompts", "resources", "resource templates"):
        assert any(f"lists more than 3 {what}; serving the first 3" in m for m in warnings), (what, warnings)


async def test_prompts_are_looked_up_by_public_name_in_an_index(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    async with opened(tmp_path, {"p": partial("p", "--count", "50", "--templates")}) as o, Client(o.server, mode="legacy") as client:
        assert len((await client.list_prompts()).prompts) == 50
        named: list[str] = []
        original = front_module.public_tool_name

        def counting(prefix: str, name: str) -> str:
            named.append(name)
            return original(prefix, name)

        monkeypatch.setattr(front_module, "public_tool_name", counting)
        for index in range(20):
            with pytest.raises(MCPError, match="Unknown prompt"):
                await client.get_prompt(f"p__nope{index}")
        assert (await client.get_prompt("p__p50")).messages[0].content == types.TextContent(text="p prompt p50")
        completion = await client.complete(types.PromptReference(name="p__p7"), {"name": "who", "value": ""})
        assert completion.completion.values == []
        assert named == []  # no get, unknown or known, walked the prompts to name them again
        # A change of the upstream's prompts renews the index, once.
        upstream = o.gateway["p"]
        upstream.offerings = replace(upstream.offerings, prompts=(types.Prompt(name="fresh"),))
        assert upstream.hooks.offerings_changed is not None
        await upstream.hooks.offerings_changed(upstream)
        with pytest.raises(MCPError, match="Unknown prompt"):
            await client.get_prompt("p__p50")
        assert (await client.get_prompt("p__fresh")).messages[0].content == types.TextContent(text="p prompt fresh")
        assert named == ["fresh"]


async def test_a_read_runs_only_the_template_matches_whose_literal_start_fits(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    async with opened(tmp_path, {"p": partial("p", "--count", "50", "--templates")}) as o, \
            Client(o.server, mode="legacy") as client:
        matched: list[str] = []
        original = UriTemplate.match

        def counting(self: UriTemplate, uri: str, **options: Any) -> Any:
            matched.append(str(self))
            return original(self, uri, **options)

        monkeypatch.setattr(UriTemplate, "match", counting)
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("elsewhere://p/t1/x")
        assert unknown.value.code == -32002 and matched == []
        # A URI of one of them is matched against the one whose literal start (`partial://p/t7/`) it has.
        assert (await client.read_resource("partial://p/t7/x")).contents[0].uri == "partial://p/t7/x"
        assert set(matched) == {"partial://p/t7/{x}"}  # of the 50 templates, only that one (routing and policy)


CLAIMS = Path(__file__).resolve().parent / "upstreams" / "claims.py"


async def test_a_cursor_that_never_ends_is_cut_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Issue #20, round 2, F4: the 100-page cut was silent (the 10,000-item cut is warned about).
    config = {"e": {"command": sys.executable, "args": [str(CLAIMS), "e", "--endless-pages"]}}
    async with opened(tmp_path, config) as o, Client(o.server, mode="legacy") as client:
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert listed == [f"page://e/{page}" for page in range(MAX_PAGES)]
    cut = [m for m in _warnings(caplog) if "a cursor that never ends" in m]
    assert cut == [f"upstream 'e' announces more resources after {MAX_PAGES} pages; serving the "
                   f"{MAX_PAGES} listed so far (a cursor that never ends)"], _warnings(caplog)


async def test_a_template_with_invalid_syntax_is_dropped_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    bad = ["docs://x/{", "docs://x/{a\nforged line}"]
    flags = [flag for template in [*bad, "docs://x/{page}"] for flag in ("--template", template)]
    config = {"t": {"command": sys.executable, "args": [str(CLAIMS), "t", *flags]}}
    async with opened(tmp_path, config) as o, Client(o.server, mode="legacy") as client:
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert templates == ["docs://x/{page}"]
    dropped = [m for m in _warnings(caplog) if "whose syntax is invalid" in m]
    assert len(dropped) == 2 and "'docs://x/{'" in dropped[0], dropped
    assert "\n" not in dropped[1] and "{a\\nforged line}" in dropped[1], dropped  # escaped, on one line
