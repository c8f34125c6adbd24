"""The ranking's one config (`RankingConfig`): set from LAZYTOOLS_SEARCH_RANKING (JSON or a file), refused when it
names what does not exist, and read by the served index; the analysed query its stages read (`Query`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazytools import build_server
from lazytools.errors import ConfigError
from lazytools.search import SearchIndex
from lazytools.search.config import RULES, STAGES, RankingConfig, ranking_config
from lazytools.search.query import QUICK_CHARS, analyze

from .conftest import client, make_settings, small_catalog, text_of
from .fixtures.catalogs import realistic


def test_the_setting_takes_json_or_a_file_and_refuses_unknown_names(tmp_path: Path) -> None:
    assert ranking_config("") == RankingConfig()
    config = ranking_config('{"group_boost": 0.25, "off": ["producer", "synonyms"]}')
    assert config.group_boost == 0.25 and config.off == {"producer", "synonyms"}
    saved = tmp_path / "ranking.json"
    saved.write_text('{"off": ["related"]}', encoding="utf-8")
    assert ranking_config(str(saved)).off == {"related"}
    with pytest.raises(ValueError, match="unknown stages or rules: reranker"):
        ranking_config('{"off": ["reranker"]}')
    with pytest.raises(ValueError):
        ranking_config('{"grup_boost": 0.3}')  # a misspelt weight is refused, not ignored
    with pytest.raises(ValueError):
        ranking_config('{"semantic_weight": 1.5}')  # a share above 1
    assert set(STAGES).isdisjoint(RULES) and "places" in STAGES


async def test_the_served_index_ranks_with_the_configured_weights() -> None:
    server = build_server(small_catalog(), make_settings(search_ranking='{"off": ["group_boost"]}'))
    async with client(server, "mcp") as c:
        assert "get_forecast" in text_of(await c.call_tool("search_tools", {"query": "weather forecast"}))
    assert (await server.index.ready()).config.off == {"group_boost"}
    with pytest.raises(ConfigError, match="LAZYTOOLS_SEARCH_RANKING"):
        build_server(small_catalog(), make_settings(search_ranking='{"off": ["nothing"]}'))


def test_a_query_is_analysed_once_with_each_term_tagged_by_its_rule() -> None:
    index = SearchIndex(realistic())
    query = index.analyze("spin up a new database, then remove the old one")
    assert index.analyze("spin up a new database, then remove the old one") is query  # kept, not redone
    assert len(query.needs) == 2 and len(query.need_terms) == 2
    rules = query.terms.rules
    assert rules["databas"] == "typed" and rules.get("delet") == "synonyms"
    assert {rule for rule in rules.values()} <= {"typed", "synonyms", "phrases", "related", "typos", "completions"}
    off = index.configured(RankingConfig(off={"synonyms"})).analyze("remove the old database")
    assert "synonyms" not in off.terms.rules.values()
    assert analyze("export the orders to a CSV").deliverable is not None


def test_the_quick_path_is_decided_by_the_query_cost() -> None:
    index = SearchIndex(realistic())
    index.vocabulary.prepare()
    assert index.cost("weather in Paris").quick
    assert not index.cost("w" * (QUICK_CHARS + 1)).quick
    assert not index.cost("天气预报").quick and index.cost("天气预报").cjk
    assert not index.cost("get the weather forecast, then post a message on Slack, then email the report").quick
