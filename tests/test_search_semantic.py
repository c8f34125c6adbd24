"""The semantic extra: fusion logic on a tiny fake embedding table, then the real WordLlama weights offline."""

from __future__ import annotations

import re
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import numpy as np
import pytest
from mcp import Client

from lazytools import ConfigError
from lazytools.search import LiveIndex, SearchIndex, build_index, fusion
from lazytools.search.config import RankingConfig
from lazytools.search.documents import embedding_text
from lazytools.search.embedders import StaticEmbedder, embedder_named
from lazytools.search.embedders.base import Vectors
from lazytools.search.embedders.static import load_wordllama
from lazytools.search.fusion import fuse_semantic, with_clauses, zscores
from lazytools.search.query import clauses
from lazytools.search.related import RelatedWords
from lazytools.search.semantic import Pace, tool_vectors
from lazytools.server.core import BM25_ONLY

from .conftest import client, embedded, make_settings, small_catalog, text_of
from .fixtures.catalogs import realistic, tool

CLAUSE_WEIGHT = RankingConfig().clause_weight

# Two dimensions of meaning: vehicles+renting along x, weather along y. Synonyms share a row.
_ROWS = {"car": [1.0, 0.0], "sedan": [1.0, 0.0], "rent": [0.9, 0.1], "hire": [0.9, 0.1],
         "weather": [0.0, 1.0], "forecast": [0.0, 1.0], "rain": [0.1, 1.0]}
_IDS = {word: i for i, word in enumerate(_ROWS)}


def fake_embedder() -> StaticEmbedder:
    def encode(text: str) -> list[int]:
        return [_IDS[word] for word in re.findall(r"[a-z]+", text.lower()) if word in _IDS]

    return StaticEmbedder(np.array(list(_ROWS.values())), encode, name="fake")


def catalog() -> list:  # type: ignore[type-arg]
    return [tool("car_rental", "Rent a car at an airport."), tool("get_forecast", "Weather forecast for a city."),
            tool("unit_convert", "Convert between units.")]


def test_embedder_means_and_normalises_token_rows() -> None:
    vectors = fake_embedder().embed(["car", "car weather", "nothing known"])
    assert np.allclose(vectors[0], [1.0, 0.0])
    assert np.allclose(vectors[1], [np.sqrt(0.5), np.sqrt(0.5)])
    assert np.allclose(vectors[2], [0.0, 0.0])  # no tokens: a zero vector, not NaN


def test_semantic_finds_what_no_word_matches() -> None:
    # Without related words, so that only the embedding can bridge "sedan hire" and "rent a car".
    lexical = SearchIndex(catalog(), related=RelatedWords({}))
    semantic = SearchIndex(catalog(), embedder=fake_embedder(), related=RelatedWords({}))
    assert lexical.search("sedan hire") == []
    assert [hit.entry.name for hit in semantic.search("sedan hire")][0] == "car_rental"
    assert [hit.entry.name for hit in semantic.search("rain tomorrow")][0] == "get_forecast"
    assert semantic.semantic and not lexical.semantic


def test_names_still_come_first_with_the_semantic_extra() -> None:
    index = SearchIndex(catalog(), embedder=fake_embedder())
    assert [hit.entry.name for hit in index.search("unit_convert")][0] == "unit_convert"
    assert [hit.entry.name for hit in index.search("car hire", groups=["misc"], limit=1)] == ["car_rental"]


def test_semantic_weight_zero_is_bm25_order() -> None:
    index = SearchIndex(realistic(), embedder=fake_embedder(), semantic_weight=0.0)
    plain = SearchIndex(realistic())
    query = "read a file and list the directory"
    assert [h.entry.name for h in index.search(query, limit=3)] == [h.entry.name for h in plain.search(query, limit=3)]


def test_tiny_catalogs_with_the_semantic_extra() -> None:
    one = SearchIndex([tool("car_rental", "Rent a car.")], embedder=fake_embedder())
    assert [hit.entry.name for hit in one.search("automobile")] == ["car_rental"]
    two = SearchIndex(catalog()[:2], embedder=fake_embedder())
    assert [hit.entry.name for hit in two.search("forecast")] == ["get_forecast", "car_rental"]


def test_zscores_and_fusion() -> None:
    assert zscores(np.array([2.0, 2.0, 2.0])).tolist() == [0.0, 0.0, 0.0]
    z = zscores(np.array([1.0, 2.0, 3.0]))
    assert np.isclose(z.mean(), 0.0) and np.isclose(z.std(), 1.0)
    lexical, cosine = np.array([0.0, 10.0, 0.0]), np.array([0.9, 0.1, 0.2])
    assert np.argmax(fuse_semantic(lexical, cosine, 1.0)) == 0
    assert np.argmax(fuse_semantic(lexical, cosine, 0.0)) == 1
    assert np.allclose(fuse_semantic(lexical * 7, cosine, 0.5), fuse_semantic(lexical, cosine, 0.5))  # scale-free


def test_each_need_of_a_request_adds_its_own_similarity() -> None:
    lexical, whole = np.zeros(4), np.array([0.50, 0.48, 0.0, 0.0])
    need = np.array([0.0, 1.0, 0.0, 0.0])
    assert np.argmax(fuse_semantic(lexical, whole, 1.0)) == 0
    assert np.argmax(fuse_semantic(lexical, whole, 1.0, parts=[need])) == 1  # the tool one need asks for
    other = np.array([0.0, 0.0, 1.0, 0.0])
    best = np.maximum(zscores(need), zscores(other))  # each tool counts the need it answers best
    expected = 0.3 * zscores(lexical) + 0.7 * (zscores(whole) + CLAUSE_WEIGHT * best)
    assert np.allclose(fuse_semantic(lexical, whole, 0.7, parts=[need, other]), expected)


def test_search_embeds_the_needs_of_a_long_request() -> None:
    tools = [tool("car_rental", "Rent a car at an airport."), tool("get_forecast", "Weather forecast for a city."),
             tool("road_trip", "Car hire with the weather on the way."), tool("fleet_weather", "Weather for car fleets.")]

    def lead_of_the_tools_between_the_needs(config: RankingConfig = RankingConfig()) -> float:
        index = SearchIndex(tools, embedder=fake_embedder(), config=config)
        hits = {h.entry.name: h.score for h in index.search(query, limit=4)}
        return hits["fleet_weather"] - hits["get_forecast"]

    query = "car hire, and the weather forecast"
    with_needs = lead_of_the_tools_between_the_needs()
    assert with_needs < lead_of_the_tools_between_the_needs(RankingConfig(clause_weight=0.0))
    assert with_needs < lead_of_the_tools_between_the_needs(RankingConfig(off={"clauses"}))


def test_a_long_task_gives_the_embedding_a_smaller_share(monkeypatch: pytest.MonkeyPatch) -> None:
    import lazytools.search.stages as stages

    config = RankingConfig()
    long = config.long_task_clauses
    assert fusion.semantic_weight(long - 1) == config.semantic_weight
    assert fusion.semantic_weight(long) == config.long_task_semantic_weight < config.semantic_weight
    assert fusion.semantic_weight(long, named=False) == config.long_task_semantic_weight
    assert fusion.semantic_weight(long, RankingConfig(semantic_weight=0.0)) == 0.0  # a BM25-only weight stays so
    weights: list[float] = []

    def spy(lexical: np.ndarray, similarity: np.ndarray, weight: float, **kwargs: object) -> np.ndarray:
        weights.append(weight)
        return fuse_semantic(lexical, similarity, weight, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(stages, "fuse_semantic", spy)
    index = SearchIndex(catalog(), embedder=fake_embedder())
    long_task = "We fly to Lisbon on Friday. Rent a car at the airport. Check the weather forecast. Convert the units."
    short = "car hire and the weather forecast"
    assert len(clauses(long_task)) >= long > len(clauses(short))
    index.search(short)
    index.search(long_task)
    assert weights == [config.unnamed_semantic_weight, config.long_task_semantic_weight]  # neither names a group


def test_a_request_naming_no_group_leans_further_on_the_embedding(monkeypatch: pytest.MonkeyPatch) -> None:
    import lazytools.search.stages as stages

    config = RankingConfig()
    assert fusion.semantic_weight(2, named=False) == config.unnamed_semantic_weight > config.semantic_weight
    assert fusion.semantic_weight(2, named=True) == config.semantic_weight
    assert fusion.semantic_weight(2, RankingConfig(semantic_weight=0.0), named=False) == 0.0  # BM25-only stays so
    assert fusion.semantic_weight(2, RankingConfig(semantic_weight=0.9), named=False) == 1.0  # never above 1
    weights: list[float] = []

    def spy(lexical: np.ndarray, similarity: np.ndarray, weight: float, **kwargs: object) -> np.ndarray:
        weights.append(weight)
        return fuse_semantic(lexical, similarity, weight, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(stages, "fuse_semantic", spy)
    tools = [tool("car_rental", "Rent a car at an airport.", "hertz"), tool("get_forecast", "Weather forecast.", "meteo"),
             tool("unit_convert", "Convert between units.", "units")]
    index = SearchIndex(tools, embedder=fake_embedder())
    index.search("rent a car")
    index.search("rent a car from Hertz")  # names the group: BM25's product match keeps its share
    index.search("weather forecast, then a hertz car")
    index.search("hertzian waves")  # a longer word is no mention of the group
    assert weights == [config.unnamed_semantic_weight, config.semantic_weight, config.semantic_weight,
                       config.unnamed_semantic_weight]


def test_clause_scores_lift_the_best_tool_of_each_need() -> None:
    whole = np.array([10.0, 1.0, 0.0])
    fused = with_clauses(whole, [np.array([5.0, 0.0, 0.0]), np.array([0.0, 2.0, 0.0])], weight=0.5)
    assert fused.tolist() == [15.0, 6.0, 0.0]
    assert with_clauses(whole, []).tolist() == whole.tolist()


def test_clause_scores_of_many_needs_are_each_needs_share_at_best_to_the_last_bit() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        whole = rng.random(40) * rng.integers(0, 3, 40)
        parts = [rng.random(40) * rng.integers(0, 2, 40) * float(rng.integers(0, 2))
                 for _ in range(int(rng.integers(1, 25)))]
        best = np.zeros_like(whole)  # the rule need by need: each clause scaled to its own top, the best per tool
        for part in parts:
            if part.max() > 0:
                best = np.maximum(best, part / part.max())
        expected = whole + 0.6 * float(whole.max()) * best if whole.max() > 0 else whole
        assert np.array_equal(with_clauses(whole, parts, weight=0.6), expected)


def test_embedding_text_keeps_the_start_of_long_descriptions() -> None:
    entry = tool("read_file", "Read a file. " + "Details. " * 100)
    text = embedding_text(entry)
    assert text.startswith("read file: Read a file.") and len(text) < 450


# -- the real weights, shipped in the wordllama wheel (installed by the `test` and `semantic` extras) ----------


def test_wordllama_loads_offline_and_embeds_meaning() -> None:
    embedder = embedder_named("wordllama")
    assert embedder.dimensions == 256 and embedder_named("wordllama") is embedder
    vectors = embedder.embed(["weather forecast for tomorrow", "will it rain tomorrow", "compress a video file"])
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_wordllama_search_on_a_realistic_catalog() -> None:
    index = build_index(realistic(), semantic=True, embedder="wordllama")
    assert [hit.entry.name for hit in index.search("will it rain in Lisbon tomorrow", limit=2)][0].startswith(
        "weather__")
    assert [hit.entry.name for hit in index.search("capture an image of the web page", limit=3)].count(
        "browser__screenshot") == 1


def test_missing_weights_are_a_config_error_naming_the_extra(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"{sys.executable} -m pip install -e ")):
        load_wordllama(tmp_path)


async def test_server_with_semantic_setting_searches_by_meaning(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = server_factory(semantic=True, embedder="wordllama", cache_dir=tmp_path)
    assert (await embedded(server.index)).semantic
    async with client(server, "mcp") as c:
        result = await c.call_tool("search_tools", {"query": "is it going to be sunny", "limit": 2})
        assert not result.is_error
        assert "get_forecast" in text_of(result)
        # Every tool is ranked by meaning, even for words no tool and no related word has.
        result = await c.call_tool("search_tools", {"query": "vorpal snickersnack", "limit": 2})
        assert text_of(result).startswith("Enabled: ")
    async with client(server_factory(), "mcp") as c:
        result = await c.call_tool("search_tools", {"query": "vorpal snickersnack", "limit": 2})
        assert not text_of(result).startswith("Enabled: ")


def test_semantic_setting_is_off_by_default() -> None:
    assert make_settings().semantic is False


class GatedEmbedder:
    """The fake embedder, holding every batch until the test lets it go: embedding that is not done yet."""

    def __init__(self) -> None:
        # One fingerprint each: the outside tools' vectors are made once per process and embedder fingerprint.
        self.name = self.fingerprint = f"gated-{uuid.uuid4().hex}"
        self.go = threading.Event()
        self._inner = fake_embedder()

    @property
    def dimensions(self) -> int:
        return self._inner.dimensions

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.go.wait(60)
        return self._inner.embed(texts)


class OutsideGatedEmbedder(GatedEmbedder):
    """Embeds the catalog's tools and the requests at once, and holds the background thread's later batches (the
    outside tools, made after the catalog's)."""

    def __init__(self) -> None:
        super().__init__()
        self.background_calls = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        if threading.current_thread().name == "lazytools-embed":
            self.background_calls += 1
            if self.background_calls > 1:
                return super().embed(texts)
        return self._inner.embed(texts)


@asynccontextmanager
async def gated_server(server_factory, tmp_path: Path, wait: float,  # type: ignore[no-untyped-def]
                       gated: GatedEmbedder) -> AsyncIterator[tuple[Client, LiveIndex]]:
    """A client of a semantic server whose index embeds with `gated`, let go (and stopped) at the end."""
    server = server_factory(semantic=True, semantic_wait=wait)
    server.index = live = LiveIndex(server.catalog, semantic=True, embedder=gated, cache_dir=tmp_path)
    try:
        async with client(server, "mcp") as c:
            yield c, live
    finally:
        gated.go.set()
        live.stop()


async def test_a_search_waits_for_the_embedding_then_answers_with_it(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    gated = GatedEmbedder()
    answers: list[str] = []
    async with gated_server(server_factory, tmp_path, 600, gated) as (c, live):
        async with anyio.create_task_group() as tg:
            async def search() -> None:
                answers.append(text_of(await c.call_tool("search_tools", {"query": "convert units"})))

            tg.start_soon(search)
            await anyio.sleep(0.3)
            assert answers == [] and live.background is not None and not live.background.done.is_set()
            gated.go.set()
        assert len(answers) == 1 and BM25_ONLY not in answers[0]
        assert live.background is not None and live.background.error is None


async def test_a_search_that_outlasts_the_wait_says_bm25_alone_ranked_it(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    gated = GatedEmbedder()
    async with gated_server(server_factory, tmp_path, 0, gated) as (c, live):
        first = text_of(await c.call_tool("search_tools", {"query": "convert units"}))
        assert first.endswith(BM25_ONLY)
        gated.go.set()
        assert await live.embedded(600)
        again = text_of(await c.call_tool("search_tools", {"query": "convert units"}))
        assert BM25_ONLY not in again and again.startswith("Enabled: ")


def test_the_pace_of_an_embedding_is_read_from_its_second_batch_on() -> None:
    now = [100.0]
    pace = Pace(lambda: now[0])
    assert pace.left() is None
    pace.heard(0, 320)
    now[0] = 105.0  # the first batch: 5 s, warming the model up
    pace.heard(32, 320)
    assert pace.left() is None  # no pace yet
    now[0] = 106.0
    pace.heard(64, 320)  # 1 s a batch of 32 from now on
    assert pace.left() == pytest.approx(8.0)
    now[0] = 107.5
    assert pace.left() == pytest.approx(6.5)  # time passes while the next batch runs


def test_the_pace_hears_of_every_batch_the_cache_lacks(tmp_path: Path) -> None:
    heard: list[tuple[int, int]] = []
    texts = [f"car weather {n}" for n in range(70)]  # distinct texts, all of known words
    tool_vectors(fake_embedder(), texts[:40], tmp_path)  # cached: not embedded again
    tool_vectors(fake_embedder(), texts, tmp_path, progress=lambda done, total: heard.append((done, total)))
    assert heard == [(0, 30), (30, 30)]


class _Running:
    """A background embedding that never ends, whose pace says how long it has left."""

    def __init__(self, left: float | None) -> None:
        self.served, self.done = threading.Event(), threading.Event()
        self.pace = self
        self._left = left

    def left(self) -> float | None:
        return self._left

    def stop(self) -> None:
        self.served.set()


async def test_a_search_does_not_wait_for_an_embedding_that_will_not_end_within_its_wait() -> None:
    """A catalog that changed by thousands of tools takes minutes to embed again: every search waited its whole
    LAZYTOOLS_SEMANTIC_WAIT for it (the README-only review: p50 5.0 s, while an upstream kept relisting)."""
    live = LiveIndex(small_catalog(), semantic=True)
    live.background = _Running(left=10_000.0)  # type: ignore[assignment]
    with anyio.fail_after(60):  # a guard: the wait asked for is 600 s
        assert not await live.embedded(600)
    live.background = running = _Running(left=None)  # type: ignore[assignment]  # no pace yet: it waits
    threading.Timer(0.2, running.served.set).start()
    with anyio.fail_after(60):
        assert await live.embedded(600)


async def test_a_search_waits_for_the_catalogs_vectors_not_for_the_outside_tools(server_factory,  # type: ignore[no-untyped-def]
                                                                                 tmp_path: Path) -> None:
    async with gated_server(server_factory, tmp_path, 30, OutsideGatedEmbedder()) as (c, live):
        answer = text_of(await c.call_tool("search_tools", {"query": "weather forecast"}))
        assert BM25_ONLY not in answer and answer.startswith("Enabled: ")
        assert live.background is not None and not live.background.done.is_set()  # the outside tools wait


async def test_naming_tools_does_not_wait_for_the_embedding(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    async with gated_server(server_factory, tmp_path, 600, GatedEmbedder()) as (c, live):
        answer = text_of(await c.call_tool("search_tools", {"tool_names": ["get_forecast"]}))
        assert answer.startswith("Enabled: get_forecast") and BM25_ONLY not in answer
        assert live.background is not None and not live.background.served.is_set()  # it is still embedding
