"""Whether any tool fits a request at all, from absolute evidence rather than from the ranking.

The relevance floor compares results with the best one, so something is always enabled: "mute my microphone" over
a catalog of git, maps and file tools enabled `git_commit`. The evidence says how well the best tool can fit, on
scales that depend neither on the catalog's size nor on the request's length:

- lexical: the strongest single piece of evidence the best-ranked tool holds, one of the request's words (or a word
  it was read as: a synonym, a related word) that the tool's fields contain, as its IDF times the word's weight,
  over the IDF a word of a single tool would have. A request whose only shared words are ones many tools use
  ("set", "start", "new") scores low; one naming what a tool is about ("axolotl", "kubernetes") scores high.
- gap (with the semantic extra): the closest tool's cosine minus the median cosine of the request's 50 closest
  tools. A raw cosine has a scale of its own per request (a long or generic request is near everything); how far
  one tool stands out from the request's own near neighbours is what says a tool was meant. The raw cosine, the
  second strongest shared term and the share of the request's term mass the best tool holds are measured too.
- lift (with the semantic extra): how far the request's cosine to a tool stands above what everyday requests get
  for that same tool, at best over the tools searched. Each tool's *background floor* is the cosine that
  `FitConfig.background_quantile` of a fixed set of varied requests (`data/fit_background.json`, written for this
  and catalog-independent) stay under; it is computed once per index build, off the event loop. A raw cosine is not
  comparable across tools: a tool near everything (a hub: a generic "search" or "fetch") is near an out-of-scope
  request too, and the floor takes that away, tool by tool. Measured, not weighed by the shipped rule: it refuses
  far more out-of-scope requests on catalogs no rule was chosen on, but a tool that answers anything (Wolfram
  Alpha's short answers, a dictionary) has a high floor, so general questions it does answer are refused too
  (docs/search-log.md, "Round 4c").

- outside (with the semantic extra): the cosine of the request's closest tool of *other* catalogs (`data/fit_outside.json`:
  some 650 public tools of assistants, devices, bookings, payments, media and web APIs, none of an evaluation set).
  A request far nearer one of those than any tool here ("pay my electricity bill": a bill-paying API) asks for
  something that exists, elsewhere; a request this catalog answers is about as near its own tool as to any other.
  The rule subtracts the excess past `FitConfig.outside_margin`, weighed by `outside_weight`: a penalty, never a
  bonus, so a catalog that holds the very tools of that list loses nothing.

- words: the natural log of the request's word count, at most WORDS_AT_MOST (`query.Cost.words`). A long general
  question ("I'm doing a presentation on famous scientists. Can you find out when Albert Einstein was born?", for
  Wolfram Alpha's short answers) is near many tools at once, so its tool stands out less from its near neighbours
  (a small gap) though it was meant, while the out-of-scope requests are short ("mute my microphone"). Weighed a
  little, it lets a long request through with a smaller gap than a short one needs.

BM25 mode compares the lexical evidence with a threshold; semantic mode a weighted sum of the evidence (weights as
data in `FitConfig`). Both were chosen on the even halves of in-scope sets against requests written to be out of
scope, and checked on the odd halves (`python -m benchmarks.nothingfits`, figures in docs/search.md); they depend
on the embedder, so a new embedder needs them measured again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .embedders import embed_finite
from .language import ENGLISH
from .tables import table

if TYPE_CHECKING:
    from .bm25 import BM25FPostings
    from .embedders import Embedder, Vectors

__all__ = ["DEFAULT_FIT", "SIGNALS", "Evidence", "FitConfig", "Yardsticks", "background_floor", "background_requests",
           "evidence_of", "lexical_evidence", "outside_made", "outside_texts", "outside_vectors", "yardsticks"]


SIGNALS = ("lexical", "cosine", "gap", "second", "coverage", "lift", "words")
"""The evidence a semantic rule may weigh (the fields of `Evidence`)."""


@dataclass(frozen=True, slots=True)
class FitConfig:
    """When search_tools says that nothing fits (and enables nothing). `enabled=False`: never."""

    enabled: bool = True
    min_lexical: float = 0.185
    """BM25 mode: the lexical evidence a request's best tool needs (0: every request fits)."""
    semantic_weights: tuple[tuple[str, float], ...] = (("lexical", 0.2), ("gap", 0.8), ("words", 0.035))
    """Semantic mode: a request fits when this weighted sum of its evidence (names from `SIGNALS`) ..."""
    min_semantic: float = 0.203
    """... reaches this."""
    outside_weight: float = 0.75
    """Semantic mode: what the sum loses per unit by which the request's closest tool of other catalogs
    (`Evidence.outside`) is nearer than its closest tool here, past `outside_margin` (0: the outside is not read)."""
    outside_margin: float = 0.1
    background_quantile: float = 0.9
    """Each tool's background floor is the cosine this share of the background requests stay under (read when an
    index computes its floors, as it embeds its tools: `background_floor`)."""
    english_only: bool = True
    """Whether only requests read as English are judged (`language.language_of`; both modes): every threshold was
    chosen on English requests, and one in French or German shares few words with an English catalog and sits far
    from its tools for an English encoder, so the evidence took it for a request nothing answers."""
    embedder: str = "minilm+wordllama"
    """The embedder the semantic rule was chosen for (named, not the default's name: a new default must be measured
    first): each embedder's cosines have a scale of their own, so with another one no request is refused in
    semantic mode."""

    def __post_init__(self) -> None:
        unknown = [name for name, _ in self.semantic_weights if name not in SIGNALS]
        if unknown:
            raise ValueError(f"unknown fit signals: {unknown}")

    def fits(self, evidence: Evidence | None) -> bool:
        if not self.enabled or evidence is None or evidence.named:
            return True
        if self.english_only and evidence.language != ENGLISH:
            return True  # the evidence was calibrated on English requests and does not judge others
        if evidence.cosine is None:
            return evidence.lexical >= self.min_lexical
        if evidence.embedder != self.embedder:
            return True
        if any(getattr(evidence, name) is None for name, weight in self.semantic_weights if weight):
            return True  # a signal the rule weighs is not measured here (an index without floors yet)
        return self.semantic_score(evidence) >= self.min_semantic

    def weighs(self, signal: str) -> bool:
        """Whether the semantic rule gives `signal` a weight (an index computes the floors only for a rule that
        weighs the lift: they cost a second of CPU per process and some per build)."""
        return any(name == signal and weight for name, weight in self.semantic_weights)

    def semantic_score(self, evidence: Evidence) -> float:
        """The weighted sum of `evidence` the semantic rule compares with `min_semantic`, less the outside penalty."""
        score = sum(weight * (getattr(evidence, name) or 0.0) for name, weight in self.semantic_weights)
        if self.outside_weight and evidence.outside is not None and evidence.cosine is not None:
            score -= self.outside_weight * max(0.0, evidence.outside - evidence.cosine - self.outside_margin)
        return score


@dataclass(frozen=True, slots=True)
class Evidence:
    """How well the best tool can fit a request (see the module's docstring)."""

    lexical: float
    cosine: float | None = None
    """The closest tool's cosine (semantic mode only)."""
    named: bool = False
    """The request names a tool: it fits, whatever its words say."""
    embedder: str | None = None
    """The name of the embedder that gave `cosine`."""
    second: float = 0.0
    """The second strongest distinct term the best tool holds, on `lexical`'s scale."""
    coverage: float = 0.0
    """The share of the request's term mass (weight times IDF) that the best tool holds."""
    gap: float | None = None
    """The closest cosine minus the median of the GAP_AMONG closest (semantic mode only): how far the closest tool
    stands out from the request's other near tools, on a scale of that request and catalog."""
    lift: float | None = None
    """The most any tool searched has of the request's cosine above its background floor (semantic mode, once the
    index has its floors): above 0, the request is nearer that tool than nearly all everyday requests are."""
    words: float = 0.0
    """The natural log of the request's word count, at most WORDS_AT_MOST (0 for a word or none)."""
    outside: float | None = None
    """The cosine of the request's closest tool of other catalogs (`outside_texts`; semantic mode, once the index
    has their vectors)."""
    language: str = ENGLISH
    """The language the request is written in (`query.Query.language`)."""


def evidence_of(bm25: BM25FPostings, terms: Mapping[str, float], best: int, candidates: npt.NDArray[np.bool_],
                vectors: Vectors | None, request: Vectors | None, *, named: bool,
                embedder: str | None = None, floors: npt.NDArray[np.float32] | None = None, words: int = 1,
                read: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None,
                outside: Vectors | None = None, language: str = ENGLISH) -> Evidence:
    """The evidence for a request scored with the weighted `terms`, whose best-ranked tool is at position `best`;
    with embeddings, the cosine of the `candidates` tool closest to the `request` vector (the embedder's own
    cosine, before any lift by server), and with each tool's background `floors` (`background_floor`) the lift;
    `words` is the request's word count (`query.Cost.words`); `read`: the slots and weights of `terms` when the
    caller has them (`bm25.TermsRead.first`); `outside`: the vectors of `outside_texts` by the same embedder;
    `language`: the request's (`language.language_of`)."""
    lexical, second, coverage = _term_evidence(bm25, terms, best, read)
    cosine = gap = lift = nearest_outside = None
    if vectors is not None and request is not None and candidates.any():
        every = np.einsum("ij,j->i", vectors, request)
        cosines = every[candidates]
        cosine = float(cosines.max())
        top = np.partition(cosines, -GAP_AMONG)[-GAP_AMONG:] if cosines.size > GAP_AMONG else cosines
        gap = cosine - float(np.median(top))
        if floors is not None and floors.shape == every.shape:
            lift = float((every - floors)[candidates].max())
        if outside is not None and len(outside) and outside.shape[1] == request.shape[0]:
            nearest_outside = float((outside @ request).max())  # a BLAS product (einsum runs its own loop)
    return Evidence(lexical, cosine, named, embedder if cosine is not None else None, second, coverage, gap, lift,
                    math.log(min(max(words, 1), WORDS_AT_MOST)), nearest_outside, language)


@cache
def background_requests() -> tuple[str, ...]:
    """The fixed, catalog-independent requests each tool's background floor is measured against."""
    return tuple(str(text) for text in table("fit_background")["requests"])


_EMBEDDED: dict[tuple[str, str, int], Vectors] = {}
"""The fixed texts' vectors (the background requests, the outside tools) by which texts and which embedder
(fingerprint, dimensions): embedded once per process."""


def _key(which: str, embedder: Embedder) -> tuple[str, str, int]:
    return which, embedder.fingerprint, embedder.dimensions


def _embedded_once(which: str, embedder: Embedder, read: Callable[[], tuple[str, ...]],
                   embed: Callable[[list[str]], Vectors] | None = None) -> Vectors:
    """The vectors of the fixed texts `read` gives (`which`: their name) by `embedder`, embedded the first time
    only, straight by `embedder` or by `embed`."""
    key = _key(which, embedder)
    known = _EMBEDDED.get(key)
    if known is None:
        listed = list(read())
        known = _EMBEDDED[key] = embed_finite(embedder, listed) if embed is None else embed(listed)
    return known


def background_floor(embedder: Embedder, vectors: Vectors, quantile: float) -> npt.NDArray[np.float32]:
    """Each tool's background floor: the cosine to its vector (a row of `vectors`, by `embedder`) that `quantile`
    of the background requests stay under. Embeds the background once per embedder and process (a second or so
    of CPU), then one matrix product: call it where the tools are embedded, off the event loop."""
    known = _embedded_once("background", embedder, background_requests)
    if not len(vectors):
        return np.zeros(0, dtype=np.float32)
    floors: npt.NDArray[np.float32] = np.quantile(np.einsum("ij,kj->ki", vectors, known), quantile,
                                                  axis=0).astype(np.float32)
    return floors


@cache
def outside_texts() -> tuple[str, ...]:
    """The tools of other catalogs `Evidence.outside` compares a request with, as search embeds a tool's text."""
    return tuple(str(text) for text in table("fit_outside")["tools"])


def outside_made(embedder: Embedder) -> Vectors | None:
    """The outside tools' vectors by `embedder` if this process has made them (`outside_vectors`), else None."""
    return _EMBEDDED.get(_key("outside", embedder))


def outside_vectors(embedder: Embedder, embed: Callable[[list[str]], Vectors] | None = None) -> Vectors:
    """The vectors of `outside_texts` by `embedder`, embedded once per embedder and process (a few seconds of CPU:
    call it where the tools are embedded, off the event loop); `embed`: how, when not straight by `embedder` (the
    embedding thread passes its on-disk cache, so a restart reads them)."""
    return _embedded_once("outside", embedder, outside_texts, embed)


@dataclass(frozen=True, slots=True)
class Yardsticks:
    """What an index's evidence compares a request with besides its own tools, computed with their vectors."""

    floors: npt.NDArray[np.float32] | None = None
    """Each tool's background floor (`background_floor`), for the lift."""
    outside: Vectors | None = None
    """The outside tools' vectors (`outside_vectors`)."""


def yardsticks(embedder: Embedder, vectors: Vectors, fit: FitConfig, *, every: bool = False) -> Yardsticks:
    """The floors if `fit` weighs the lift, the outside vectors if it reads them and they are made (`outside_made`:
    an index is not kept from fusing while they are); `every`: both, made here if need be, whatever the rule weighs
    (the benchmark that chooses the rule measures them all)."""
    floors = background_floor(embedder, vectors, fit.background_quantile) if every or fit.weighs("lift") else None
    if every:
        return Yardsticks(floors, outside_vectors(embedder))
    return Yardsticks(floors, outside_made(embedder) if fit.outside_weight else None)


def _ranked(terms: Mapping[str, float], idf: Mapping[str, float]) -> list[tuple[float, str]]:
    """The query `terms` the index knows, as (weight × IDF, term), strongest first."""
    return sorted(((weight * idf[term], term) for term, weight in terms.items() if term in idf), reverse=True)


def _single(size: int) -> float:
    """The IDF of a term only one of `size` tools has (Okapi's, as the index computes it)."""
    return math.log(max(size - 1 + 0.5, 1.0)) - math.log(1.5)


def _term_evidence(bm25: BM25FPostings, terms: Mapping[str, float], best: int,
                   read: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None,
                   ) -> tuple[float, float, float]:
    """`Evidence.lexical`, `second` and `coverage` for the weighted `terms` and the best tool `best`, on the index's
    arrays: a long request has hundreds of terms, and sorting them as Python pairs and looking each up one by one
    cost more than ranking them. `lexical_evidence` states the rule in plain Python (a test holds them equal).
    `read`: the slots and weights of `terms`, in their order, when scoring read them already."""
    names = list(terms)
    if read is None:
        slots, weights = bm25.slots(names), np.fromiter(terms.values(), dtype=np.float64, count=len(names))
    else:
        slots, weights = read
    known = np.flatnonzero(slots >= 0)
    values = weights[known] * bm25.idfs(slots[known])  # each term's weight × IDF, as `_ranked` computes it
    # The MASS_TERMS strongest, as `_ranked` orders them (value, then term, both in reverse): only the values that
    # can be among them (ties with the last included) are sorted, as Python pairs.
    pool = np.arange(values.size)
    if values.size > MASS_TERMS:
        pool = np.flatnonzero(values >= np.partition(values, values.size - MASS_TERMS)[values.size - MASS_TERMS])
    held = bm25.holding(best, slots[known[pool]])
    # The strongest term the tool holds: among the pool when it holds one there (every other value is lower), else
    # among all.
    if held.any():
        strongest = float(values[pool][held].max())
    else:
        everywhere = bm25.holding(best, slots[known]) if pool.size < values.size else held
        strongest = float(values[everywhere].max()) if everywhere.any() else 0.0
    single = _single(bm25.size)
    lexical = min(1.0, strongest / single) if single > 0 else (1.0 if strongest > 0 else 0.0)
    if lexical < 1.0 and (bm25.size < MIN_CATALOG or _about_the_catalog(bm25, weights, slots, best)):
        lexical = 1.0
    if single <= 0:
        return lexical, 0.0, 0.0
    top = sorted(zip(values[pool].tolist(), [names[i] for i in known[pool].tolist()], held.tolist()),
                 reverse=True)[:MASS_TERMS]
    total = sum(value for value, _, _ in top)
    kept = [value for value, _, holds in top if holds]
    second = min(1.0, kept[1] / single) if len(kept) > 1 else 0.0
    return lexical, second, sum(kept) / total if total > 0 else 0.0


MASS_TERMS = 64
GAP_AMONG = 50
WORDS_AT_MOST = 25
"""Past this many words a request is long whatever its length: `Evidence.words` stops growing (a pasted task of
200 words is no more general than one of 25)."""


def _about_the_catalog(bm25: BM25FPostings, weights: npt.NDArray[np.float64], slots: npt.NDArray[np.int64],
                       best: int) -> bool:
    """Whether the best tool shares with the request a word nearly all of the catalog holds: its IDF is low because the
    request is about what the whole catalog is about (a catalog of weather tools asked for "weather"), which is
    evidence of a fit, not against it. Only the request's MASS_TERMS heaviest terms (`weights`, in its order; equal
    weights: the first) are looked at, `slots` their slots in the index (-1 for a term it does not hold)."""
    if bm25.widest < COMMON_SHARE:  # no term of the catalog is that common (most catalogs: see COMMON_SHARE)
        return False
    heaviest = slots[np.argsort(-weights, kind="stable")[:MASS_TERMS]]
    heaviest = heaviest[heaviest >= 0]
    return bool(((bm25.shares(heaviest) >= COMMON_SHARE) & bm25.holding(best, heaviest)).any())


def lexical_evidence(terms: Mapping[str, float], idf: Mapping[str, float], holds: Callable[[str], bool],
                     size: int) -> float:
    """The strongest weighted IDF among the query `terms` (term -> weight) that the best tool `holds`, over the IDF
    of a term only one of `size` tools has (Okapi's, as the index computes it), at most 1. The terms are tried
    strongest first, so a long request's hundreds of terms cost a few lookups."""
    return _strongest(_ranked(terms, idf), holds, size)


def _strongest(ranked: list[tuple[float, str]], holds: Callable[[str], bool], size: int) -> float:
    """`lexical_evidence` from the terms already `ranked`."""
    single = _single(size)
    best = next((value for value, term in ranked if holds(term)), 0.0)
    return min(1.0, best / single) if single > 0 else (1.0 if best > 0 else 0.0)


MIN_CATALOG = 30
"""Below this many tools the lexical evidence says nothing against a fit: with a handful of documents IDF cannot
tell a word the catalog is about from a chance match (3 of 7 tools holding "read" and "file" scored .17)."""
COMMON_SHARE = 0.9
"""A word at least this share of the catalog holds is the catalog's own subject (`_about_the_catalog`): in the dev,
ToolAlpaca and RestBench catalogs no word reaches it (the most common, "get" and "string", stand at .83 and .68)."""

DEFAULT_FIT = FitConfig()
