"""The search index over a catalog snapshot: which tools answer a query, best first.

Ranking, in order of precedence:
1. names: a query that is a tool's name, mentions it as an identifier, or starts it puts that tool first;
2. relevance: BM25 over weighted fields, with synonyms, related words, typo fixes and completions drawn from
   the catalog's own vocabulary, a request's separate needs scored one by one too, tools of a group the query
   names or whose name's words it holds boosted, in each need the best tool of the server that need is about (by
   what the server says of itself, see `servers`) lifted when BM25 alone preferred another server, and (with the
   semantic extra) fused with embedding similarity, where a request of one need lifts the tools of the servers
   whose tools, together, are closest to it.
3. a deliverable: a request that names where its result goes ("save it as notes.md", "export it to a CSV") gives
   the best tool for that its last place, unless a result already writes there (see `steps`);
4. a prerequisite: when one of the two best results needs an id or coordinates that another tool of its server
   produces (see `inputs`) and no result is such a tool, the first producer takes the last place.

No place is reserved for the best tool of each separate need: as served (limit 5) that rule cost recall on both
MetaTool halves and did not help the multi-server dev set, so the scores alone order the results (figures in
docs/search.md).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..entry import ToolEntry
from .analysis import tokenize
from .bm25 import BM25FPostings
from .copies import first_copies
from .coverage import (
    COVERAGE_POOL,
    COVERAGE_SHARPNESS,
    COVERAGE_WEIGHT,
    SEMANTIC_COVERAGE_SHARPNESS,
    SEMANTIC_COVERAGE_WEIGHT,
    clause_shares,
    cover,
)
from .crosslang import has_cjk
from .documents import FIELD_WEIGHTS, RENDERED_FIELDS, embedding_text, field_terms, field_words, known_words, name_terms
from .embedders import DEFAULT_EMBEDDER, embed_finite
from .fit import Evidence, evidence_of
from .fusion import (
    LONG_TASK_CLAUSES,
    SEMANTIC_WEIGHT,
    ScoreArray,
    clause_weight,
    fuse_semantic,
    semantic_weight,
    with_clauses,
)
from .inputs import MAX_PRODUCERS, input_producers
from .names import NameMatcher, NameWords
from .needs import Need, answered_needs
from .query import catalog_expansions, clauses, weighted_terms
from .recent import RecentAnswers
from .related import RelatedWords, default_related_words
from .semantic import query_vectors
from .servers import ServerIndex
from .steps import deliverable, writes
from .vocabulary import Vocabulary

if TYPE_CHECKING:
    from .embedders import Embedder, Vectors

__all__ = ["BM25F_K1", "GROUP_BOOST", "NAME_WORDS_BOOST", "Hit", "Results", "SearchIndex", "build_index"]


BM25F_K1 = 2.0
"""Term-frequency saturation of BM25F, tuned on the even halves and checked on the odd ones; larger values gain
on MetaTool but lose the dev set's odd half (docs/search.md)."""

GROUP_BOOST = 0.5
"""Tools of a group the query names ("github issues") score this much more (a share of their own score)."""

NAME_WORDS_BOOST = 0.5
"""Tools all of whose name's words the query holds ("create an issue" for create_issue) score this much more."""


DELIVERABLE_DONE = 0.5
"""A pick already does the deliverable when it writes (by its name) and scores this share of the deliverable's best
tool: "save them into a new Notion page" is done by Notion's create-page, not by a file writer."""

MIN_DELIVERABLE_LIMIT = 3
"""Below this many results neither a deliverable nor a producer takes a place: one or two results are the request's
main tools."""

PRODUCER_TOP = 2
"""A producer takes the last place when one of this many best results needs it (`inputs`) and none is picked;
the top 1 or 3 lifted less on the dev set's halves (docs/search-log.md)."""

RECENT_QUERIES = 256
"""Answers an index keeps for queries asked again (the same request from many clients, a client's retry): the
same results at the cost of a lookup."""


@dataclass(frozen=True, slots=True)
class Hit:
    entry: ToolEntry
    score: float


@dataclass(frozen=True, slots=True)
class Results:
    """A search's hits, best first, and for a request of several needs each need with how well they answer it."""

    hits: list[Hit]
    needs: tuple[Need, ...] = ()
    evidence: Evidence | None = None
    """How well the best tool can fit the request at all (`fit`): None when no tool matched."""


class SearchIndex:
    """Name matches, BM25 with query expansion, group boost and optional embedding fusion, over some tools."""

    def __init__(
        self,
        entries: Iterable[ToolEntry],
        *,
        embedder: Embedder | None = None,
        semantic_weight: float = SEMANTIC_WEIGHT,
        related: RelatedWords | None = None,
        servers: Mapping[str, str] | None = None,
    ) -> None:
        """`related` is the related-words table queries are expanded with (None: the shipped one; an empty
        `RelatedWords({})` turns expansion off); `servers`: each group's own description of itself (see
        `servers`)."""
        self.entries: list[ToolEntry] = list(entries)
        words = [field_words(entry) for entry in self.entries]
        known = known_words(words)
        self._bm25 = BM25FPostings(
            [field_terms(entry_words, known) for entry_words in words], FIELD_WEIGHTS, k1=BM25F_K1,
            apart=RENDERED_FIELDS,
        )
        # Words only a translation holds are matched when typed (or translated), never reached by a typo fix or a
        # related word: an English request does not drift into a Chinese tool through words nobody typed.
        self._rendered = self._bm25.rendered_only
        self.vocabulary = Vocabulary([term for term in self._bm25.vocabulary if term not in self._rendered])
        table = default_related_words() if related is None else related
        self._expansions = catalog_expansions(table, self.vocabulary)
        self._words = table
        self._names = NameMatcher([(e.name, e.upstream_name or e.name) for e in self.entries])
        name_keys = [name_terms(entry_words, known) for entry_words in words]
        self._name_words = NameWords(name_keys)
        self._name_keys = name_keys
        self._groups = np.array([entry.group for entry in self.entries], dtype=object)
        group_names = set(self._groups.tolist())
        self._group_masks = {group: self._groups == group for group in group_names}
        self._group_positions = {group: np.flatnonzero(mask) for group, mask in self._group_masks.items()}
        self._group_terms = {group: frozenset(terms) for group in group_names if (terms := tokenize(group))}
        self._servers = ServerIndex(
            [entry.group for entry in self.entries], servers or {},
            [[term for field in ("name", "description") for term in terms[field]]
             for terms in (field_terms({f: w[f] for f in ("name", "description")}, known) for w in words)],
        )
        self._positions = {entry.name: position for position, entry in enumerate(self.entries)}
        self._producers = input_producers(self.entries)
        self._copy_of = np.array(first_copies(self.entries), dtype=np.int64)
        self._writes = [writes(entry) for entry in self.entries]
        self._rendered_tools = np.array([bool(entry_words["english"]) for entry_words in words], dtype=bool)
        self.semantic_weight = semantic_weight
        self._allowed: npt.NDArray[np.bool_] | None = None
        self._recent: RecentAnswers[Results] = RecentAnswers(RECENT_QUERIES)
        self.embedder: Embedder | None = None
        self._vectors: Vectors | None = None
        self._server_vectors: Vectors | None = None
        if embedder is not None:
            self.use_embeddings(embedder, embed_finite(embedder, self.embedding_texts()))

    def __len__(self) -> int:
        return len(self.entries)

    def restricted(self, allowed: Callable[[ToolEntry], bool]) -> SearchIndex:
        """This index, finding and suggesting only the tools `allowed` accepts (what one principal may call).
        The scores are those of the whole index, so an allowed tool ranks as it would for everyone."""
        view = copy.copy(self)
        view._allowed = np.fromiter((allowed(entry) for entry in self.entries), dtype=bool, count=len(self.entries))
        view._recent = RecentAnswers(RECENT_QUERIES)  # its answers are not the whole index's
        return view

    @property
    def semantic(self) -> bool:
        return self._vectors is not None

    def embedding_texts(self) -> list[str]:
        return [embedding_text(entry) for entry in self.entries]

    def use_embeddings(self, embedder: Embedder, vectors: Vectors) -> None:
        """Fuse `embedder`'s similarity from now on; `vectors` are those of `embedding_texts()`, in order.
        Safe while other threads search: the embedder is set before the vectors that switch fusion on."""
        if vectors.shape != (len(self.entries), embedder.dimensions):
            raise ValueError(f"{vectors.shape} vectors for {len(self.entries)} tools of {embedder.dimensions}")
        self._server_vectors = self._servers.centroids(vectors)
        self.embedder = embedder
        self._vectors = vectors
        self._recent.clear()  # answers given by BM25 alone (a search running now keys its answer as such)

    def query_terms(self, query: str) -> dict[str, float]:
        """The weighted index terms `query` is scored with (its words, synonyms, corrections, completions and
        related words)."""
        return weighted_terms(query, self.vocabulary, self._expansions, rendered=self._rendered, words=self._words)

    def _mentioned(self, terms: set[str]) -> list[str]:
        """The groups a query with these terms names ("post it on Slack", "github issues"): all of a group
        name's words."""
        return [group for group, group_terms in self._group_terms.items() if group_terms <= terms]

    def _server_choice(self, texts: Sequence[str], scores: Sequence[ScoreArray],
                       terms: Sequence[Mapping[str, float]]) -> list[ScoreArray]:
        """Each need's `scores` (its `texts`, scored with `terms`) with the best tool of the server that need is
        about lifted (see `servers`)."""
        return [self._servers.lift(need, partial(self._server_terms, text, need_terms))
                for text, need, need_terms in zip(texts, scores, terms, strict=True)]

    @staticmethod
    def _server_terms(text: str, terms: Mapping[str, float]) -> dict[str, float]:
        """The terms a server's document is scored with: the tools' query terms, and every word of `text` (a
        server's description may use words no tool does)."""
        asked = dict(terms)
        for term in tokenize(text):
            asked.setdefault(term, 1.0)
        return asked

    def _lexical_scores(self, query: str, parts: Sequence[ScoreArray], terms: set[str],
                        mentioned: list[str], whole: ScoreArray | None = None) -> ScoreArray:
        """BM25 with the clauses' own scores, the named groups' tools and the tools whose name words the query
        holds boosted (`terms`: the query's tokens; `mentioned`: `_mentioned(terms)`)."""
        if whole is None:
            whole = self._bm25_scores(query)
        scores = with_clauses(whole, parts, clause_weight(len(parts)))
        if scores is whole:
            scores = whole.copy()  # the caller's array is not boosted in place
        # Multiplied only where boosted (x * 1.0 is x): a pass over every tool for each boost was most of this.
        if mentioned:
            scores[np.concatenate([self._group_positions[group] for group in mentioned])] *= 1.0 + GROUP_BOOST
        scores[self._name_words.covering(terms)] *= 1.0 + NAME_WORDS_BOOST
        return scores

    def _bm25_scores(self, query: str) -> ScoreArray:
        return self._scores_of(self.query_terms(query))

    def _scores_of(self, terms: Mapping[str, float]) -> ScoreArray:
        return self._bm25.scores(terms)

    def search(self, query: str, *, limit: int = 5, groups: Sequence[str] | None = None) -> list[Hit]:
        """Tools matching `query`, best first; `groups` restricts them to those groups."""
        return self.find(query, limit=limit, groups=groups).hits

    def find(
        self, query: str, *, limit: int = 5, groups: Sequence[str] | None = None, needs: bool | None = None
    ) -> Results:
        """`search`'s hits, and for a request of several needs how well the hits answer each (see `needs`):
        by default only with embeddings, since without them no need is ever named (`needs=True` measures them
        anyway, for the benchmark that shows why). The answers to the last RECENT_QUERIES queries are kept."""
        key = (query, limit, None if groups is None else tuple(groups), needs, self._vectors is not None,
               self.semantic_weight)
        known = self._recent.get(key)
        if known is None:
            known = self._find(query, limit=limit, groups=groups, needs=needs)
            self._recent.put(key, known)
        return Results(list(known.hits), known.needs, known.evidence)  # a caller may reorder its list, not the one kept

    def _find(self, query: str, *, limit: int, groups: Sequence[str] | None, needs: bool | None) -> Results:
        if not self.entries or limit <= 0:
            return Results([])
        clause_texts = clauses(query)
        part_terms = [self.query_terms(part) for part in clause_texts]
        parts = [self._scores_of(need_terms) for need_terms in part_terms]
        terms = set(tokenize(query))
        mentioned = self._mentioned(terms)  # the group boost's test, and the semantic weight's below
        whole_terms = self.query_terms(query)
        whole = self._scores_of(whole_terms)
        if self._vectors is None and clause_texts:
            # With embeddings the lift lost multi-step tasks and changed no single-need one (docs/search-log.md).
            parts = self._server_choice(clause_texts, parts, part_terms)
        elif self._vectors is None:
            [whole] = self._server_choice([query], [whole], [whole_terms])
        scores = self._lexical_scores(query, parts, terms, mentioned, whole=whole)
        candidates = scores > 0
        need_similarities: list[ScoreArray] = []
        request_vector = None
        vectors, embedder = self._vectors, self.embedder
        if vectors is not None and embedder is not None:
            # einsum rather than BLAS: a single matrix-vector product gains nothing from BLAS threads, which
            # made it 3-20x slower and erratic on a busy 2-core machine (measured at 10,000 tools).
            asked = query_vectors(embedder, query, clause_texts)
            similarities = np.einsum("ij,kj->ki", vectors, asked).astype(np.float64)
            request_vector = asked[0]
            servers = self._server_vectors
            if not clause_texts and servers is not None:
                # A request of one need is about a server: every tool of the servers it is closest to gains
                # (see `servers`); a request of several needs lost the tool of one need to another's siblings.
                similarities[0] = self._servers.lift_similarity(
                    similarities[0], np.einsum("ij,j->i", servers, asked[0]).astype(np.float64))
            # No cosine separates "related" from "unrelated" for static vectors (gibberish reaches 0.45 on
            # MetaTool, where a fifth of the right tools score below 0.2), so every tool is ranked.
            candidates[:] = True
            weight = semantic_weight(len(clause_texts), self.semantic_weight, named=bool(mentioned))
            need_similarities = list(similarities[1:])
            scores = fuse_semantic(scores, similarities[0], weight, parts=need_similarities)
        named = self._names.matches(query)
        if named:
            # Tiers sit above every relevance score; within a tier, relevance still orders the tools.
            lift = float(np.abs(scores).max()) * 2 + 1.0
            for position, tier in named.items():
                scores[position] += tier * lift
                candidates[position] = True
        if groups is not None:
            candidates &= self._in_groups(groups)
        if self._allowed is not None:
            candidates &= self._allowed
        if len(clause_texts) >= LONG_TASK_CLAUSES:
            picked = self._covering(scores, candidates, limit, parts, need_similarities)
        elif self._rendered_tools.any() and not has_cjk(query):
            # Twice the limit, so that a tool answering something else can move up past a moved one.
            picked = self._native_first(self._ranked(scores, candidates, 2 * limit), named.keys())[:limit]
        else:
            picked = self._ranked(scores, candidates, limit)
        picked, delivered = self._with_deliverable(query, picked, candidates, limit)
        picked = self._with_producer(picked, limit, keep=delivered, groups=groups)
        hits = [Hit(self.entries[i], float(scores[i])) for i in picked]
        evidence = evidence_of(self._bm25, whole_terms, picked[0], candidates, vectors, request_vector,
                               named=bool(named), embedder=embedder.name if embedder is not None else None
                               ) if picked else None
        measured = bool(need_similarities) if needs is None else needs
        if not measured:
            return Results(hits, evidence=evidence)
        return Results(hits, answered_needs(clause_texts, parts, need_similarities, picked), evidence)

    def _native_first(self, ranked: list[int], named: Collection[int]) -> list[int]:
        """`ranked` (for a request in English) with each tool described in another language whose name says what
        the name of a tool described in English among them says (Baidu's map_geocode beside Google's
        maps_geocode) moved after the others: found through its rendering, it would take a place from a tool that
        answers something else. A tool the request names (`named` positions) never moves."""
        keys = self._name_keys
        native = {keys[i] for i in ranked if not self._rendered_tools[i] and keys[i]}
        moved = [i for i in ranked if self._rendered_tools[i] and keys[i] in native and i not in named]
        return [i for i in ranked if i not in moved] + moved if moved else ranked

    def _covering(
        self,
        scores: ScoreArray,
        candidates: npt.NDArray[np.bool_],
        limit: int,
        parts: Sequence[ScoreArray],
        need_similarities: Sequence[ScoreArray],
    ) -> list[int]:
        """Positions of the `limit` picks of a long task that cover its clauses (see `coverage`), from its
        best-scored tools. With the semantic extra a tool's share of a clause is the mean of its BM25 share and
        its embedding share (for the clauses that were embedded)."""
        pool = np.array(self._ranked(scores, candidates, max(COVERAGE_POOL, 2 * limit)), dtype=np.intp)
        shares = clause_shares(parts, need_similarities, pool)
        weight, sharpness = COVERAGE_WEIGHT, COVERAGE_SHARPNESS
        if need_similarities:
            weight, sharpness = SEMANTIC_COVERAGE_WEIGHT, SEMANTIC_COVERAGE_SHARPNESS
        picks = cover(scores[pool], shares**sharpness, weight=weight, limit=limit)
        return [int(pool[pick]) for pick in picks]

    def _with_deliverable(self, query: str, picked: list[int], candidates: npt.NDArray[np.bool_],
                          limit: int) -> tuple[list[int], int | None]:
        """`picked` with the best tool of the deliverable the query names (see `steps`) in the last place, unless a
        pick is that tool (or a copy of it) or already writes there: a writing tool (by its name) that scores at
        least DELIVERABLE_DONE of the best for the deliverable; and the pick that answers the deliverable, if any."""
        text = deliverable(query) if limit >= MIN_DELIVERABLE_LIMIT else None
        if text is None:
            return picked, None
        step_scores = np.where(candidates, self._bm25_scores(text), 0.0)
        best = int(np.argmax(step_scores))
        if step_scores[best] <= 0:
            return picked, None
        copy = next((i for i in picked if int(self._copy_of[i]) == int(self._copy_of[best])), None)
        if copy is not None:
            return picked, copy
        if any(self._writes[i] and step_scores[i] >= DELIVERABLE_DONE * step_scores[best] for i in picked):
            return picked, None
        return ([*picked, best] if len(picked) < limit else [*picked[:-1], best]), best

    def _with_producer(self, picked: list[int], limit: int, *, keep: int | None = None,
                       groups: Sequence[str] | None = None) -> list[int]:
        """`picked` with the first producer of the first of its PRODUCER_TOP best tools that needs one and has none
        picked (`list_channels` for `post_message`, a geocoder for a forecast) in the last place: those tools cannot
        be called without it. The producer need not match the request's words ("the weather in Lisbon" names no
        geocoder), only be in the `groups` searched and allowed to the caller; it takes the place before
        `keep`, the tool that writes the request's named output, rather than that one. A result whose action a
        better result already does without a producer brings none (`_callable_above`)."""
        if limit < MIN_DELIVERABLE_LIMIT:
            return picked
        for rank, i in enumerate(picked[:PRODUCER_TOP]):
            producers = self._producers[i]
            if producers and self._callable_above(i, picked[:rank]):
                continue
            if producers and not set(producers) & set(picked):
                wanted = producers[0]
                outside = groups is not None and self._groups[wanted] not in groups
                if outside or (self._allowed is not None and not self._allowed[wanted]):
                    return picked
                if len(picked) < limit:
                    return [*picked, wanted]
                if keep is not None and picked[-1] == keep:
                    return [*picked[:-2], wanted, keep]
                return [*picked[:-1], wanted]
        return picked

    def _callable_above(self, position: int, above: Sequence[int]) -> bool:
        """Whether a result ranked `above` this one does what its name says with nothing to produce first: all of
        that result's name words are this one's (Google's `maps_directions` above AMap's `maps_direction_walking`),
        so this one's producer would take a place for an action already callable."""
        keys = self._name_keys
        return any(not self._producers[j] and keys[j] and keys[j] <= keys[position] for j in above)

    def producers(self, found: Iterable[ToolEntry], limit: int = MAX_PRODUCERS) -> list[ToolEntry]:
        """Tools that produce an id some of `found` require (`list_channels` for `post_message`), not already
        found, best-ranked consumer first, at most `limit` (see `inputs`)."""
        found = list(found)
        names = {entry.name for entry in found}
        suggested: list[ToolEntry] = []
        for entry in found:
            position = self._positions.get(entry.name)
            for other in self._producers[position] if position is not None else ():
                producer = self.entries[other]
                if self._allowed is not None and not self._allowed[other]:
                    continue
                if producer.name not in names and len(suggested) < limit:
                    names.add(producer.name)
                    suggested.append(producer)
        return suggested

    def _in_groups(self, groups: Iterable[str]) -> npt.NDArray[np.bool_]:
        inside = np.zeros(len(self.entries), dtype=bool)
        for group in groups:
            mask = self._group_masks.get(group)
            if mask is not None:
                inside |= mask
        return inside

    def _ranked(self, scores: ScoreArray, candidates: npt.NDArray[np.bool_], limit: int) -> list[int]:
        """Positions of the `limit` best candidates, best first, a tool listed twice by its server only once."""
        matched = np.flatnonzero(candidates)
        negated = -scores[matched]  # gathered once: three passes over thousands of candidates used to gather it
        # Copies sit next to each other in the ranking, so twice the limit almost always holds `limit` originals.
        wanted = 2 * limit
        while True:
            pool = matched
            if matched.size > wanted:
                # The `wanted` best; among tools tied with the last of them, the first in catalog order (`matched`
                # is in that order), so that a larger limit only adds results after these.
                threshold = np.partition(negated, wanted - 1)[wanted - 1]  # the value alone: no index array
                above = matched[negated < threshold]
                tied = matched[negated == threshold][: wanted - above.size]
                pool = np.concatenate([above, tied])
            order: list[int] = []
            seen: set[int] = set()
            # As Python numbers, read once: indexing numpy per item was a tenth of a search at 10,000 tools.
            # Sorted by (-score, position): equal scores keep catalog order, so results are deterministic.
            ranked = sorted(zip((-scores[pool]).tolist(), pool.tolist(), self._copy_of[pool].tolist()))
            for _, i, original in ranked:
                if original not in seen:
                    seen.add(original)
                    order.append(i)
            if len(order) >= limit or pool.size == matched.size:
                return order[:limit]
            wanted *= 2


def build_index(
    entries: Iterable[ToolEntry],
    *,
    semantic: bool = False,
    embedder: str | Embedder = DEFAULT_EMBEDDER,
    cache_dir: Path | None = None,
    servers: Mapping[str, str] | None = None,
) -> SearchIndex:
    """BM25 only, or (`semantic`) fused with `embedder`'s similarity, embedded here and now (through the vector
    cache in `cache_dir` when given)."""
    index = SearchIndex(entries, servers=servers)
    if semantic:
        from .semantic import resolve, tool_vectors  # the optional extra is imported only when asked for

        model = resolve(embedder)
        index.use_embeddings(model, tool_vectors(model, index.embedding_texts(), cache_dir))
    return index
