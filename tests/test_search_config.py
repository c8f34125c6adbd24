"""The ranking's one config (`RankingConfig`): set from LAZYTOOLS_SEARCH_RANKING (JSON or a file), refused when it
names what does not exist, and read by the served index; the analysed query its stages read (`Query`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lazytools import build_server
from lazytools.cli import main
from lazytools.errors import ConfigError
from lazytools.search import SearchIndex
from lazytools.search.config import MAX_CONFIG_BYTES, RULES, STAGES, RankingConfig, configured_ranking, ranking_config
from lazytools.search.query import QUICK_CHARS, analyze

from .conftest import client, make_settings, small_catalog, text_of
from .fixtures.catalogs import realistic


def test_the_setting_takes_json_or_a_file_and_refuses_unknown_names(tmp_path: Path) -> None:
    assert ranking_config("") == RankingConfig()
    config = ranking_config('{"group_boost": 0.25, "off": ["producer", "typos"]}')
    assert config.group_boost == 0.25 and config.off == {"producer", "typos"}
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


@pytest.mark.parametrize(("setting", "field"), [
    ('{"bm25_k1": Infinity}', "bm25_k1"),  # every search found nothing
    ('{"bm25_k1": 1e400}', "bm25_k1"),
    ('{"bm25_k1": 0}', "bm25_k1"),
    ('{"group_boost": 1e400}', "group_boost"),  # every score was inf
    ('{"typo_weight": NaN}', "typo_weight"),
    ('{"semantic_weight": -Infinity}', "semantic_weight"),
    ('{"bm25_b": 1.5}', "bm25_b"),
    ('{"field_weights": {"name": 1e400}}', "field_weights.name"),
    ('{"field_weights": {"name": -1}}', "field_weights.name"),
])
def test_every_number_of_the_ranking_is_finite_and_in_range(setting: str, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        configured_ranking(setting)
    message = str(caught.value)
    assert message.startswith(f"LAZYTOOLS_SEARCH_RANKING: field {field}: "), message
    assert "\n" not in message and "pydantic" not in message, message


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
    assert rules["databas"] == "typed" and rules.get("creat") == "phrases"
    assert {rule for rule in rules.values()} <= {"typed", "phrases", "related", "typos", "completions"}
    off = index.configured(RankingConfig(off={"phrasal_verbs"})).analyze("spin up a new database")
    assert "phrases" not in off.terms.rules.values()
    assert analyze("export the orders to a CSV").deliverable is not None


def test_the_quick_path_is_decided_by_the_query_cost() -> None:
    index = SearchIndex(realistic())
    index.vocabulary.prepare()
    assert index.cost("weather in Paris").quick
    assert not index.cost("w" * (QUICK_CHARS + 1)).quick
    assert not index.cost("天气预报").quick and index.cost("天气预报").cjk
    assert not index.cost("get the weather forecast, then post a message on Slack, then email the report").quick


def test_a_config_path_that_is_not_a_small_regular_file_is_refused_unread(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opened for reading, it would wait for a writer for ever
    huge = tmp_path / "huge.json"
    huge.write_bytes(b" " * (MAX_CONFIG_BYTES + 1))
    for path, why in ((fifo, "not a regular file"), (Path("/dev/zero"), "not a regular file"),
                      (tmp_path, "not a regular file"), (huge, "over")):
        with pytest.raises(ConfigError, match=f"LAZYTOOLS_SEARCH_RANKING: .*{why}"):
            configured_ranking(str(path))


def test_lazytools_search_and_eval_rank_with_the_setting(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    query = "hash a file and count words"
    assert main(["search", query]) == 0
    default = capsys.readouterr().out
    assert main(["--search-ranking", '{"bm25_k1": 3.0, "off": ["related", "typos"]}', "search", query]) == 0
    assert capsys.readouterr().out != default  # the scores printed are the configured ranking's
    assert main(["--search-ranking", '{"bm25_k1": -1}', "search", query]) != 0
    assert "LAZYTOOLS_SEARCH_RANKING" in capsys.readouterr().err


def test_the_rules_round_4_removed_are_no_longer_switches() -> None:
    # Each failed the ablation's bar (docs/search-log.md, "Round 4, second pass"): their code went, so naming one
    # in a config is an error, as any unknown name is.
    for gone in ("server_choice", "synonyms"):
        assert gone not in STAGES and gone not in RULES
        with pytest.raises(ValueError, match="unknown stages or rules"):
            RankingConfig(off={gone})
    for field in ("server_lift", "server_text_weight", "synonym_weight"):
        with pytest.raises(ValueError, match="Extra inputs"):
            RankingConfig.model_validate({field: 0.1})
