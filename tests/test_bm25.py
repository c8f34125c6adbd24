"""BM25F postings against rank-bm25 itself (one field of weight 1 is plain BM25), BM25F's own formula, and the IDF
trap of catalogs with one, two or three tools."""

from __future__ import annotations

import copy
import math

import numpy as np
import numpy.typing as npt
import pytest
from rank_bm25 import BM25Okapi

from lazytools.search import FIELD_WEIGHTS, SearchIndex, tokenize
from lazytools.search.bm25 import BM25FPostings, _narrowest
from lazytools.search.documents import field_terms, field_words

from .fixtures.catalogs import realistic, tool

QUERIES = [
    "create an issue in the github repository",
    "list issues",
    "read a file and write another file",
    "get the weather forecast for Oslo for the next three days",
    "post a message to the team channel then add a reaction",
    "run a sql query against the database and list its tables",
    "file",  # a term most documents hold: rank-bm25's epsilon floor for common terms
]


def scores(postings: BM25FPostings, query: list[str]) -> npt.NDArray[np.float64]:
    """Every document's score for the query terms, as the index adds them up (a repeated term counts again)."""
    out = np.zeros(postings.size, dtype=np.float64)
    for term in query:
        postings.accumulate(out, term)
    return out


def plain(corpus: list[list[str]], **parameters: float) -> BM25FPostings:
    """Plain BM25: one field of weight 1."""
    return BM25FPostings([{"text": doc} for doc in corpus], {"text": 1.0}, **parameters)


def flat_corpus() -> list[list[str]]:
    """The realistic catalog's terms, each tool's fields in one bag, each field's repeated by its weight."""
    return [[term for field, terms in field_terms(field_words(entry), set()).items()
             for term in terms * round(FIELD_WEIGHTS[field])] for entry in realistic()]


@pytest.mark.parametrize("query", QUERIES)
def test_one_field_scores_equal_rank_bm25_on_a_realistic_catalog(query: str) -> None:
    corpus = flat_corpus()
    terms = tokenize(query)
    expected = BM25Okapi(corpus).get_scores(terms)
    got = scores(plain(corpus), terms)
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert got.max() > 0


def test_parity_holds_for_other_parameters() -> None:
    corpus = flat_corpus()
    terms = tokenize(QUERIES[3])
    expected = BM25Okapi(corpus, k1=0.9, b=0.4, epsilon=0.1).get_scores(terms)
    assert np.allclose(scores(plain(corpus, k1=0.9, b=0.4, epsilon=0.1), terms), expected)


def test_empty_corpus_scores_nothing() -> None:
    assert scores(plain([]), ["x"]).size == 0
    assert scores(plain([[], []]), ["x"]).tolist() == [0.0, 0.0]


def test_rank_bm25_itself_scores_shared_words_zero_or_less_in_tiny_catalogs() -> None:
    # The trap the fallback exists for: with rank-bm25 alone, "weather" matches nothing in these catalogs.
    corpus = [tokenize("weather forecast for a city"), tokenize("weather alerts for a region")]
    assert max(BM25Okapi(corpus).get_scores(tokenize("weather"))) <= 0
    assert scores(plain(corpus), tokenize("weather")).min() > 0


def test_one_tool_catalog_finds_its_tool() -> None:
    index = SearchIndex([tool("get_forecast", "Get the weather forecast for a city.")])
    assert [hit.entry.name for hit in index.search("weather forecast")] == ["get_forecast"]
    assert index.search("compress a video") == []


def test_two_tool_catalog_ranks_the_better_match_first_and_keeps_the_other() -> None:
    index = SearchIndex([
        tool("get_alerts", "Get severe weather alerts for a region."),
        tool("get_forecast", "Get the weather forecast for a city."),
    ])
    assert [hit.entry.name for hit in index.search("weather forecast")] == ["get_forecast", "get_alerts"]
    assert {hit.entry.name for hit in index.search("weather")} == {"get_alerts", "get_forecast"}


def test_three_tool_catalog_where_every_tool_shares_the_query_words() -> None:
    index = SearchIndex([
        tool("list_files", "List files in a directory."),
        tool("read_file", "Read a file."),
        tool("delete_file", "Delete a file."),
    ])
    hits = index.search("read a file")
    assert [hit.entry.name for hit in hits][0] == "read_file"
    assert {hit.entry.name for hit in hits} == {"list_files", "read_file", "delete_file"}
    assert all(hit.score > 0 for hit in hits)


def test_bm25f_normalises_each_field_by_its_own_length() -> None:
    short = {"name": ["weather"], "description": ["today"]}
    long = {"name": ["weather"], "description": ["today", *[f"word{i}" for i in range(40)]]}
    other = {"name": ["news"], "description": ["weather", "report"]}
    weights = {"name": 3.0, "description": 1.0}
    fielded = scores(BM25FPostings([short, long, other], weights), ["weather"])
    # A long description does not dilute the name's match: the two "weather" tools score the same.
    assert fielded[0] == pytest.approx(fielded[1]) and fielded[0] > fielded[2] > 0
    # Repeating the name three times (plain BM25) lets the long description lower its tool.
    flat = [doc["name"] * 3 + doc["description"] for doc in (short, long, other)]
    repeated = scores(plain(flat), ["weather"])
    assert repeated[0] > repeated[1]


def test_bm25f_by_its_formula() -> None:
    docs = [{"name": ["a", "b"], "description": ["a"]}, {"name": ["c"], "description": ["a", "c", "d", "e"]},
            {"name": ["d"], "description": []}, {"name": ["e"], "description": ["f"]}]
    k1, b = 1.2, 0.5
    postings = BM25FPostings(docs, {"name": 2.0, "description": 1.0}, k1=k1, b=b)
    avg_name, avg_desc = 5 / 4, 6 / 4
    # "e": once in the name of the fourth tool (one word of an average 1.25) and once in the description of the
    # second (one word of four, against an average of 1.5); in two of four tools, so rank-bm25's IDF is 0 and
    # the small positive fallback applies; "b" is in one tool.
    idf_b = math.log(4 - 1 + 0.5) - math.log(1 + 0.5)
    pseudo_b = 2.0 * 1 / (1 - b + b * 2 / avg_name)
    assert scores(postings, ["b"])[0] == pytest.approx(idf_b * pseudo_b * (k1 + 1) / (pseudo_b + k1))
    pseudo_e4 = 2.0 * 1 / (1 - b + b * 1 / avg_name)
    pseudo_e2 = 1.0 * 1 / (1 - b + b * 4 / avg_desc)
    e = scores(postings, ["e"])
    assert e[3] / e[1] == pytest.approx((pseudo_e4 / (pseudo_e4 + k1)) / (pseudo_e2 / (pseudo_e2 + k1)))
    assert e[0] == e[2] == 0 and e[1] > 0
    assert scores(postings, ["zzz"]).tolist() == [0.0] * 4
    assert scores(BM25FPostings([], {"name": 1.0}), ["a"]).size == 0


def test_scoring_all_terms_at_once_adds_them_as_one_by_one_does_to_the_last_bit() -> None:
    index = SearchIndex(realistic())
    postings = index._bm25
    rng = np.random.default_rng(3)
    vocabulary = postings.vocabulary
    for _ in range(200):
        chosen = rng.choice(vocabulary, size=int(rng.integers(1, 25)), replace=False)
        terms = {str(term): float(rng.choice([1.0, 0.7, 0.5, 0.35 * rng.random()])) for term in chosen}
        terms["no such term"] = 1.0
        one_by_one = np.zeros(postings.size)
        for term, weight in terms.items():
            postings.accumulate(one_by_one, term, weight)
        at_once = postings.scores(terms)
        assert at_once.dtype == np.float64 and np.array_equal(at_once, one_by_one)
    assert np.array_equal(postings.scores({}), np.zeros(postings.size))


def test_scoring_several_queries_at_once_gives_each_its_own_scores_to_the_last_bit() -> None:
    postings = SearchIndex(realistic())._bm25
    rng = np.random.default_rng(5)
    vocabulary = postings.vocabulary
    queries = [{str(term): float(rng.random()) for term in rng.choice(vocabulary, size=int(rng.integers(0, 30)),
                                                                       replace=False)} for _ in range(40)]
    queries[3] = {"no such term": 1.0}
    together = postings.scores_many(queries)
    assert together.shape == (len(queries), postings.size)
    for row, terms in zip(together, queries, strict=True):
        assert np.array_equal(row, postings.scores(terms))
    assert not together[3].any()
    assert postings.scores_many([{}, {}]).shape == (2, postings.size)


def test_holding_says_for_each_term_whether_a_document_holds_it() -> None:
    documents = [{"name": ["alpha", "beta"], "text": ["gamma"]}, {"name": ["beta"]}, {"text": ["alpha", "delta"]}, {}]
    postings = BM25FPostings(documents, {"name": 2.0, "text": 1.0})
    terms = ["alpha", "beta", "gamma", "delta", "nowhere"]
    slots = postings.slots(terms)
    assert slots[-1] == -1 and (slots[:-1] >= 0).all()
    for doc, fields in enumerate(documents):
        held = {term for words in fields.values() for term in words}
        assert postings.holding(doc, slots[:-1]).tolist() == [term in held for term in terms[:-1]]
        assert [postings.holds(doc, term) for term in terms] == [term in held for term in terms]
    assert postings.shares(slots[:2]).tolist() == [0.5, 0.5]
    assert BM25FPostings([], {"name": 1.0}).holding(0, np.zeros(0, dtype=np.int64)).size == 0


def test_the_keys_are_32_bit_when_every_key_fits_and_64_bit_otherwise() -> None:
    keys = np.array([0, 5, 2**31 - 1], dtype=np.int64)
    narrow = _narrowest(keys, 2**31)
    assert narrow.dtype == np.int32 and narrow.tolist() == keys.tolist()
    wide = _narrowest(np.array([0, 2**31], dtype=np.int64), 2**31 + 1)
    assert wide.dtype == np.int64 and wide.tolist() == [0, 2**31]


def test_postings_with_64_bit_keys_score_and_hold_as_32_bit_ones_do() -> None:
    """A catalog too large for 32-bit keys keeps 64-bit ones: the same scores and answers to the last bit (built
    from a small catalog, its keys widened, as a large one would have them)."""
    narrow = SearchIndex(realistic())._bm25
    assert narrow._keys.dtype == np.int32
    wide = copy.copy(narrow)
    wide._keys = narrow._keys.astype(np.int64)
    rng = np.random.default_rng(11)
    vocabulary = narrow.vocabulary
    for _ in range(50):
        chosen = [str(term) for term in rng.choice(vocabulary, size=int(rng.integers(1, 25)), replace=False)]
        terms = {term: float(rng.random()) for term in chosen}
        assert np.array_equal(wide.scores_many([terms, {chosen[0]: 1.0}]), narrow.scores_many([terms, {chosen[0]: 1.0}]))
        slots = narrow.slots(chosen)
        for doc in range(0, narrow.size, max(1, narrow.size // 7)):
            assert wide.holding(doc, slots).tolist() == narrow.holding(doc, slots).tolist()
