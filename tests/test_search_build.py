"""Building the index: the build-side shortcuts (a term per distinct word, a server's terms read from the tools'
fields) give the index the old way of analysing each tool gave, and the word table stays bounded."""

from __future__ import annotations

import pytest

from lazytools.search import SearchIndex
from lazytools.search import documents
from lazytools.search.analysis import STOP_WORDS, split_words, stem
from lazytools.search.documents import field_terms, field_words, index_terms, known_words

from .fixtures.catalogs import realistic

QUERIES = ["create an issue in the github repository", "read a file and write another file",
           "post a message to the team channel", "weather forecast for Oslo", "run a sql query on the database"]


def _one_by_one(words: list[str]) -> list[str]:
    """The terms as each tool's words were analysed before: every word checked and stemmed where it stands."""
    return [stem(word) for word in words if word not in STOP_WORDS and len(word) > 1]


def test_index_terms_are_each_word_analysed_where_it_stands() -> None:
    words = split_words("The PRs of a repo: list them, then a x read_file in the README (once, twice, the files)")
    assert index_terms(words) == _one_by_one(words)
    assert index_terms(words) == _one_by_one(words)  # the second time from the table: the same terms


def test_a_catalogs_field_terms_are_those_of_word_by_word_analysis() -> None:
    words = [field_words(entry) for entry in realistic()]
    known = known_words(words)
    for entry_words in words:
        for field, terms in field_terms(entry_words, known).items():
            if field != "name":  # a name also gets the known words glued inside it
                assert terms == _one_by_one(entry_words[field])


def test_a_servers_terms_are_its_tools_name_and_description_terms() -> None:
    from lazytools.search.index import _server_terms

    words = [field_words(entry) for entry in realistic()]
    known = known_words(words)
    documents_ = [field_terms(entry_words, known) for entry_words in words]
    separately = [[term for field in ("name", "description") for term in terms[field]]
                  for terms in (field_terms({f: w[f] for f in ("name", "description")}, known) for w in words)]
    assert _server_terms(documents_) == separately


def test_the_word_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "MAX_CACHED_TERMS", 8)
    monkeypatch.setattr(documents, "_terms", {})
    words = [f"word{number}" for number in range(50)]
    assert index_terms(words) == _one_by_one(words)
    assert 0 < len(documents._terms) <= 8


@pytest.mark.parametrize("query", QUERIES)
def test_an_index_built_with_a_cold_or_warm_word_table_ranks_alike(monkeypatch: pytest.MonkeyPatch,
                                                                  query: str) -> None:
    warm = SearchIndex(realistic())
    monkeypatch.setattr(documents, "_terms", {})
    cold = SearchIndex(realistic())
    assert [(hit.entry.name, hit.score) for hit in cold.find(query, limit=8).hits] == [
        (hit.entry.name, hit.score) for hit in warm.find(query, limit=8).hits]
