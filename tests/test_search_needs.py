"""The steps of a multi-step request that no result answers are named in search_tools' result
(`lazytools.search.needs`), so the model can search for each on its own; the results themselves do not change."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from lazytools import Catalog, Group, LazyServer, ToolEntry, build_server
from lazytools.search.needs import MAX_UNANSWERED, Need, answered_needs, unanswered
from lazytools.server.rendering import CLAUSE_ECHO, not_matched_line

from .conftest import client, embedded, make_settings, text_of
from .test_search_coverage import near_alike_catalog

# Five weather tools answer the first two steps; the Slack step's tool ranks 6th for the whole request, so at the
# default limit of five nothing returned posts to Slack.
CROWDED = ("Get the daily weather forecast for Paris with rain and wind, check the hourly weather forecast for "
           "Paris, then post the forecast on Slack")
STORY = ("My landlord says the flat has a damp problem, so get the daily weather forecast for Paris, the hourly "
         "forecast and post it on Slack")
"""Its first clause is the task's story: no result answers it, and no tool is anything like it."""


def catalog_of(entries: list[ToolEntry]) -> Catalog:
    catalog = Catalog()
    for group in dict.fromkeys(entry.group for entry in entries):
        catalog.set_group(Group(group), [entry for entry in entries if entry.group == group])
    return catalog


async def semantic_server(tmp_path: Path) -> LazyServer:
    server = build_server(catalog_of(near_alike_catalog()), make_settings(semantic=True, cache_dir=tmp_path))
    assert (await embedded(server.index)).semantic
    return server


def tool_lines(text: str) -> list[str]:
    """The tools a result lists, in order (enabled ones, then suggestions)."""
    return [re.split(r"[( ]", line[2:], maxsplit=1)[0] for line in text.splitlines() if line.startswith("- ")]


async def test_a_crowded_out_step_is_named_and_its_own_search_finds_it(tmp_path: Path) -> None:
    server = await semantic_server(tmp_path)
    async with client(server, "mcp") as c:
        text = text_of(await c.call_tool("search_tools", {"query": CROWDED, "limit": 5}))
        assert "slack__post_message" not in text  # crowded out of the five the model asked for
        assert len(tool_lines(text)) == 5
        assert text.splitlines()[-1] == 'Not matched yet: "then post the forecast on Slack": search for each on its own.'
        # What the line asks for works: the clause alone finds the step's tool first.
        follow_up = text_of(await c.call_tool("search_tools", {"query": "then post the forecast on Slack"}))
        assert tool_lines(follow_up)[0] == "slack__post_message"
        assert "Not matched yet" not in follow_up


async def test_a_request_of_several_needs_gets_a_place_per_further_need(tmp_path: Path) -> None:
    server = await semantic_server(tmp_path)
    needs = len((await server.index.ready()).analyze(CROWDED).needs)
    assert needs >= 2
    async with client(server, "mcp") as c:
        text = text_of(await c.call_tool("search_tools", {"query": CROWDED}))  # no limit: the needs decide
        assert len(tool_lines(text)) >= 5 + needs - 1
        assert "slack__post_message" in text and "Not matched yet" not in text
        # A place past the five is a suggestion: a line in the result, not a definition in the tool list.
        assert text.startswith("Enabled: ") and "slack__post_message" not in text.splitlines()[0]
        assert len(text.splitlines()[0].split(". Now in your")[0].split(", ")) <= 5
        single = text_of(await c.call_tool("search_tools", {"query": "weather forecast"}))
        assert len(tool_lines(single)) == 5


async def test_no_line_for_a_single_need_or_when_every_step_is_answered(tmp_path: Path) -> None:
    server = await semantic_server(tmp_path)
    async with client(server, "mcp") as c:
        for query in ("post a message on Slack", "Get the weather forecast for Paris and post it on Slack"):
            text = text_of(await c.call_tool("search_tools", {"query": query}))
            assert "slack__post_message" in text
            assert "Not matched yet" not in text


async def test_the_story_of_a_task_is_not_named(tmp_path: Path) -> None:
    server = await semantic_server(tmp_path)
    async with client(server, "mcp") as c:
        text = text_of(await c.call_tool("search_tools", {"query": STORY, "limit": 3}))
        assert "slack__post_message" not in text
        needs = (await server.index.ready()).find(STORY, limit=3).needs
        assert needs[0].text.startswith("My landlord") and needs[0].answered < 0.5  # unanswered, yet not named
        assert text.splitlines()[-1] == 'Not matched yet: "post it on Slack": search for each on its own.'


async def test_the_line_comes_after_the_same_results_and_only_with_embeddings(tmp_path: Path) -> None:
    # The result lists the index's own hits, in order, then the line; a BM25-only server names nothing (BM25 alone
    # does not tell a story clause from a step).
    semantic = await semantic_server(tmp_path)
    lexical = build_server(catalog_of(near_alike_catalog()), make_settings())
    async with client(semantic, "mcp") as c:
        with_line = text_of(await c.call_tool("search_tools", {"query": CROWDED, "limit": 5}))
    hits = (await semantic.index.ready()).search(CROWDED)
    assert tool_lines(with_line) == [hit.entry.name for hit in hits]
    assert with_line.splitlines()[-1].startswith("Not matched yet: ")
    async with client(lexical, "mcp") as c:
        text = text_of(await c.call_tool("search_tools", {"query": CROWDED, "limit": 5}))
        assert "Not matched yet" not in text
        assert len(tool_lines(text)) == 5


def test_needs_are_measured_against_each_clauses_best_tool() -> None:
    parts = [np.array([4.0, 2.0, 0.0, 0.0]), np.array([0.0, 0.0, 3.0, 1.0])]
    needs = answered_needs(["read it", "post it"], parts, [], picked=[1, 3])
    assert [need.answered for need in needs] == [0.5, 1 / 3]
    assert all(need.similarity is None for need in needs)
    assert unanswered(needs) == []  # no embedding: nothing tells a step from the task's story
    similarities = [np.array([0.9, 0.5, 0.1, 0.0]), np.array([0.0, 0.1, 0.2, 0.95])]
    embedded = answered_needs(["read it", "post it"], parts, similarities, picked=[0, 3])
    assert [need.similarity for need in embedded] == [0.9, 0.95]
    assert min(need.answered for need in embedded) > 0.5  # each clause's best tool is among the picks
    assert answered_needs([], [], [], picked=[0]) == ()


def test_unanswered_keeps_steps_in_order_and_at_most_three() -> None:
    needs = [Need(f"step {i}", answered, similarity) for i, (answered, similarity) in
             enumerate([(0.1, 0.9), (0.95, 0.9), (0.2, 0.1), (0.0, 0.6), (0.3, 0.7), (0.4, 0.8), (0.0, None)])]
    assert unanswered(needs, most=10) == ["step 0", "step 3", "step 4", "step 5"]  # answered, story, not embedded
    assert unanswered(needs) == ["step 0", "step 3", "step 4"][:MAX_UNANSWERED]


def test_the_line_quotes_clauses_safely_and_briefly() -> None:
    long_clause = "post " + "x" * 500
    line = not_matched_line(["read the file.", "send\nit", long_clause])
    assert line.startswith('Not matched yet: "read the file", "send\\nit", "post ')
    assert line.endswith(f'… (+{len(long_clause) - CLAUSE_ECHO:,} chars)": search for each on its own.')
    assert "\n" not in line and len(line) < 3 * CLAUSE_ECHO
