"""Related words: the shipped table, how it expands a query, and what it must not change."""

from __future__ import annotations

import gzip

import pytest

from lazytools.search import SearchIndex, stem
from lazytools.search.config import RankingConfig
from lazytools.search.query import catalog_expansions, weighted_terms
from lazytools.search.related import DATA_FILE, RelatedWords, default_related_words
from lazytools.search.vocabulary import Vocabulary

from .fixtures.catalogs import realistic, tool
from .test_search import scores

MAX_RELATED = RankingConfig().max_related
RELATED_WEIGHT = RankingConfig().related_weight

NO_RELATED = RelatedWords({})


def names(index: SearchIndex, query: str, limit: int = 5) -> list[str]:
    return [hit.entry.name for hit in index.search(query, limit=limit)]


def test_shipped_table_is_well_formed_general_vocabulary() -> None:
    table = default_related_words()
    assert len(table) > 10_000
    with gzip.open(DATA_FILE, "rt", encoding="utf-8") as lines:
        rows = [line for line in lines.read().splitlines() if not line.startswith("#")]
    assert len(rows) == len(table)
    for row in rows[::500]:
        key = row.partition("\t")[0]
        neighbours = table.neighbours(key)
        assert neighbours and all(0.45 <= similarity <= 1.0 for _, similarity in neighbours)
        assert [s for _, s in neighbours] == sorted((s for _, s in neighbours), reverse=True)
        assert key not in {term for term, _ in neighbours}
    # Meaning, not spelling: the words a lexical index cannot connect on its own.
    assert {stem("cryptocurrency"), "crypto"} <= {t for t, _ in table.neighbours(stem("bitcoin"))}
    assert stem("delete") in {t for t, _ in table.neighbours(stem("remove"))}
    assert stem("lodging") in {t for t, _ in table.neighbours(stem("hotel"))}


def test_rows_parse_and_weigh_by_squared_similarity() -> None:
    table = RelatedWords.from_lines(["# comment", "remov\tdelet:80 eras:50", "empty\t"])
    assert len(table) == 2 and "remov" in table and "comment" not in table
    assert table.neighbours("remov") == (("delet", 0.8), ("eras", 0.5))
    assert table.neighbours("unknown") == () and table.neighbours("empty") == ()
    assert table.expansions("remov") == [("delet", pytest.approx(RELATED_WEIGHT * 0.64)),
                                         ("eras", pytest.approx(RELATED_WEIGHT * 0.25))]


def test_query_gains_only_related_words_the_catalog_uses_below_its_own() -> None:
    table = RelatedWords.from_lines(["zorb\tquux:80 blip:70 frob:50"])
    vocabulary = Vocabulary(["quux", "frob", "file"])
    terms = weighted_terms("zorb file", vocabulary, catalog_expansions(table, vocabulary))
    assert terms["file"] == 1.0
    assert terms["quux"] == pytest.approx(RELATED_WEIGHT * 0.64) and "blip" not in terms  # not in the catalog
    assert terms["frob"] < terms["quux"] < 1.0
    # A word the query has is never lowered or doubled by being related to another query word.
    assert weighted_terms("zorb frob", vocabulary, catalog_expansions(table, vocabulary))["frob"] == 1.0
    assert weighted_terms("zorb file", vocabulary, None) == {"file": 1.0}


def test_a_word_brings_at_most_max_related_catalog_words() -> None:
    row = " ".join(f"w{i:02d}:{90 - i}" for i in range(30))
    table = RelatedWords.from_lines([f"zorb\t{row}"])
    vocabulary = Vocabulary([f"w{i:02d}" for i in range(30)])
    terms = weighted_terms("zorb", vocabulary, catalog_expansions(table, vocabulary))
    assert sorted(terms) == [f"w{i:02d}" for i in range(MAX_RELATED)]  # the closest ones
    assert weighted_terms("zorb", vocabulary, catalog_expansions(table, vocabulary, most=MAX_RELATED)) == terms
    odd = Vocabulary([f"w{i:02d}" for i in range(1, 30, 2)])  # read row by row: the first `most` the catalog uses
    assert table.expansions("zorb", within=odd.terms, most=4) == table.expansions("zorb", within=odd.terms)[:4]
    assert len(table.expansions("zorb", most=4)) == 4 and table.expansions("zorb", most=0) == []


def test_related_words_find_a_tool_that_shares_no_word_with_the_query() -> None:
    catalog = [tool("market_quotes", "Latest quotes for stocks, options and cryptocurrencies."),
               tool("get_forecast", "Weather forecast for a city."), tool("unit_convert", "Convert between units.")]
    assert names(SearchIndex(catalog), "current bitcoin value")[0] == "market_quotes"
    assert names(SearchIndex(catalog), "will it rain in Oslo")[0] == "get_forecast"
    assert names(SearchIndex(catalog, related=NO_RELATED), "current bitcoin value") == []


def test_the_word_itself_still_beats_a_related_word() -> None:
    index = SearchIndex([tool("erase_disk", "Erase a disk."), tool("delete_file", "Delete a file."),
                         tool("remove_file", "Remove a file.")])
    assert names(index, "remove a file")[0] == "remove_file"
    assert names(index, "delete a file")[0] == "delete_file"
    assert names(index, "delete_file")[0] == "delete_file"


def test_related_words_keep_tiny_catalogs_right() -> None:
    index = SearchIndex([tool("get_weather", "Current weather for a city."), tool("get_news", "Top news stories.")])
    assert names(index, "weather in Paris") == ["get_weather"]
    assert names(index, "latest headlines")[0] == "get_news"
    assert names(SearchIndex([tool("only", "Send an email.")]), "mail a letter") == ["only"]


def test_results_follow_the_scores_with_no_place_reserved_per_need() -> None:
    # The best tool of each need used to take a place in the top k; measured as served, that cost R@5 on both
    # MetaTool halves and did not help the multi-server set, so the scores alone decide (docs/search.md).
    index = SearchIndex(realistic())
    task = "list the open issues, then create a branch for the fix and post a message on slack"
    served = scores(index, task)
    by_score = sorted(served, key=lambda name: -served[name])[:3]  # a stable sort: equal scores keep catalog order
    assert names(index, task, limit=3) == by_score


def test_expansions_within_a_catalogs_words_are_those_of_the_whole_row_it_holds_in_order() -> None:
    table = default_related_words()
    stems = sorted(table._rows)[::50]
    words = frozenset(stem for stem in sorted(table._rows)[::3])
    assert len(stems) > 200
    for term in [*stems, "no such stem"]:
        assert table.expansions(term, 0.7, within=words) == [
            (other, value) for other, value in table.expansions(term, 0.7) if other in words]
    assert any(table.expansions(term, within=words) for term in stems)
