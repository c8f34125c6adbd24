"""Choosing the server: what a server says of itself decides between tools its words alone cannot tell apart,
through the real `search_tools` meta-tool and in `lazytools eval`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from lazytools import build_server
from lazytools.catalog import Catalog, Group
from lazytools.cli import main
from lazytools.entry import ToolEntry
from lazytools.evaluate import run_eval
from lazytools.search import SearchIndex
from lazytools.search.config import RankingConfig
from lazytools.search.servers import ServerIndex
from lazytools.sources.functions import FunctionGroup

from .conftest import client, make_settings, text_of

SERVER_LIFT = RankingConfig().server_lift

COOKBOOK = "The family cookbook: recipes, ingredients and weekly meal plans."
ACCOUNTS = "Contracts, invoices and receipts of the company."


def two_wikis(first: str, second: str) -> Catalog:
    """Two servers whose page readers say exactly the same words; only the servers' summaries differ."""
    catalog = Catalog()
    north = FunctionGroup("north", summary=first)

    @north.tool
    def fetch_page(title: str) -> str:
        """Read a page by its title."""
        return title

    south = FunctionGroup("south", summary=second)

    @south.tool
    def get_page(title: str) -> str:
        """Read a page by its title."""
        return title

    catalog.add(north)
    catalog.add(south)
    return catalog


def order(text: str, names: list[str]) -> list[str]:
    """`names` in the order a search_tools answer lists them."""
    found = {name: match.start() for name in names if (match := re.search(rf"\b{name}\b", text))}
    return sorted(found, key=found.__getitem__)


async def search(catalog: Catalog, query: str) -> str:
    server = build_server(catalog, make_settings())
    async with client(server) as c:
        return text_of(await c.call_tool("search_tools", {"query": query, "limit": 2}))


async def test_the_server_whose_description_the_request_is_about_comes_first() -> None:
    query = "read the lasagne recipe page"
    # The same tools either way round: only which server describes itself as the cookbook changes the answer.
    assert order(await search(two_wikis(ACCOUNTS, COOKBOOK), query), ["fetch_page", "get_page"]) == [
        "get_page", "fetch_page"]
    assert order(await search(two_wikis(COOKBOOK, ACCOUNTS), query), ["fetch_page", "get_page"]) == [
        "fetch_page", "get_page"]


async def test_a_request_about_the_other_server_turns_the_order_round() -> None:
    catalog = two_wikis(COOKBOOK, ACCOUNTS)
    assert order(await search(catalog, "read the plumber's invoice page"), ["fetch_page", "get_page"]) == [
        "get_page", "fetch_page"]


def entry(name: str, group: str, description: str) -> ToolEntry:
    async def call(arguments: dict[str, object]) -> object:
        return arguments

    return ToolEntry(name=name, group=group, description=description, input_schema={"type": "object"},
                     call=call)  # type: ignore[arg-type]


def test_only_the_chosen_servers_best_tool_moves_and_only_when_another_server_led() -> None:
    servers = ServerIndex(["a", "a", "b", "b"], {"b": "Weather forecasts for any city."},
                          [["get", "item"], ["list", "item"], ["get", "thing"], ["list", "thing"]])
    scores = np.array([1.0, 0.5, 0.9, 0.8])
    lifted = servers.lift(scores, lambda: {"forecast": 1.0, "get": 1.0})
    # b is chosen by its description: its best tool gains SERVER_LIFT, its sibling and a's tools stay as they were.
    assert lifted.tolist() == [1.0, 0.5, 0.9 * (1 + SERVER_LIFT), 0.8]
    # When the best tool's own server is the one chosen, nothing moves (no sibling is pulled up with it).
    assert servers.lift(scores, lambda: {"get": 1.0}).tolist() == scores.tolist()
    # A request none of the servers' own words match changes nothing either.
    assert servers.lift(scores, lambda: {"zebra": 1.0}).tolist() == scores.tolist()


def test_the_index_reads_server_descriptions_given_to_it() -> None:
    tools = [entry("fetch_page", "north", "Read a page by its title."),
             entry("get_page", "south", "Read a page by its title.")]
    plain = SearchIndex(tools)
    described = SearchIndex(tools, servers={"north": ACCOUNTS, "south": COOKBOOK})
    query = "read the lasagne recipe page"
    assert [hit.entry.name for hit in plain.search(query)] == ["fetch_page", "get_page"]
    assert [hit.entry.name for hit in described.search(query)] == ["get_page", "fetch_page"]


def test_catalog_about_prefers_what_a_group_says_of_itself_to_its_summary() -> None:
    catalog = Catalog()
    catalog.set_group(Group("a", "One line.", about="One line.\n\nLong instructions."), [])
    catalog.set_group(Group("b", "Only a summary."), [])
    assert catalog.about() == {"a": "One line.\n\nLong instructions.", "b": "Only a summary."}


def two_servers_file(folder: Path) -> Path:
    tools = folder / "tools.jsonl"
    tools.write_text("\n".join(json.dumps(tool) for tool in [
        {"id": "north/page", "name": "fetch_page", "description": "Read a page by its title.", "server": "north"},
        {"id": "south/page", "name": "get_page", "description": "Read a page by its title.", "server": "south"},
    ]) + "\n")
    return tools


def describe_servers(folder: Path) -> None:
    (folder / "servers.jsonl").write_text("\n".join(json.dumps(server) for server in [
        {"server": "north", "description": ACCOUNTS},
        {"server": "south", "description": "The family cookbook.", "instructions": "Holds every recipe we cook."},
    ]) + "\n")


def test_eval_reads_the_servers_file_beside_the_tools(tmp_path: Path) -> None:
    tools = two_servers_file(tmp_path)
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"id": "q", "query": "read the lasagne recipe page",
                                   "relevant_tool_ids": ["south/page"]}) + "\n")
    before = run_eval(tools, queries, limit=1, max_limit=1, misses=0)
    describe_servers(tmp_path)
    after = run_eval(tools, queries, limit=1, max_limit=1, misses=0)
    assert "single        1  0.000" in before and "servers described by" not in before
    assert "single        1  1.000" in after and "servers described by servers.jsonl" in after


def test_a_served_tools_file_reads_the_servers_file_beside_it(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    tools = two_servers_file(tmp_path)
    search = ["--tools-jsonl", str(tools), "search", "read the lasagne recipe page", "--limit", "1"]
    assert main(search) == 0
    assert "fetch_page" in capsys.readouterr().out
    describe_servers(tmp_path)
    assert main(search) == 0
    out = capsys.readouterr().out
    assert "get_page" in out and "fetch_page" not in out
