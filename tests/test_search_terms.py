"""The query path's own memory: what each term adds, remembered per term and bounded, gives what reading afresh
gives (`query.TermReader`)."""

from __future__ import annotations

from lazytools.search import SearchIndex
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
            assert len(reader._typed) <= 8 and len(reader._related) <= 8
    assert len(reader) > 0
    off = RankingConfig(off={"synonyms", "related"})
    assert tagged_terms("remove the old database", index._lexicon, off, TermReader(index._lexicon, off)).weights == \
        tagged_terms("remove the old database", index._lexicon, off).weights
