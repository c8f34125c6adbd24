"""What a query asks for: weighted index terms (its words, synonyms, corrections) and the needs it lists."""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Sequence
from functools import lru_cache

from .acronyms import acronym_terms
from .analysis import split_words, terms_of, tokenize
from .crosslang import english_rendering, has_cjk
from .phrases import read_phrases
from .related import RelatedWords
from .synonyms import synonyms_of
from .vocabulary import Vocabulary

__all__ = [
    "ACRONYM_WEIGHT",
    "CROSSLANG_WEIGHT",
    "MAX_AMOUNT_DIGITS",
    "MAX_RELATED",
    "MAX_TERMS_TO_CORRECT",
    "NUMBER_WEIGHT",
    "PHRASE_WEIGHT",
    "PREFIX_WEIGHT",
    "SYNONYM_WEIGHT",
    "TYPO_WEIGHT",
    "Expansions",
    "catalog_expansions",
    "clauses",
    "weighted_terms",
]

SYNONYM_WEIGHT = 0.5
"""A synonym ("remove" for "delete") counts half as much as the word itself."""
TYPO_WEIGHT = 0.7
ACRONYM_WEIGHT = 0.7
"""Each word an acronym stands for ("pull", "request" for "PR"), or the acronym of a phrase spelled out."""
PHRASE_WEIGHT = 0.7
"""Each word of what a phrasal verb or idiom means ("create", "start" for "spin up"); the verb's own word is left
out."""
PREFIX_WEIGHT = 0.5
NUMBER_WEIGHT = 0.3
"""A short bare number is an amount of the request, not a word of the tool it wants ("15% of 80" matched a cron
example's "*/15" and "9-17"); it counts this much."""
MAX_AMOUNT_DIGITS = 3
"""Longer runs of digits are identifiers and count in full: an arXiv id's "2401" names the arXiv tools whose
examples hold it (dropping those cost a deliverable on the dev set)."""
CROSSLANG_WEIGHT = 0.7
"""Each English word of a Chinese request's words (crosslang.py), so it finds tools described in English."""
MAX_RELATED = 10
"""A query word brings at most this many of its related words that the catalog uses, the closest first (measured:
10 beat 5 and no limit on both MetaTool halves)."""
MAX_TERMS_TO_CORRECT = 4
"""Only queries of at most this many terms get spelling guesses. In a long sentence, a word the catalog does
not know is usually a real word its tools just do not use ("last" is no typo of "list"); a short keyword query
("wether paris") is where typos hurt and where a guess is worth making."""

# Needs are separated by punctuation, by joining words, and in long task descriptions by line breaks, list
# markers ("1.", "2)", "-") and sequencing words ("after that", "finally"); in Chinese, by its full-width
# punctuation (which needs no space after it) and sequencing words (然后 "then", 之后 "after", 接着 "next").
_CLAUSE_BREAK = re.compile(
    r"[.;:?!]+\s+|,\s+|[，。；：？！、]+\s*|(?:然后|之后|接着|并且)|\s*\n\s*(?:(?:\d+[.)]|[-*•])\s+)?"
    r"|\s+\b(?:and then|and also|as well as|after that|afterwards|finally|and|also|then|plus)\b\s+",
    re.IGNORECASE,
)
MIN_CLAUSE_TERMS = 2
_PERCENT = re.compile(r"(?<=\d)\s*%")


Expansions = Callable[[str], Sequence[tuple[str, float]]]
"""A query term → the catalog's words related to it, each with the weight it adds."""


def catalog_expansions(related: RelatedWords, vocabulary: Vocabulary, cache_size: int = 8192) -> Expansions:
    """`related`'s neighbours of a term that the catalog uses, the closest MAX_RELATED, remembered per term."""

    @lru_cache(maxsize=cache_size)
    def expansions(term: str) -> tuple[tuple[str, float], ...]:
        known = [(other, weight) for other, weight in related.expansions(term) if other in vocabulary]
        return tuple(known[:MAX_RELATED])

    return expansions


def weighted_terms(query: str, vocabulary: Vocabulary, expansions: Expansions | None = None, *,
                   rendered: Container[str] = frozenset(), words: Container[str] = frozenset()) -> dict[str, float]:
    """Index terms for `query`, each with its weight (repeated words add up, as in BM25), then the catalog's words
    related to them (`expansions`) that the query does not already have, each at its best weight. `rendered`: terms
    only tools' translations hold, matched when the query has them and never otherwise. `words`: stems of real
    words (the related-words table's), never taken for a typo: "notes" is no misspelt "nodes"."""
    weights: dict[str, float] = {}

    def add(term: str, weight: float) -> None:
        weights[term] = weights.get(term, 0.0) + weight

    typed = split_words(_PERCENT.sub(" percent ", query))
    meant, replaced = read_phrases(typed)
    terms = [term for term in terms_of(typed) if term not in replaced]
    guess = len(terms) <= MAX_TERMS_TO_CORRECT
    for term in terms:
        if term.isdigit() and len(term) <= MAX_AMOUNT_DIGITS:
            if term in vocabulary:
                add(term, NUMBER_WEIGHT)
            continue
        if term in vocabulary or term in rendered:
            add(term, 1.0)
        elif guess:
            fixes = [] if term in words else vocabulary.corrections(term)[:2]
            for fix in fixes:
                add(fix, TYPO_WEIGHT)
            if not fixes:
                # A word cut short ("kube", "calend") or the head of a longer name.
                for completion in vocabulary.completions(term):
                    add(completion, PREFIX_WEIGHT)
        for synonym in synonyms_of(term):
            if synonym in vocabulary:
                add(synonym, SYNONYM_WEIGHT)
    for word in acronym_terms(terms, query):
        if word in vocabulary and word not in weights:
            weights[word] = ACRONYM_WEIGHT
    for word in meant:
        if word in vocabulary and word not in weights:
            weights[word] = PHRASE_WEIGHT
    if has_cjk(query):
        glosses = split_words(english_rendering(query))
        for word in terms_of(glosses):
            if (word in vocabulary or word in rendered) and word not in weights:
                weights[word] = CROSSLANG_WEIGHT
        # The glosses are read as English is: 记住 "remember" stores a fact in memory, 忘记 "forget" deletes it.
        for word in read_phrases(glosses, questions=False)[0]:
            if word in vocabulary and word not in weights:
                weights[word] = PHRASE_WEIGHT
    if expansions is not None:
        extra: dict[str, float] = {}
        for term in set(terms):
            for other, weight in expansions(term):
                if other not in weights and weight > extra.get(other, 0.0):
                    extra[other] = weight
        weights.update(extra)
    return weights


def clauses(query: str) -> list[str]:
    """The separate needs of a long request ("… the stock price, and the latest news about it"), or [] for one."""
    return list(_clauses(query))


@lru_cache(maxsize=256)  # a served search with a usage prior asks twice: selection, then the index
def _clauses(query: str) -> tuple[str, ...]:
    parts = [part for part in _CLAUSE_BREAK.split(query) if len(tokenize(part)) >= MIN_CLAUSE_TERMS]
    return tuple(parts) if len(parts) > 1 else ()
