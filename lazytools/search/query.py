"""A request analysed once (`analyze`): its needs, its weighted index terms each tagged with the rule that made it
(its words, everyday phrases, typo fixes, related words...), the tools it names, the output it
names, its language and what scoring it will cost. Every stage of the ranking reads this `Query`; none reads the
raw text again."""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from .analysis import split_words, terms_of, tokenize
from .config import DEFAULT, RankingConfig
from .crosslang import english_rendering, has_cjk
from .language import ENGLISH, language_of
from .names import NameMatcher
from .phrases import read_phrases
from .related import RelatedWords
from .steps import deliverable
from .vocabulary import Vocabulary

__all__ = [
    "Cost",
    "Expansions",
    "Lexicon",
    "Query",
    "TermReader",
    "Terms",
    "analyze",
    "catalog_expansions",
    "clauses",
    "cost_of",
    "tagged_terms",
    "weighted_terms",
]

TYPED = "typed"
"""The rule of a term the query itself holds."""

# Needs are separated by punctuation, by joining words, and in long task descriptions by line breaks, list
# markers ("1.", "2)", "-") and sequencing words ("after that", "finally"); in Chinese, by its full-width
# punctuation (which needs no space after it) and sequencing words (然后 "then", 之后 "after", 接着 "next").
# Every break begins with one of the characters of the lookahead, and a joining word with one of the letters of
# its own: the engine passes over any other place at once instead of trying each alternative there (half the cost
# of splitting a long request).
_CLAUSE_BREAK = re.compile(
    r"(?=[.;:?!,，。；：？！、然之接并\s])"
    r"(?:[.;:?!]+\s+|,\s+|[，。；：？！、]+\s*|(?:然后|之后|接着|并且)|\s*\n\s*(?:(?:\d+[.)]|[-*•])\s+)?"
    r"|\s+(?=[aftp])\b(?:and then|and also|as well as|after that|afterwards|finally|and|also|then|plus)\b\s+)",
    re.IGNORECASE,
)
MIN_CLAUSE_TERMS = 2


Expansions = Callable[[str], Sequence[tuple[str, float]]]
"""A query term → the catalog's words related to it, each with the weight it adds."""


def catalog_expansions(related: RelatedWords, vocabulary: Vocabulary, cache_size: int = 8192,
                       weight: float = DEFAULT.related_weight, most: int | None = None) -> Expansions:
    """`related`'s neighbours of a term that the catalog uses, the closest first, at most `most` of them (the caller
    keeps as many as its config's `max_related`), remembered per term."""

    @lru_cache(maxsize=cache_size)
    def expansions(term: str) -> tuple[tuple[str, float], ...]:
        return tuple(related.expansions(term, weight, within=vocabulary.terms, most=most))

    return expansions


@dataclass(frozen=True, slots=True)
class Lexicon:
    """What a catalog's index gives the analysis of a query: its vocabulary and what reaches into it."""

    vocabulary: Vocabulary
    expansions: Expansions | None = None
    """A query term -> the catalog's related words, each with its weight (`catalog_expansions`)."""
    rendered: Container[str] = frozenset()
    """Terms only tools' translations hold: matched when the query has them, never otherwise."""
    words: Container[str] = frozenset()
    """Stems of real words (the related-words table's), never taken for a typo: "notes" is no misspelt "nodes"."""
    names: NameMatcher | None = None


RELATED = "related"
"""The rule of a term a query's word brings as related (`tagged_terms`)."""


@dataclass(frozen=True, slots=True)
class Terms:
    """Weighted index terms, each with the rule that made it (`TYPED` for the query's own words)."""

    weights: dict[str, float]
    ruled: dict[str, str]
    """The rule of each term but the related words; those come after the others in `weights`. A long request brings
    a thousand related words, and no ranking reads their rule, so it is written out only when asked for (`rules`)."""

    @property
    def rules(self) -> dict[str, str]:
        """Each term's rule, in the order of `weights`."""
        ruled = self.ruled
        return {term: ruled.get(term, RELATED) for term in self.weights}


MAX_READ_TERMS = 16_384
"""Distinct terms a `TermReader` remembers what they add; past it, its memory starts afresh (bounded whatever
requests hold)."""

Added = tuple[tuple[str, float, str], ...]
"""The (term, weight, rule) a query's term adds to its weighted terms."""


class TermReader:
    """What each term of a request adds to its weighted terms (itself, its typo fixes and completions) and
    the catalog's related words it brings, for one `Lexicon` and config: the same for that term in every request,
    so each is worked out once and remembered (at most `size` terms). A long request repeats its needs' words in
    its whole, and requests repeat the same few thousand words."""

    def __init__(self, lexicon: Lexicon, config: RankingConfig = DEFAULT, size: int = MAX_READ_TERMS) -> None:
        self.lexicon = lexicon
        self.config = config
        self.size = size
        self._typed: dict[bool, dict[str, Added]] = {False: {}, True: {}}
        """What each term adds, per `guess`: a dict keyed by the term alone is read fastest."""
        self._related: dict[str, tuple[tuple[str, float], ...]] = {}

    def __len__(self) -> int:
        return len(self._typed[False]) + len(self._typed[True]) + len(self._related)

    def typed(self, term: str, guess: bool) -> Added:
        """What the query term `term` adds; `guess`: whether the query is short enough for typo fixes."""
        known = self._typed[guess]
        added = known.get(term)
        if added is None:
            added = self._read(term, guess)
            if len(known) >= self.size:
                known.clear()
            known[term] = added
        return added

    def each_typed(self, terms: Iterable[str], guess: bool) -> list[Added]:
        """`typed` of each of `terms`, in order: a long request's hundreds of words are mostly remembered ones."""
        known = self._typed[guess]
        return [known[term] if term in known else self.typed(term, guess) for term in terms]

    def each_related(self, terms: Iterable[str]) -> list[tuple[tuple[str, float], ...]]:
        """`related` of each of `terms`, in order: a long request's words are mostly remembered ones."""
        known = self._related
        return [known[term] if term in known else self.related(term) for term in terms]

    def related(self, term: str) -> tuple[tuple[str, float], ...]:
        """The catalog's words related to `term`, each with its weight, at most the config's `max_related`; those of
        a weight not above 0 left out (none would add anything)."""
        found = self._related.get(term)
        if found is None:
            expansions = self.lexicon.expansions
            kept = expansions(term)[: self.config.max_related] if expansions is not None else ()
            found = tuple(pair for pair in kept if pair[1] > 0)
            if len(self._related) >= self.size:
                self._related.clear()
            self._related[term] = found
        return found

    def _read(self, term: str, guess: bool) -> Added:
        config, on = self.config, self.config.on
        vocabulary = self.lexicon.vocabulary
        added: list[tuple[str, float, str]] = []
        if on("short_numbers") and term.isdigit() and len(term) <= config.max_amount_digits:
            return ((term, config.number_weight, "short_numbers"),) if term in vocabulary else ()
        if term in vocabulary or term in self.lexicon.rendered:
            added.append((term, 1.0, TYPED))
        elif guess:
            fixes = [] if term in self.lexicon.words or not on("typos") else vocabulary.corrections(term)[:2]
            added.extend((fix, config.typo_weight, "typos") for fix in fixes)
            if not fixes and on("completions"):
                # A word cut short ("kube", "calend") or the head of a longer name.
                added.extend((completion, config.completion_weight, "completions")
                             for completion in vocabulary.completions(term))
        return tuple(added)


def tagged_terms(query: str, lexicon: Lexicon, config: RankingConfig = DEFAULT,
                 reader: TermReader | None = None) -> Terms:
    """Index terms for `query`, each with its weight (repeated words add up, as in BM25) and the rule that made it:
    its words, then the words of its everyday phrases and (for Chinese) English glosses, then the
    catalog's words related to them that the query does not already have, each at its best weight. Each rule
    can be switched off by `config.off` (config.RULES). `reader` (for this lexicon and config) remembers what
    each term adds across requests; without one, a new one serves this query alone."""
    if reader is None:
        reader = TermReader(lexicon, config)
    vocabulary, rendered = lexicon.vocabulary, lexicon.rendered
    weights: dict[str, float] = {}
    rules: dict[str, str] = {}

    def put(term: str, weight: float, rule: str) -> None:
        weights[term] = weight
        rules[term] = rule

    on = config.on
    typed = split_words(query)
    meant, replaced = read_phrases(typed, off=config.off)
    terms = tokenize(query)  # remembered: the clauses were told apart by these very terms (`_clauses`)
    if replaced:
        terms = [term for term in terms if term not in replaced]
    guess = len(terms) <= config.max_terms_to_correct
    weight_of, first_rule = weights.get, rules.setdefault
    for added in reader.each_typed(terms, guess):
        for other, weight, rule in added:
            weights[other] = weight_of(other, 0.0) + weight
            first_rule(other, rule)
    for word in meant:
        if word in vocabulary and word not in weights:
            put(word, config.phrase_weight, "phrases")
    if on("crosslang") and not query.isascii() and has_cjk(query):
        glosses = split_words(english_rendering(query))
        for word in terms_of(glosses):
            if (word in vocabulary or word in rendered) and word not in weights:
                put(word, config.crosslang_weight, "crosslang")
        # The glosses are read as English is: 记住 "remember" stores a fact in memory, 忘记 "forget" deletes it.
        for word in read_phrases(glosses, questions=False, off=config.off)[0]:
            if word in vocabulary and word not in weights:
                put(word, config.phrase_weight, "crosslang")
    if lexicon.expansions is not None and on("related"):
        # Each related word at its best weight, in the order the words first come; those the query already has
        # are taken out after the loop (one set operation, not a lookup per word: a long request brings a thousand).
        extra: dict[str, float] = {}
        best = extra.setdefault  # a new word is put at its weight (every one is above 0: `TermReader.related`)
        for found in reader.each_related(set(terms)):
            for other, weight in found:
                if best(other, weight) < weight:
                    extra[other] = weight
        for held in weights.keys() & extra.keys():
            del extra[held]
        weights.update(extra)  # their rule, RELATED, is every term's that has none in `rules` (`Terms.rules`)
    return Terms(weights, rules)


def weighted_terms(query: str, vocabulary: Vocabulary, expansions: Expansions | None = None, *,
                   rendered: Container[str] = frozenset(), words: Container[str] = frozenset(),
                   config: RankingConfig = DEFAULT) -> dict[str, float]:
    """`tagged_terms`' weights alone."""
    return tagged_terms(query, Lexicon(vocabulary, expansions, rendered, words), config).weights


QUICK_TOOLS = 500
QUICK_CHARS = 300
"""A BM25 search of at most this many tools for a query of at most this many characters costs a few tenths of a
millisecond (about a millisecond at worst on a busy machine): less than the worker-thread round trip it would
otherwise take, which was most of a served search's cost over HTTP."""
QUICK_WORDS = 24
QUICK_NEEDS = 2
"""A quick query also has at most this many words (identifier parts count one each) and needs: within 300
characters, 150 short words or 40 needs ("add 1 and 2, then ...") cost 6-17 ms of scoring, each word and each need
scored apart. An everyday request ("convert a temperature", "get the weather in Paris and email it to Bob") has far
fewer."""


@dataclass(frozen=True, slots=True)
class Cost:
    """What scoring a query will cost, from its text and the index that scores it."""

    chars: int
    words: int
    """Words, counting each part of an identifier (the larger of the two readings)."""
    needs: int
    cjk: bool
    """Chinese, Japanese or Korean text: the first such text reads the Chinese dictionary (about half a second)."""
    tools: int = 0
    encoded: bool = False
    """Whether the query is embedded (the semantic extra): milliseconds of an encoder."""
    prepared: bool = True
    """Whether the index's spelling table is built (built by a query, it takes tens of ms)."""

    @property
    def quick(self) -> bool:
        """Cheap enough to run on the event loop (well under a millisecond): BM25 over a small catalog, a short
        query of few words and needs, no CJK text."""
        return (not self.encoded and self.prepared and self.tools <= QUICK_TOOLS and self.chars <= QUICK_CHARS
                and not self.cjk and self.words <= QUICK_WORDS and self.needs <= QUICK_NEEDS)


@dataclass(frozen=True, slots=True)
class Query:
    """A request as every stage of the ranking reads it, analysed once (`analyze`)."""

    text: str
    needs: tuple[str, ...]
    """Its separate needs (clauses, parts, steps: one name), or () for a request of one need."""
    tokens: frozenset[str]
    """Its own terms (stemmed, without stop words)."""
    terms: Terms = field(default_factory=lambda: Terms({}, {}))
    """Its weighted terms for the catalog (none without a `Lexicon`)."""
    need_terms: tuple[Terms, ...] = ()
    named: Mapping[int, int] = field(default_factory=dict)
    """Tool position -> how surely the request names it (`names`), with a `Lexicon` that has names."""
    deliverable: str | None = None
    """The text its named output is searched with ("write save file ... as notes.md"), if it names one."""
    cjk: bool = False
    language: str = ENGLISH
    """The language it is written in, by its function words (`language.language_of`): "nothing fits" judges English
    requests only."""
    cost: Cost = field(default_factory=lambda: Cost(0, 0, 1, False))


@lru_cache(maxsize=256)  # a served search asks three times: the transport's and the server's quick checks, analyze
def cost_of(text: str) -> Cost:
    """`text_cost` of `text` and its needs (`clauses`)."""
    return text_cost(text, clauses(text))


def text_cost(text: str, needs: Sequence[str]) -> Cost:
    """A query's `Cost` from its text alone (chars, words, needs, CJK)."""
    if len(text) > QUICK_CHARS:  # past the quick bound, counting its words changes nothing
        return Cost(len(text), len(text.split()), max(1, len(needs)), not text.isascii() and has_cjk(text))
    words = max(len(text.split()), len(split_words(text)))
    return Cost(len(text), words, max(1, len(needs)), not text.isascii() and has_cjk(text))


def analyze(text: str, lexicon: Lexicon | None = None, config: RankingConfig = DEFAULT,
            reader: TermReader | None = None) -> Query:
    """Every text rule, run once: the needs, the terms (with `lexicon`, the catalog's weighted terms of the whole
    request and of each need, and the tools it names), the deliverable, the language and the cost. `reader`: see
    `tagged_terms` (one for the whole request and its needs when not given)."""
    needs = tuple(clauses(text))
    cost = cost_of(text)
    tokens = frozenset(tokenize(text))
    language = language_of(text)
    if lexicon is None:
        return Query(text, needs, tokens, deliverable=deliverable(text), cjk=cost.cjk, language=language, cost=cost)
    if reader is None:
        reader = TermReader(lexicon, config)
    return Query(
        text, needs, tokens,
        terms=tagged_terms(text, lexicon, config, reader),
        need_terms=tuple(tagged_terms(need, lexicon, config, reader) for need in needs),
        named=lexicon.names.matches(text) if lexicon.names is not None else {},
        deliverable=deliverable(text), cjk=cost.cjk, language=language, cost=cost,
    )


def clauses(query: str) -> list[str]:
    """The separate needs of a long request ("… the stock price, and the latest news about it"), or [] for one."""
    return list(_clauses(query))


@lru_cache(maxsize=256)  # a served search with a usage prior asks twice: selection, then the index
def _clauses(query: str) -> tuple[str, ...]:
    parts = [part for part in _CLAUSE_BREAK.split(query) if len(tokenize(part)) >= MIN_CLAUSE_TERMS]
    return tuple(parts) if len(parts) > 1 else ()
