"""Building the index: the build-side shortcuts (a term per distinct word, a server's terms read from the tools'
fields) give the index the old way of analysing each tool gave, and the word table stays bounded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from lazytools import ToolEntry
from lazytools.search import SearchIndex, documents
from lazytools.search.analysis import STOP_WORDS, split_words, stem
from lazytools.search.documents import (
    catalog_terms,
    catalog_words,
    field_terms,
    field_words,
    index_terms,
    known_words,
    name_terms,
)

from .fixtures.catalogs import realistic, tool

QUERIES = ["create an issue in the github repository", "read a file and write another file",
           "post a message to the team channel", "weather forecast for Oslo", "run a sql query on the database"]


def _one_by_one(words: Sequence[str]) -> list[str]:
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
                assert list(terms) == _one_by_one(entry_words[field])


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


def _reference_postings(documents: Sequence[Mapping[str, Sequence[str]]], weights: dict[str, float],
                        apart: frozenset[str]) -> tuple[list[str], dict[str, tuple[list[int], list[float]]], list[int]]:
    """The postings as the index built them before: a dict of documents per term, each field's count times its
    scale added in field order."""
    from collections import Counter

    import numpy as np

    fields = list(weights)
    lengths = {f: np.asarray([len(doc.get(f, ())) for doc in documents], dtype=np.float64) for f in fields}
    averages = {f: float(lengths[f][lengths[f] > 0].mean()) if f in apart else float(lengths[f].mean())
                for f in fields}
    scale = {f: weights[f] / (0.25 + 0.75 * lengths[f] / (averages[f] or 1.0)) for f in fields}
    pseudo: dict[str, dict[int, float]] = {}
    counted: dict[str, set[int]] = {}
    for doc_id, doc in enumerate(documents):
        for f in fields:
            for term, tf in Counter(doc.get(f, ())).items():
                per_doc = pseudo.setdefault(term, {})
                per_doc[doc_id] = per_doc.get(doc_id, 0.0) + tf * float(scale[f][doc_id])
                if f not in apart:
                    counted.setdefault(term, set()).add(doc_id)
    return (list(pseudo), {t: (list(d), list(d.values())) for t, d in pseudo.items()},
            [len(counted.get(t, ())) for t in pseudo])


def test_postings_built_at_once_equal_a_dict_per_term_to_the_last_bit() -> None:

    words = [field_words(entry) for entry in realistic()]
    known = known_words(words)
    documents_ = [field_terms(entry_words, known) for entry_words in words]
    # Another rendering in some documents only, with terms no other field holds and terms repeated.
    documents_[3]["english"] = ("weather", "weather", "zzrendered")
    documents_[7]["english"] = ("zzrendered", "file")
    weights = {"name": 3.0, "title": 1.0, "description": 1.0, "parameters": 0.5, "group": 1.0, "english": 0.3}
    apart = frozenset({"english"})
    built = _same_postings_as_the_reference(documents_, weights, apart)
    assert built.rendered_only == {"zzrendered"}


def _same_postings_as_the_reference(documents_: Any, weights: dict[str, float], apart: frozenset[str]) -> Any:
    """BM25FPostings of `documents_`, checked term by term against the dict-per-term reference (k1 1.5)."""
    from lazytools.search.bm25 import BM25FPostings

    terms, postings, outside = _reference_postings(documents_, weights, apart)
    built = BM25FPostings(documents_, weights, b=0.75, apart=apart)
    assert built.vocabulary == terms
    for term in terms:
        ids, pseudo = postings[term]
        posting = built._posting(term)
        assert posting is not None and posting[0].tolist() == ids
        assert posting[1].tolist() == [f * 2.5 / (f + 1.5) for f in pseudo]
    assert built.rendered_only == {term for term, n in zip(terms, outside, strict=True) if n == 0}
    return built


def _copied(entries: list[ToolEntry]) -> list[ToolEntry]:
    """`entries`, then each again as a tool of another server (the same texts under other names), in between."""
    copies = [ToolEntry(name=f"{e.name}_2", group=f"{e.group}_2", description=e.description,
                        input_schema=e.input_schema, call=e.call, title=e.title) for e in entries]
    return [tool for pair in zip(entries, copies, strict=True) for tool in pair]


def test_postings_of_repeated_texts_equal_a_dict_per_term_to_the_last_bit() -> None:
    """Equal texts are read once, whether they come as one shared tuple, equal tuples or equal lists."""

    words = catalog_words(_copied(realistic()))
    documents_ = catalog_terms(words, known_words(words))
    assert documents_[0]["description"] is documents_[1]["description"]  # one tuple for both copies
    documents_[4]["english"] = documents_[5]["english"] = ("weather", "zzrendered", "weather")
    mixed = [{field: list(terms) if number % 3 == 0 else tuple(terms) for field, terms in document.items()}
             for number, document in enumerate(documents_)]
    weights = {"name": 3.0, "title": 1.0, "description": 1.0, "parameters": 0.5, "group": 1.0, "english": 0.3}
    apart = frozenset({"english"})
    for built_from in (documents_, mixed):
        _same_postings_as_the_reference(built_from, weights, apart)


def test_postings_of_no_terms_are_empty() -> None:
    from lazytools.search.bm25 import BM25FPostings

    built = BM25FPostings([{"name": ()}, {}], {"name": 1.0, "title": 1.0})
    assert built.vocabulary == [] and built.scores({"x": 1.0}).tolist() == [0.0, 0.0]


def test_unique_counts_and_inverse_are_numpys() -> None:
    import numpy as np

    from lazytools.search.bm25 import _unique_counts, _unique_inverse

    values = np.random.default_rng(3).integers(0, 50, 400)
    for got, expected in zip(_unique_counts(values), np.unique(values, return_counts=True), strict=True):
        assert got.tolist() == expected.tolist()
    for got, expected in zip(_unique_inverse(values), np.unique(values, return_inverse=True), strict=True):
        assert got.tolist() == expected.tolist()
    none = np.zeros(0, dtype=np.int64)
    assert [part.tolist() for part in (*_unique_inverse(none), *_unique_counts(none))] == [[], [], [], []]


def test_a_catalogs_words_and_terms_are_each_tools_own() -> None:
    entries = _copied(realistic())
    words = catalog_words(entries)
    assert words == [field_words(entry) for entry in entries]
    assert words[0]["parameters"] is words[1]["parameters"]  # an equal text split once
    known = known_words(words)
    assert known == known_words([field_words(entry) for entry in entries])
    assert catalog_terms(words, known) == [field_terms(entry_words, known) for entry_words in words]
    cut: dict[str, tuple[str, ...]] = {}
    assert [name_terms(entry_words, known, cut) for entry_words in words] == [
        name_terms(entry_words, known) for entry_words in words]


def test_chinese_text_repeated_in_a_catalog_is_rendered_alike() -> None:
    entries = _copied([tool("weather_now", "查询天气预报", "amap"), tool("plain", "Plain English.", "amap")])
    words = catalog_words(entries)
    assert words[0]["english"] and words[0]["english"] is words[1]["english"]
    assert words == [field_words(entry) for entry in entries]
    assert not words[2]["english"]


def test_producers_copies_and_writers_read_from_the_name_words_given_are_those_found_alone() -> None:
    """The index hands its split name words to `input_producers`, `first_copies` and `writes`."""
    from benchmarks.build import scaled_catalog
    from lazytools.search.copies import first_copies
    from lazytools.search.inputs import input_producers
    from lazytools.search.steps import writes

    entries = scaled_catalog(1500)  # the dev catalog's real tools and copies of them as other servers
    names = [entry_words["name"] for entry_words in catalog_words(entries)]
    producers = input_producers(entries, names)
    assert producers == input_producers(entries) and sum(map(bool, producers)) > 20
    copies = first_copies(entries, names)
    assert copies == first_copies(entries) and any(copy != position for position, copy in enumerate(copies))
    written = [writes(entry, name) for entry, name in zip(entries, names, strict=True)]
    assert written == [writes(entry) for entry in entries] and 0 < sum(written) < len(entries)


def test_a_catalogs_equal_name_terms_are_one_set() -> None:
    from lazytools.search.documents import catalog_name_terms

    entries = _copied(realistic())
    words = catalog_words(entries)
    known = known_words(words)
    keys = catalog_name_terms(words, known)
    assert keys == [name_terms(entry_words, known) for entry_words in words]
    assert keys[0] is keys[1]  # github__create_issue and its copy: {creat, issu}


def test_a_name_matcher_keeps_each_names_tools_once_in_order() -> None:
    from lazytools.search.names import EXACT, PREFIX, NameMatcher

    matcher = NameMatcher([("read_file", "read_file"), ("fs__read_file", "read_file"), ("Write", "write")])
    assert matcher._lower == {"read_file": (0, 1), "fs__read_file": (1,), "write": (2,)}
    assert matcher._compact == {"readfile": (0, 1), "fsreadfile": (1,), "write": (2,)}
    assert matcher.matches("read_file") == {0: EXACT, 1: EXACT}
    assert matcher.matches("readfi") == {0: PREFIX, 1: PREFIX}
    assert matcher.matches("Write") == {2: EXACT}
    # A text whose head alone is longer than every name, once its separators are gone, names none as a whole.
    assert matcher.matches("read " + "_" * 40 + " file") == {0: EXACT, 1: EXACT}
    assert matcher.matches("fs read file " * 3) == {} and matcher.matches("r-e-a-d-f-i-l-e-s" * 4) == {}


def test_group_positions_are_each_groups_tools_in_catalog_order() -> None:
    import numpy as np

    entries = realistic()
    groups = np.array([entry.group for entry in entries], dtype=object)
    positions = SearchIndex(entries).group_positions
    assert set(positions) == set(groups.tolist())
    for group, held in positions.items():
        assert held.tolist() == np.flatnonzero(groups == group).tolist()
    index = SearchIndex(entries)
    some = sorted(positions)[:2]
    assert index.in_groups([*some, "no such group"]).tolist() == np.isin(groups, some).tolist()


def test_the_build_benchmarks_catalog_is_distinct_real_tools() -> None:
    from benchmarks.build import TOOLS, scaled_catalog

    real = scaled_catalog(sum(1 for line in TOOLS.read_text().splitlines() if line.strip()))
    scaled = scaled_catalog(3 * len(real))
    assert len({entry.name for entry in scaled}) == len(scaled) == 3 * len(real)
    assert [entry.description for entry in scaled] == [entry.description for entry in real] * 3
    assert {entry.group for entry in scaled[len(real):2 * len(real)]} == {f"{entry.group}_1" for entry in real}


def test_the_sorting_order_is_a_stable_argsort() -> None:
    import numpy as np

    from lazytools.search.bm25 import _sorting_order

    rng = np.random.default_rng(5)
    for values in (rng.integers(0, 40, 1000), rng.integers(0, 2**40, 300), np.array([2**62, 3, 2**62, 0]),
                   np.array([7]), np.zeros(0, dtype=np.int64)):
        assert _sorting_order(values).tolist() == np.argsort(values, kind="stable").tolist()


def test_the_build_benchmarks_changed_server_is_one_server_described_anew_at_the_end() -> None:
    from benchmarks.build import changed_server, rebuilder, scaled_catalog

    entries = scaled_catalog(1000)
    changed = changed_server(entries)
    moved = [entry for entry in entries if entry not in changed]
    assert moved and len({entry.group for entry in moved}) == 1 and len(changed) == len(entries)
    assert changed[: len(entries) - len(moved)] == [entry for entry in entries if entry not in moved]
    assert all(entry.description.endswith("Described anew.") for entry in changed[len(entries) - len(moved):])
    rebuilt = rebuilder(entries)(changed)
    assert {hit.entry.group for hit in rebuilt.search("anew", limit=len(moved))} == {moved[0].group}
