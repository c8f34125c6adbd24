"""Search quality floors on the bundled catalog, with queries written by hand for it (not from any benchmark).

`fixtures/bundled_queries.jsonl` holds 60 requests a user might make of the example tools: short keywords,
plain questions, and long requests that need two tools. It was written before the search was tuned, as a
second set unlike MetaTool's (developer and everyday utilities, tools with JSON schemas), so a change that
helps one benchmark at the cost of ordinary catalogs shows up here. The floors are the figures measured when
the set was written, less a small margin.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import pytest

from lazytools import Catalog, Group
from lazytools.app import bundled_catalog
from lazytools.evaluate import Ranker, Scores, cutoffs_for, evaluate, read_queries, served_search
from lazytools.search import SearchIndex, build_index
from lazytools.search.embedders import DEFAULT_EMBEDDER, embedder_named
from lazytools.search.related import RelatedWords
from lazytools.sources.jsonl import JsonlCatalog, load_jsonl_catalog, read_servers

from .conftest import VECTOR_CACHE
from .fixtures.catalogs import realistic

QUERIES = Path(__file__).parent / "fixtures" / "bundled_queries.jsonl"


LIMIT = 5
SERVED = 1000
"""R as served counts every tool a result names: its places (more for a request of several needs) and the tools
added after them (a deliverable's writer, a prerequisite's producer, suggestions)."""
"""Measured as served: what search_tools returns at the server's default limit."""


def served_ranker(catalog: Catalog, index: SearchIndex, ids: Mapping[str, str] | None = None) -> Ranker:
    """A query → the ids of every tool search_tools returns for it at LIMIT, in their order."""
    search = served_search(catalog, index, limit=LIMIT, ids=ids)
    return lambda text: search(text).returned


def scores(tmp_path: Path, *, semantic: bool) -> Scores:
    catalog = bundled_catalog(tmp_path)
    index = build_index(catalog, semantic=semantic, cache_dir=VECTOR_CACHE)
    ranker = served_ranker(catalog, index)
    return evaluate(read_queries(QUERIES), ranker, cutoffs=cutoffs_for(LIMIT))["all"]


def test_every_labelled_tool_is_in_the_bundled_catalog(tmp_path: Path) -> None:
    names = {entry.name for entry in bundled_catalog(tmp_path)}
    queries = read_queries(QUERIES)
    assert len(queries) >= 40
    assert {split.split for split in queries} == {"single", "multi"}
    for query in queries:
        assert frozenset().union(*query.relevant) <= names, query.id


@pytest.mark.parametrize(
    ("semantic", "recall_at_1", "recall_at_5", "mrr"),
    [(False, 0.63, 0.85, 0.75), (True, 0.75, 0.93, 0.86)],
    ids=["bm25", "semantic"],
)
def test_bundled_queries_stay_above_their_floor(
    tmp_path: Path, semantic: bool, recall_at_1: float, recall_at_5: float, mrr: float
) -> None:
    # Measured as served (limit 5): BM25 R@1 .650, R@5 .875, MRR@5 .773; with the semantic extra .767, .950, .872
    # (.800, .967, .892 before round 4 removed the servers' mean vectors, which failed its bar on RestBench).
    # Round 4 lowered these floors (from .67/.90/.80 and .80/.96/.90) only for the rules it removed as fits to one
    # dev miss each: b52-b53 ("15%", "20 percent"), b56-b57 ("all caps") and b58 ("what's inside") were their
    # queries and are misses again (docs/search-log.md, "Round 4").
    result = scores(tmp_path, semantic=semantic)
    assert result.recall(1) >= recall_at_1
    assert result.recall(5) >= recall_at_5
    assert result.mrr >= mrr


REALISTIC_QUERIES = Path(__file__).parent / "fixtures" / "realistic_queries.jsonl"
"""28 requests to a 30-tool developer gateway (GitHub, Jira, files, Slack, Postgres, browser, memory, time)
phrased as people ask, mostly not in the tools' words ("get rid of the old log file", "which Slack rooms can I
join"), written before they were measured. Measured as served (limit 5): BM25 without related words R@5 .679,
MRR@5 .548; with them .964, .705; with the semantic extra too .964, .804."""


def developer_scores(**options: object) -> Scores:
    catalog = Catalog()
    for entry in realistic():
        catalog.set_group(Group(entry.group, ""), [*catalog.in_group(entry.group), entry])
    index = SearchIndex(catalog, **options)  # type: ignore[arg-type]
    queries = read_queries(REALISTIC_QUERIES)
    assert len(queries) == 28
    ranker = served_ranker(catalog, index)
    return evaluate(queries, ranker, cutoffs=cutoffs_for(LIMIT))["single"]


def test_related_words_find_developer_tools_asked_for_in_other_words() -> None:
    without = developer_scores(related=RelatedWords({}))
    with_related = developer_scores()
    assert without.recall(5) < 0.80  # the words alone miss a quarter of these (a third before round 3)
    assert with_related.recall(5) >= 0.92 and with_related.mrr >= 0.66


def test_developer_queries_with_the_semantic_extra() -> None:
    result = developer_scores(embedder=embedder_named(DEFAULT_EMBEDDER))
    assert result.recall(5) >= 0.92 and result.mrr >= 0.76


MULTISERVER = Path(__file__).parents[1] / "benchmarks" / "data" / "multiserver"
"""The multi-server dev set kept in the repository (647 tools of 54 real servers, 196 requests written before
they were measured: single-need, multi-step and long tasks; see its SOURCE.md). Figures as served are in
docs/search.md; the floors below sit a little under them."""


def test_multiserver_labels_name_tools_of_the_set() -> None:
    ids = {json.loads(line)["id"] for line in (MULTISERVER / "tools.jsonl").read_text().splitlines()}
    queries = read_queries(MULTISERVER / "queries.jsonl")
    assert len(ids) == 654 and len(queries) == 196
    assert sum(query.split == "long" for query in queries) == 70
    for query in queries:
        assert frozenset().union(*query.relevant) <= ids, query.id
    # The confirmation set, the cross-language check and the everyday phrasing label tools of the same catalog.
    names = ("confirm", "crosslang", "phrasing", "questions", "usage", "deliverables", "prereqs", "everyday", "misses")
    checks = [query for name in names for query in read_queries(MULTISERVER / f"{name}.jsonl")]
    assert len(checks) == 30 + 32 + 37 + 24 + 40 + 28 + 28 + 16 + 48
    for query in checks:
        assert query.relevant and frozenset().union(*query.relevant) <= ids, query.id


def test_multiserver_requests_as_served_stay_above_their_floor() -> None:
    loaded = load_jsonl_catalog(MULTISERVER / "tools.jsonl")
    index = build_index(loaded.catalog)
    queries = read_queries(MULTISERVER / "queries.jsonl")
    ranker = served_ranker(loaded.catalog, index, ids=loaded.ids)
    scores = evaluate(queries, ranker, cutoffs=cutoffs_for(LIMIT))
    assert scores["all"].recall(SERVED) >= 0.74 and scores["single"].recall(SERVED) >= 0.80
    assert scores["multi"].recall(SERVED) >= 0.66 and scores["long"].recall(SERVED) >= 0.64
    chinese = [query for query in queries if query.id.startswith("c") or query.id in ("m17", "m18")]
    assert len(chinese) == 12 and evaluate(chinese, ranker, cutoffs=cutoffs_for(LIMIT))["all"].recall(SERVED) >= 0.6


@pytest.mark.parametrize(
    ("name", "split", "floor"),
    [("deliverables", "deliverable", 0.60), ("prereqs", "prereq", 0.60), ("everyday", "everyday", 0.34)],
)
def test_deliverables_prerequisites_and_everyday_wordings_stay_above_their_floor(name: str, split: str,
                                                                                  floor: float) -> None:
    # benchmarks/data/multiserver, round 3 (SOURCE.md). As served with BM25, all of each file: deliverables .643
    # (.476 before a deliverable took a place), prerequisite steps .643 (.560 before the best results' producer
    # took one), everyday wordings .375 (.188 before "remember", "summarise", "what changed" were read).
    loaded = load_jsonl_catalog(MULTISERVER / "tools.jsonl")
    ranker = served_ranker(loaded.catalog, build_index(loaded.catalog), ids=loaded.ids)
    scores = evaluate(read_queries(MULTISERVER / f"{name}.jsonl"), ranker, cutoffs=cutoffs_for(LIMIT))
    assert scores[split].recall(SERVED) >= floor


def test_everyday_phrasing_finds_its_tools() -> None:
    # benchmarks/data/multiserver/phrasing.jsonl: 37 requests in phrasal verbs and idioms ("spin up", "tear down",
    # "drop a message", "open a PR"). As served: .892 (.757 before phrasal verbs were read).
    loaded = load_jsonl_catalog(MULTISERVER / "tools.jsonl")
    ranker = served_ranker(loaded.catalog, build_index(loaded.catalog), ids=loaded.ids)
    scores = evaluate(read_queries(MULTISERVER / "phrasing.jsonl"), ranker, cutoffs=cutoffs_for(LIMIT))
    assert scores["phrasing"].recall(SERVED) >= 0.86


def test_questions_find_what_they_ask_for() -> None:
    # benchmarks/data/multiserver/questions.jsonl: 24 requests asked as questions ("how far", "how many", "where").
    # As served: .792 (.625 before question words were read).
    loaded = load_jsonl_catalog(MULTISERVER / "tools.jsonl")
    ranker = served_ranker(loaded.catalog, build_index(loaded.catalog), ids=loaded.ids)
    scores = evaluate(read_queries(MULTISERVER / "questions.jsonl"), ranker, cutoffs=cutoffs_for(LIMIT))
    assert scores["questions"].recall(SERVED) >= 0.75


@cache
def _multiserver_semantic() -> tuple[JsonlCatalog, SearchIndex]:
    """The multi-server dev catalog and its index with the semantic extra, built once per test process: embedding
    it was the slowest step of two tests that only search it."""
    loaded = load_jsonl_catalog(MULTISERVER / "tools.jsonl")
    return loaded, build_index(loaded.catalog, semantic=True, cache_dir=VECTOR_CACHE)


def test_multiserver_requests_with_the_semantic_extra_stay_above_their_floor() -> None:
    # Measured as served with the default embedder: all .770, single .872, multi .698, long .666 (BM25: .727, .819,
    # .672, .629). Requests naming no group lean further on the embedding (fusion.UNNAMED_SEMANTIC_WEIGHT): at the
    # named requests' weight the single-need ones scored .862 and all .763.
    loaded, index = _multiserver_semantic()
    ranker = served_ranker(loaded.catalog, index, ids=loaded.ids)
    scores = evaluate(read_queries(MULTISERVER / "queries.jsonl"), ranker, cutoffs=cutoffs_for(LIMIT))
    assert scores["all"].recall(SERVED) >= 0.75 and scores["single"].recall(SERVED) >= 0.86
    assert scores["multi"].recall(SERVED) >= 0.66 and scores["long"].recall(SERVED) >= 0.64


def _served_dev_set() -> tuple[Ranker, dict[str, str]]:
    """The multi-server dev catalog searched as served (the search_tools meta-tool, limit 5, BM25): a request ->
    the ids it returns, its servers described by their servers.jsonl as `lazytools eval` reads it."""
    loaded = load_jsonl_catalog(MULTISERVER / "tools.jsonl", servers=read_servers(MULTISERVER / "servers.jsonl"))
    index = build_index(loaded.catalog)
    return served_ranker(loaded.catalog, index, ids=loaded.ids), loaded.ids


def test_a_tool_described_in_another_language_gives_way_to_its_english_namesake() -> None:
    # Baidu's map_geocode / map_distance_matrix (described in Chinese, found through their English rendering)
    # took two of the five places beside Google's tools of the same names, and the pin map was lost (dev set m13).
    search, _ = _served_dev_set()
    returned = search("Geocode the addresses of our three warehouses, compute the distance matrix between them, "
                      "then draw the three of them on a pin map.")
    assert {"google-maps/maps_geocode", "google-maps/maps_distance_matrix", "chart/generate_pin_map"} <= set(returned)
    assert not {"baidu-map/map_geocode", "baidu-map/map_distance_matrix"} & set(returned)
    # Of the two current-time tools, the English-described one stays for an English request (prereqs r19) ...
    asked = search("What time is it in Tokyo when it's 3pm here tomorrow?")
    assert "time/get_current_time" in asked
    # ... a request in Chinese is left as ranked, and a tool the request names never moves.
    assert search("map_geocode")[0] == "baidu-map/map_geocode"


def test_remember_and_forget_reach_the_memory_server_not_a_translation_memory() -> None:
    # misses.jsonl mem01 / mem05 and dev set s14: "remember" read as memory alone brought lara-translate's
    # translation-memory tools first; "forget" as delete alone brought any deleting tool.
    search, _ = _served_dev_set()
    remembered = search("remember that my dentist appointment is on the 14th")
    assert {"memory/create_entities", "memory/add_observations"} & set(remembered)
    forgotten = search("forget everything about the project Phoenix")
    assert {"memory/delete_entities", "memory/delete_observations"} & set(forgotten)


def test_remember_and_forget_said_in_chinese_reach_the_memory_server() -> None:
    # The English words of 记住 ("remember") and 忘记 ("forget") are read as the English verbs are (phrases.py).
    search, _ = _served_dev_set()
    assert {"memory/create_entities", "memory/add_observations"} & set(search("记住我的生日是五月十日"))
    assert {"memory/delete_entities", "memory/delete_observations"} & set(search("忘记关于Alice的一切"))


def test_a_question_about_what_is_remembered_reads_memory() -> None:
    # "what do you remember about ..." asks what memory holds: a read or a search of it, not a store.
    search, _ = _served_dev_set()
    returned = search("what do you remember about my project deadlines?")
    assert returned[0] in ("memory/read_graph", "memory/search_nodes", "memory/open_nodes"), returned
    assert "memory/add_observations" not in returned[:2], returned
    assert {"memory/create_entities", "memory/add_observations"} & set(search("remember my deadline is Friday")[:2])


def test_adding_numbers_finds_a_tool_that_sums() -> None:
    # "add" with a number after it is arithmetic, not adding a card or a comment.
    search, _ = _served_dev_set()
    for request in ("add 17 and 25", "what is 17 plus 25"):
        assert {"everything/get-sum", "calculator/calculate"} & set(search(request)), request
    assert "trello/add_card_to_list" in search("add a card to the Done list in Trello")


def test_an_unstated_step_takes_its_place_though_the_request_never_names_it() -> None:
    # misses.jsonl pq01 / pq08: a forecast needs coordinates and the request names no place tool, so the geocoder
    # of the forecast's server scores nothing for it; it takes the last place all the same.
    search, _ = _served_dev_set()
    assert "open-meteo/geocoding" in search("what will the weather be like in Lisbon this weekend")


def test_a_tool_that_lists_something_else_is_not_the_producer_of_a_list_id() -> None:
    # misses.jsonl sb09: archive_list requires a listId; list_boards (which lists boards) was taken for its
    # producer, so get_lists never came.
    search, _ = _served_dev_set()
    returned = search("archive the Done list on our sprint board in Trello")
    assert {"trello/archive_list", "trello/get_lists"} <= set(returned)


def test_remember_reaches_the_memory_server_with_the_semantic_extra_too() -> None:
    # misses.jsonl mem01 / mem07: the encoder read "remember that my dentist appointment ..." as a calendar or a
    # checklist; it now also reads what the verb means (phrases.py), as BM25 does.
    loaded, index = _multiserver_semantic()
    search = served_ranker(loaded.catalog, index, ids=loaded.ids)
    for request in ("remember that my dentist appointment is on the 14th",
                    "memorize that Tom's birthday is 3 March and that he is my brother"):
        assert {"memory/create_entities", "memory/add_observations"} & set(search(request)), request
