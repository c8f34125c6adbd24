"""The query path's own memory: what each term adds, remembered per term and bounded, gives what reading afresh
gives (`query.TermReader`)."""

from __future__ import annotations

from pathlib import Path

from lazytools.search import SearchIndex
from lazytools.search.analysis import split_words
from lazytools.search.config import RankingConfig
from lazytools.search.query import TermReader, tagged_terms

from .fixtures.catalogs import realistic


def test_a_term_reader_gives_what_reading_afresh_gives_and_stays_bounded() -> None:
    index = SearchIndex(realistic())
    texts = ["create an issue in the github repository, then post it on slack", "wether in oslo", "kube pods",
             "read a file and write another file", "list issues", "remove the old database"]
    reader = TermReader(index._lexicon, index.config, size=8)
    for _ in range(2):  # the second round reads what the first remembered
        for text in texts:
            again = tagged_terms(text, index._lexicon, index.config, reader)
            fresh = tagged_terms(text, index._lexicon, index.config)
            assert again.weights == fresh.weights and list(again.weights) == list(fresh.weights)
            assert again.rules == fresh.rules
            assert all(len(known) <= 8 for known in reader._typed.values()) and len(reader._related) <= 8
    assert len(reader) > 0
    off = RankingConfig(off={"typos", "related"})
    assert tagged_terms("remove the old database", index._lexicon, off, TermReader(index._lexicon, off)).weights == \
        tagged_terms("remove the old database", index._lexicon, off).weights


def test_the_groups_a_query_names_are_found_through_its_own_terms() -> None:
    from lazytools.search.analysis import tokenize

    index = SearchIndex(realistic())
    for text in ["post it on slack", "github issues", "list my github pull requests and post them on slack",
                 "read a file", "", "slack github filesystem"]:
        terms = frozenset(tokenize(text))
        every = {group for group, group_terms in index._group_terms.items() if group_terms <= terms}
        assert sorted(index.mentioned(terms)) == sorted(every)
    assert index.mentioned(frozenset(tokenize("post it on slack")))


def test_holds_and_share_read_the_postings() -> None:
    index = SearchIndex(realistic())
    postings = index._bm25
    for term in postings.vocabulary[:200]:
        ids = [doc for doc in range(postings.size) if postings.holds(doc, term)]
        assert ids and len(ids) / postings.size == postings.share(term)
        scores = postings.scores({term: 1.0})
        assert ids == [doc for doc in range(postings.size) if scores[doc] != 0]
    assert not postings.holds(0, "no such term") and postings.share("no such term") == 0.0


def test_words_are_stemmed_by_the_compiled_snowball_stemmer_with_the_same_stems() -> None:
    """PyStemmer (Snowball's C code) is in force, and stems every word of the test catalogs, queries and docs as
    snowballstemmer's pure-Python English stemmer does: a version of either that stemmed differently would change
    what every index holds."""
    import Stemmer
    from snowballstemmer.english_stemmer import EnglishStemmer

    from lazytools import textwords

    assert isinstance(textwords._stemmer, Stemmer.Stemmer)
    root = Path(__file__).parent.parent
    texts = [*(root / "tests" / "fixtures").glob("*.jsonl"), *(root / "docs").glob("*.md")]
    words = sorted({word for path in texts for word in split_words(path.read_text())})
    assert len(words) > 1000
    pure = EnglishStemmer()
    assert [textwords.stem(word) for word in words] == [pure.stemWord(word) for word in words]


def test_the_lookaheads_that_speed_up_the_long_regexes_change_no_match() -> None:
    """The clause breaks and the deliverable phrases each begin with a lookahead naming the first characters their
    alternatives can begin with; without it, each finds exactly what it finds with it, on every dev request and on
    text that only case folding or Unicode spaces make match."""
    import json
    import re

    from lazytools.search import query, steps

    root = Path(__file__).parent.parent / "benchmarks" / "data" / "multiserver"
    texts = [json.loads(line)["query"] for path in sorted(root.glob("*.jsonl")) if path.name not in
             ("tools.jsonl", "servers.jsonl") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts += ["SAVE it AS notes.md", "ſave the list to a CSV file", "Kkeep it in the notes folder", "a,\u00a0b\u2003and c",
              "1. read it\n  2) write it\n- post it", "查天气然后发邮件，并且保存", "EXPORT them AS a PDF;and then dump to x.json"]
    assert len(texts) > 500

    def plain(pattern: re.Pattern[str]) -> re.Pattern[str]:
        return re.compile(re.sub(r"^\(\?=\[[^\]]*\]\)", "", pattern.pattern), pattern.flags)

    assert plain(query._CLAUSE_BREAK).pattern != query._CLAUSE_BREAK.pattern
    for pattern in (steps._SAVED_TO, steps._EXPORTED_AS):
        assert plain(pattern).pattern != pattern.pattern
        found = [(m.span() if (m := pattern.search(text)) else None) for text in texts]
        assert found == [(m.span() if (m := plain(pattern).search(text)) else None) for text in texts]
        assert any(found)
    assert [query._CLAUSE_BREAK.split(text) for text in texts] == [plain(query._CLAUSE_BREAK).split(text)
                                                                     for text in texts]
