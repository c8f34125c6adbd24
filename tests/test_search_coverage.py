"""Each tool's share of each need of a long request (`lazytools.search.coverage`), and long tasks as ranked."""

from __future__ import annotations

import numpy as np
import pytest

from lazytools.search import SearchIndex
from lazytools.search.config import RankingConfig
from lazytools.search.coverage import embedding_shares, lexical_shares

from .fixtures.catalogs import realistic, tool

LONG_TASK_CLAUSES = RankingConfig().long_task_clauses


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


def test_coverage_keeps_copies_out_and_respects_the_limit_and_groups() -> None:
    index = SearchIndex(near_alike_catalog())
    found = [hit.entry.name for hit in index.search(LONG_TASK, limit=2)]
    assert len(found) == 2 == len(set(found))
    only_weather = [hit.entry for hit in index.search(LONG_TASK, limit=10, groups=["weather"])]
    assert only_weather and {entry.group for entry in only_weather} == {"weather"}
    scores = [hit.score for hit in index.search(LONG_TASK, limit=10)]
    assert len(scores) == 10
