"""Long tasks: the first results are picked so that the task's clauses are covered (`lazytools.search.coverage`)."""

from __future__ import annotations

import numpy as np
import pytest

import lazytools.search.index as index_module
from lazytools.search import SearchIndex
from lazytools.search.config import RankingConfig
from lazytools.search.coverage import cover, embedding_shares, lexical_shares
from lazytools.search.query import clauses

from .fixtures.catalogs import realistic, tool

LONG_TASK_CLAUSES = RankingConfig().long_task_clauses


def test_a_clause_already_answered_stops_counting() -> None:
    # Tools 0-2 answer clause A (three near-alike forecasts), tool 3 answers clause B, a little less relevant.
    relevance = np.array([1.0, 0.97, 0.95, 0.9, 0.0])
    shares = np.array([[1.0, 1.0, 0.9, 0.0, 0.0],
                       [0.0, 0.0, 0.0, 1.0, 0.0]])
    assert cover(relevance, shares, weight=0.0, limit=3) == [0, 1, 2]  # relevance alone
    assert cover(relevance, shares, weight=0.3, limit=3) == [0, 3, 1]  # B's tool before A's second one
    # Coverage only breaks near-ties: a much weaker tool of an unanswered clause stays behind.
    weak = np.array([1.0, 0.97, 0.95, 0.2, 0.0])
    assert cover(weak, shares, weight=0.3, limit=3) == [0, 1, 2]


def test_cover_handles_flat_scores_no_clauses_and_short_pools() -> None:
    flat = np.array([2.0, 2.0, 2.0])
    assert cover(flat, np.zeros((2, 3)), weight=0.3, limit=5) == [0, 1, 2]  # ties keep score order, pool is short
    assert cover(np.array([3.0, 1.0]), np.zeros((0, 2)), weight=0.3, limit=1) == [0]
    assert cover(np.array([]), np.zeros((1, 0)), weight=0.3, limit=5) == []


def test_shares_are_fractions_of_each_clauses_best() -> None:
    pool = np.array([2, 0])
    parts = [np.array([1.0, 0.0, 4.0]), np.zeros(3)]
    assert lexical_shares(parts, pool).tolist() == [[1.0, 0.25], [0.0, 0.0]]
    similarities = [np.array([0.1, 0.5, 0.9, 0.0]), np.array([0.5, 0.5, 0.5, 0.5])]
    shares = embedding_shares(similarities, np.array([2, 1, 3]))
    assert shares[0, 0] == pytest.approx(1.0) and 0.0 < shares[0, 1] < 1.0 and shares[0, 2] == 0.0  # below mean: 0
    assert shares[1].tolist() == [0.0, 0.0, 0.0]  # a clause every tool answers alike covers nothing


def near_alike_catalog() -> list:  # type: ignore[type-arg]
    return realistic() + [
        tool("weather__get_hourly_forecast", "Get the hourly weather forecast for a city: temperature, rain and wind.",
             "weather", city="City name", hours="Number of hours"),
        tool("weather__get_daily_forecast", "Get the daily weather forecast for a city: highs, lows, rain and wind.",
             "weather", city="City name", days="Number of days"),
        tool("weather__get_marine_forecast", "Get the marine weather forecast for a coast: waves, wind and rain.",
             "weather", city="Nearest city"),
    ]


LONG_TASK = ("Planning a picnic in Paris on Saturday. Get the daily forecast for Paris with rain and wind, check the "
             "hourly forecast for the afternoon, convert 2pm Paris time into Tokyo time, and post it on Slack.")


def test_long_tasks_are_covered_and_short_requests_ranked_by_score(monkeypatch: pytest.MonkeyPatch) -> None:
    index = SearchIndex(near_alike_catalog())
    assert len(clauses(LONG_TASK)) >= LONG_TASK_CLAUSES
    covered = [hit.entry.name for hit in index.search(LONG_TASK)]
    by_score = [hit.entry.name for hit in index.configured(RankingConfig(coverage_weight=0.0)).search(LONG_TASK)]
    # The same tools answer, but the second forecast no longer comes before the Slack step's tool.
    assert covered != by_score and set(covered) >= {"time__convert_time", "slack__post_message"}
    assert covered.index("weather__get_daily_forecast") < covered.index("slack__post_message")
    assert covered.index("slack__post_message") < covered.index("weather__get_hourly_forecast")
    short = "daily forecast for Paris and post it on Slack"
    assert len(clauses(short)) < LONG_TASK_CLAUSES
    calls: list[int] = []
    monkeypatch.setattr(index_module, "cover", lambda *args, **kwargs: calls.append(1) or [])
    index.search(short)
    assert calls == []  # a short request is ranked by its scores alone


def test_coverage_keeps_copies_out_and_respects_the_limit_and_groups() -> None:
    index = SearchIndex(near_alike_catalog())
    found = [hit.entry.name for hit in index.search(LONG_TASK, limit=2)]
    assert len(found) == 2 == len(set(found))
    only_weather = [hit.entry for hit in index.search(LONG_TASK, limit=10, groups=["weather"])]
    assert only_weather and {entry.group for entry in only_weather} == {"weather"}
    scores = [hit.score for hit in index.search(LONG_TASK, limit=10)]
    assert len(scores) == 10
