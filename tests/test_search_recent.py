"""What a search remembers between queries (an index's recent answers, rendered lines) and what it may do on the
event loop: the same answers as a fresh search, never another principal's, another catalog's or another session's."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lazytools import Catalog, Group, build_server
from lazytools.search import LiveIndex, SearchIndex
from lazytools.search.embedders import embed_finite
from lazytools.search.index import RECENT_QUERIES
from lazytools.search.query import QUICK_CHARS, QUICK_NEEDS, QUICK_TOOLS, QUICK_WORDS
from lazytools.search.recent import RecentAnswers
from lazytools.search.related import RelatedWords
from lazytools.search.vocabulary import Vocabulary
from lazytools.server.metatools import quick_search

from .conftest import client, make_settings, small_catalog, text_of
from .fixtures.catalogs import tool
from .test_search_semantic import catalog as vehicles
from .test_search_semantic import fake_embedder


def names(index: SearchIndex, query: str, **kwargs: Any) -> list[str]:
    return [hit.entry.name for hit in index.search(query, **kwargs)]


def counted(index: SearchIndex, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The queries `index` really ranks from now on (not those answered from its recent answers)."""
    ranked: list[str] = []
    find = index._find

    def spy(query: str, **kwargs: Any) -> Any:
        ranked.append(query)
        return find(query, **kwargs)

    monkeypatch.setattr(index, "_find", spy)
    return ranked


def test_a_query_asked_again_gets_the_same_answer_without_being_ranked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    index = SearchIndex(list(small_catalog()))
    ranked = counted(index, monkeypatch)
    first = names(index, "weather forecast for a city")
    assert names(index, "weather forecast for a city") == first and first
    assert ranked == ["weather forecast for a city"]
    # Another limit, group or query is another answer.
    names(index, "weather forecast for a city", limit=2)
    names(index, "weather forecast for a city", groups=["weather"])
    names(index, "create an issue")
    assert len(ranked) == 4


def test_a_caller_reordering_its_hits_does_not_change_the_answer_kept() -> None:
    index = SearchIndex(list(small_catalog()))
    hits = index.search("weather forecast for a city")
    expected = [hit.entry.name for hit in hits]
    hits.reverse()
    hits.pop()
    assert names(index, "weather forecast for a city") == expected


def test_the_answers_kept_are_bounded_and_the_least_recently_used_leaves_first() -> None:
    recent: RecentAnswers[str] = RecentAnswers(2)
    recent.put("a", "A")
    recent.put("b", "B")
    assert recent.get("a") == "A"  # now the most recently used
    recent.put("c", "C")
    assert (recent.get("a"), recent.get("b"), recent.get("c"), len(recent)) == ("A", None, "C", 2)
    index = SearchIndex(list(small_catalog()))
    for number in range(RECENT_QUERIES + 20):
        index.search(f"weather {number}")
    assert len(index._recent) == RECENT_QUERIES


def test_a_restricted_view_never_answers_with_the_whole_index_s_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    index = SearchIndex(list(small_catalog()))
    query = "weather forecast for a city"
    assert "get_forecast" in names(index, query)
    view = index.restricted(lambda entry: entry.name != "get_forecast")
    assert "get_forecast" not in names(view, query) and names(view, query)
    assert "get_forecast" in names(index, query)  # nor the other way round
    # A second view of other tools answers for its own.
    other = index.restricted(lambda entry: entry.group == "tracker")
    assert set(names(other, query)) <= {"create_issue", "list_issues"}


def test_embeddings_arriving_drop_the_answers_given_without_them() -> None:
    index = SearchIndex(vehicles(), related=RelatedWords({}))
    assert names(index, "sedan hire") == []  # no word matches: BM25 alone finds nothing
    embedder = fake_embedder()
    index.use_embeddings(embedder, embed_finite(embedder, index.embedding_texts()))
    assert names(index, "sedan hire")[0] == "car_rental"


async def test_a_changed_catalog_is_searched_afresh() -> None:
    catalog = Catalog()
    catalog.set_group(Group("weather", ""), [tool("get_forecast", "Weather forecast for a city.", "weather")])
    live = LiveIndex(catalog)
    before = await live.ready()
    assert "unit_convert" not in names(before, "convert units")
    catalog.set_group(Group("units", ""), [tool("unit_convert", "Convert between units.", "units")])
    after = await live.ready()
    assert after is not before and names(after, "convert units")[0] == "unit_convert"


async def test_two_sessions_searching_alike_each_get_their_own_tools_enabled() -> None:
    server = build_server(small_catalog(), make_settings())
    async with client(server) as first, client(server) as second:
        found = text_of(await first.call_tool("search_tools", {"query": "weather forecast for a city"}))
        assert "Enabled: get_forecast" in found
        assert "get_forecast" in [t.name for t in (await first.list_tools()).tools]
        assert "get_forecast" not in [t.name for t in (await second.list_tools()).tools]
        again = text_of(await second.call_tool("search_tools", {"query": "weather forecast for a city"}))
        assert again == found  # the same answer, enabled in this session too
        assert "get_forecast" in [t.name for t in (await second.list_tools()).tools]


def test_a_quick_search_is_small_bm25_over_a_small_catalog() -> None:
    small = SearchIndex(list(small_catalog()))
    small.vocabulary.prepare()
    assert quick_search(small, {"query": "weather forecast", "limit": 5})
    assert quick_search(small, {"tool_names": ["get_forecast"]}) and quick_search(small, {"group": "weather"})
    assert not quick_search(small, {"query": "w" * (QUICK_CHARS + 1)})
    assert not quick_search(small, {"query": "天气预报"})  # the first Chinese text reads the dictionary
    assert not quick_search(small, {"query": "weather", "extra": 1})  # the schema check's, with its error
    assert not quick_search(small, {"query": ["weather"]}) and not quick_search(small, ["weather"])
    assert not quick_search(small, {"tool_names": ["x"] * 51})
    large = SearchIndex([tool(f"tool_{n}", f"Does thing {n}.") for n in range(QUICK_TOOLS + 1)])
    large.vocabulary.prepare()
    assert not quick_search(large, {"query": "thing"})
    embedder = fake_embedder()
    semantic = SearchIndex(vehicles(), embedder=embedder)
    assert not quick_search(semantic, {"query": "sedan hire"})


def test_a_quick_search_needs_the_spelling_table_built() -> None:
    index = SearchIndex(list(small_catalog()))
    assert not index.vocabulary.prepared
    assert not quick_search(index, {"query": "weather forecast"})  # the first typo would build it on the loop
    index.vocabulary.prepare()
    assert index.vocabulary.prepared and quick_search(index, {"query": "weather forecast"})
    assert quick_search(index.restricted(lambda entry: True), {"query": "weather forecast"})  # views share it


async def test_the_served_index_is_built_with_its_spelling_table() -> None:
    live = LiveIndex(small_catalog())
    index = await live.ready()
    assert index.vocabulary.prepared
    assert index.vocabulary.corrections("forcast") == ["forecast"]


async def test_a_served_typo_never_builds_the_spelling_table_on_the_event_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    built_in: list[int] = []
    build = Vocabulary._delete_index

    def spy(self: Vocabulary) -> dict[str, list[str]]:
        if self._by_delete is None:  # about to be built
            built_in.append(threading.get_ident())
        return build(self)

    monkeypatch.setattr(Vocabulary, "_delete_index", spy)
    loop_thread = threading.get_ident()
    server = build_server(small_catalog(), make_settings())
    async with client(server) as session:
        found = text_of(await session.call_tool("search_tools", {"query": "wether forcast"}))
    assert "get_forecast" in found  # the typo was corrected
    assert built_in and loop_thread not in built_in


def test_a_quick_query_is_short_in_words_and_needs() -> None:
    index = SearchIndex(list(small_catalog()))
    index.vocabulary.prepare()
    assert quick_search(index, {"query": "convert a temperature"})  # the HTTP benchmark's query
    assert quick_search(index, {"query": "get the weather in Paris and email it to Bob"})  # two needs
    words = " ".join(["weather"] * QUICK_WORDS)
    assert quick_search(index, {"query": words})
    assert not quick_search(index, {"query": words + " forecast"})
    glued = "then call " + "__".join(["a"] * QUICK_WORDS)  # one word of many identifier parts
    assert len(glued) <= QUICK_CHARS and not quick_search(index, {"query": glued})
    many = ", ".join(["add 1 and 2"] * 20)
    assert len(many) <= QUICK_CHARS and not quick_search(index, {"query": many})
    needs = ", then ".join(["read the weather forecast"] * (QUICK_NEEDS + 1))
    assert len(needs.split()) <= QUICK_WORDS and not quick_search(index, {"query": needs})
