"""The search index over a catalog snapshot: which tools answer a query, best first.

The index holds what is built once per catalog (BM25F postings, the vocabulary and its typo table, names, servers,
producers, copies, vectors) and its `RankingConfig`; a query is analysed once (`analyze` -> `query.Query`) and
ranked by the stages of `stages.PIPELINE`, in order: BM25F of the request and of each need, the needs' share, the group and name-words boosts, the semantic extra, named tools first, the scope,
the places by score, then a deliverable's writer and a prerequisite's producer after the places (docs/search.md,
"The pipeline"). `configured` gives the same index ranking with another config.

No place is reserved for the best tool of each separate need (it lost recall as served, docs/search-log.md); a
request of several needs gets more places instead (`places`).
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..entry import ToolEntry
from .analysis import tokenize
from .bm25 import BM25FPostings, TermsRead
from .config import DEFAULT, RankingConfig
from .documents import RENDERED_FIELDS, catalog_name_terms, catalog_terms, embedding_text, known_words
from .embedders import DEFAULT_EMBEDDER, embed_finite
from .fit import DEFAULT_FIT, Yardsticks, evidence_of, yardsticks
from .fusion import ScoreArray
from .inputs import MAX_PRODUCERS
from .names import NameMatcher, NameWords
from .needs import answered_needs
from .query import Cost, Lexicon, Query, TermReader, analyze, catalog_expansions, cost_of, tagged_terms
from .recent import RecentAnswers
from .related import RelatedWords, default_related_words
from .results import Hit, Results
from .segments import Segment, assemble, catalog_segments
from .stages import Ranking, run
from .vocabulary import Vocabulary

if TYPE_CHECKING:
    from .embedders import Embedder, Vectors

__all__ = ["SearchIndex", "build_index"]


RECENT_QUERIES = 256
"""Answers an index keeps for queries asked again (the same request from many clients, a client's retry): the
same results at the cost of a lookup."""


class SearchIndex:
    """Name matches, BM25 with query expansion, group boost and optional embedding fusion, over some tools."""

    def __init__(
        self,
        entries: Iterable[ToolEntry],
        *,
        embedder: Embedder | None = None,
        semantic_weight: float | None = None,
        related: RelatedWords | None = None,
        config: RankingConfig = DEFAULT,
        segments: Sequence[Segment] | None = None,
    ) -> None:
        """`related` is the related-words table queries are expanded with (None: the shipped one; an empty
        `RelatedWords({})` turns expansion off); `config`: the ranking's weights and switches (`semantic_weight`,
        when given, replaces its own); `segments`: what each group's tools give the index, when already read
        (`segments.catalog_segments`: a live index keeps them between builds)."""
        if semantic_weight is not None:
            config = config.model_copy(update={"semantic_weight": semantic_weight})
        self.config = config
        self.entries: list[ToolEntry] = list(entries)
        parts = assemble(self.entries, catalog_segments(self.entries) if segments is None else segments)
        words = parts.words
        known = known_words(words)
        documents = catalog_terms(words, known)
        self._bm25 = BM25FPostings(documents, config.field_weights, k1=config.bm25_k1, b=config.bm25_b,
                                   apart=RENDERED_FIELDS)
        # Words only a translation holds are matched when typed (or translated), never reached by a typo fix or a
        # related word: an English request does not drift into a Chinese tool through words nobody typed.
        self._rendered = self._bm25.rendered_only
        self.vocabulary = Vocabulary([term for term in self._bm25.vocabulary if term not in self._rendered])
        table = default_related_words() if related is None else related
        self._expansions = catalog_expansions(table, self.vocabulary, weight=config.related_weight,
                                              most=config.max_related)
        self._words = table
        self._names = NameMatcher([(e.name, e.upstream_name or e.name) for e in self.entries])
        self._lexicon = Lexicon(self.vocabulary, self._expansions, self._rendered, self._words, self._names)
        self._analyzed: RecentAnswers[Query] = RecentAnswers(RECENT_QUERIES)
        self._reader = TermReader(self._lexicon, config)
        name_keys = catalog_name_terms(words, known)
        self.name_words = NameWords(name_keys)
        self._name_keys = name_keys
        self._groups = np.array([entry.group for entry in self.entries], dtype=object)
        self.group_positions = {group: np.asarray(held, dtype=np.int64) for group, held in parts.positions.items()}
        group_names = set(self._groups.tolist())
        self._group_terms = {group: frozenset(terms) for group in group_names if (terms := tokenize(group))}
        # Each group under one of its name's terms: a query looks up its own few terms, not every group (a
        # gateway of many servers has hundreds).
        self._groups_by_term: dict[str, list[tuple[str, frozenset[str]]]] = {}
        for group, group_terms in self._group_terms.items():
            self._groups_by_term.setdefault(min(group_terms), []).append((group, group_terms))
        self._positions = {entry.name: position for position, entry in enumerate(self.entries)}
        self._producers = parts.producers
        self._copy_of = np.array(parts.copies, dtype=np.int64)
        self._writes = parts.writes
        self.rendered_tools = np.array([bool(entry_words["english"]) for entry_words in words], dtype=bool)
        self.allowed: npt.NDArray[np.bool_] | None = None
        self._recent: RecentAnswers[Results] = RecentAnswers(RECENT_QUERIES)
        self.embedder: Embedder | None = None
        self.vectors: Vectors | None = None
        self._yardsticks = Yardsticks()
        """What the fit evidence compares a request with besides these tools (`fit.yardsticks`), with the vectors."""
        if embedder is not None:
            self.use_embeddings(embedder, embed_finite(embedder, self.embedding_texts()))

    def __len__(self) -> int:
        return len(self.entries)

    def restricted(self, allowed: Callable[[ToolEntry], bool]) -> SearchIndex:
        """This index, finding and suggesting only the tools `allowed` accepts (what one principal may call).
        The scores are those of the whole index, so an allowed tool ranks as it would for everyone."""
        view = copy.copy(self)
        view.allowed = np.fromiter((allowed(entry) for entry in self.entries), dtype=bool, count=len(self.entries))
        view._recent = RecentAnswers(RECENT_QUERIES)  # its answers are not the whole index's
        return view

    def configured(self, config: RankingConfig) -> SearchIndex:
        """This index, ranking with `config` (built once, ranked many ways: the ablation benchmark, tests). The
        weights read when an index is built (`bm25_k1`, `related_weight`) are this index's own."""
        view = copy.copy(self)
        view.config = config
        view._recent = RecentAnswers(RECENT_QUERIES)
        view._analyzed = RecentAnswers(RECENT_QUERIES)
        view._reader = TermReader(view._lexicon, config)
        return view

    @property
    def semantic(self) -> bool:
        return self.vectors is not None

    def embedding_texts(self) -> list[str]:
        return [embedding_text(entry) for entry in self.entries]

    def measure_yardsticks(self) -> None:
        """Every yardstick of the fit evidence (`fit.yardsticks`), whether the shipped rule reads it or not."""
        if self.embedder is not None and self.vectors is not None:
            self._yardsticks = yardsticks(self.embedder, self.vectors, DEFAULT_FIT, every=True)
            self._recent.clear()

    def use_embeddings(self, embedder: Embedder, vectors: Vectors) -> None:
        """Fuse `embedder`'s similarity from now on; `vectors` are those of `embedding_texts()`, in order.
        Safe while other threads search: the embedder is set before the vectors that switch fusion on."""
        if vectors.shape != (len(self.entries), embedder.dimensions):
            raise ValueError(f"{vectors.shape} vectors for {len(self.entries)} tools of {embedder.dimensions}")
        self._yardsticks = yardsticks(embedder, vectors, DEFAULT_FIT)
        self.embedder = embedder
        self.vectors = vectors
        self._recent.clear()  # answers given by BM25 alone (a search running now keys its answer as such)

    def query_terms(self, query: str) -> dict[str, float]:
        """The weighted index terms `query` is scored with (its words, phrases, corrections, completions and
        related words)."""
        return tagged_terms(query, self._lexicon, self.config, self._reader).weights

    def analyze(self, text: str) -> Query:
        """`text` analysed for this catalog (query.analyze), once: the last RECENT_QUERIES are kept, so the
        selection, the index and the server read one analysis."""
        known = self._analyzed.get(text)
        if known is None:
            known = analyze(text, self._lexicon, self.config, self._reader)
            self._analyzed.put(text, known)
        return known

    def cost(self, text: str) -> Cost:
        """What searching `text` here costs (`Cost.quick`: whether it may run on the event loop), read from the
        text alone: no rule runs."""
        cost = cost_of(text)
        return Cost(cost.chars, cost.words, cost.needs, cost.cjk, tools=len(self.entries), encoded=self.semantic,
                    prepared=self.vocabulary.prepared)

    def mentioned(self, terms: AbstractSet[str]) -> list[str]:
        """The groups a query with these terms names ("post it on Slack", "github issues"): all of a group
        name's words."""
        by_term = self._groups_by_term
        return [group for term in terms for group, group_terms in by_term.get(term, ()) if group_terms <= terms]

    def _bm25_scores(self, query: str) -> ScoreArray:
        return self._bm25.scores(self.query_terms(query))

    def scores_of_each(self, terms: Sequence[Mapping[str, float]]) -> tuple[list[ScoreArray], TermsRead]:
        """BM25F of each of `terms` (a request's needs), in one pass over their postings, and the terms as read."""
        read = self._bm25.read(terms)
        return list(self._bm25.scores_read(read)), read

    def search(self, query: str, *, limit: int = 5, groups: Sequence[str] | None = None) -> list[Hit]:
        """Tools matching `query`, best first; `groups` restricts them to those groups."""
        return self.find(query, limit=limit, groups=groups).hits

    def find(
        self, query: str, *, limit: int = 5, groups: Sequence[str] | None = None, needs: bool | None = None
    ) -> Results:
        """`search`'s hits, and for a request of several needs how well the hits answer each (see `needs`):
        by default only with embeddings, since without them no need is ever named (`needs=True` measures them
        anyway, for the benchmark that shows why). The answers to the last RECENT_QUERIES queries are kept."""
        key = (query, limit, None if groups is None else tuple(groups), needs, self.vectors is not None)
        known = self._recent.get(key)
        if known is None:
            known = self._find(query, limit=limit, groups=groups, needs=needs)
            self._recent.put(key, known)
        return Results(list(known.hits), known.needs, known.evidence)  # a caller may reorder its list, not the one kept

    def _find(self, text: str, *, limit: int, groups: Sequence[str] | None, needs: bool | None) -> Results:
        if not self.entries or limit <= 0:
            return Results([])
        query = self.analyze(text)
        ranking = run(self, Ranking(query, limit, groups))
        picked = ranking.picked
        hits = [Hit(self.entries[i], float(ranking.scores[i])) for i in picked]
        embedder = self.embedder if ranking.request is not None else None
        evidence = evidence_of(self._bm25, query.terms.weights, picked[0], ranking.candidates, self.vectors,
                               ranking.request, named=bool(query.named),
                               embedder=embedder.name if embedder is not None else None,
                               floors=self._yardsticks.floors, outside=self._yardsticks.outside,
                               words=query.cost.words, read=ranking.read,
                               language=query.language) if picked else None
        measured = bool(ranking.need_similarities) if needs is None else needs
        if not measured:
            return Results(hits, evidence=evidence)
        return Results(hits, answered_needs(list(query.needs), ranking.parts, ranking.need_similarities, picked),
                       evidence)

    def native_first(self, ranked: list[int], named: Collection[int]) -> list[int]:
        """`ranked` (for a request in English) with each tool described in another language whose name says what
        the name of a tool described in English among them says (Baidu's map_geocode beside Google's
        maps_geocode) moved after the others: found through its rendering, it would take a place from a tool that
        answers something else. A tool the request names (`named` positions) never moves."""
        keys = self._name_keys
        native = {keys[i] for i in ranked if not self.rendered_tools[i] and keys[i]}
        moved = [i for i in ranked if self.rendered_tools[i] and keys[i] in native and i not in named]
        return [i for i in ranked if i not in moved] + moved if moved else ranked


    def with_deliverable(self, ranking: Ranking) -> tuple[list[int], int | None]:
        """The picks with the best tool of the deliverable the query names (see `steps`) after them, unless a pick
        is that tool (or a copy of it) or already writes there: a writing tool (by its name) that scores at least
        `deliverable_done` of the best for the deliverable; and the pick that answers the deliverable, if any. It
        takes no place from the ranking: the limit's places stay the ranking's."""
        picked, text = ranking.picked, ranking.query.deliverable
        assert text is not None
        step_scores = np.where(ranking.candidates, self._bm25_scores(text), 0.0)
        best = int(np.argmax(step_scores))
        if step_scores[best] <= 0:
            return picked, None
        copy = next((i for i in picked if int(self._copy_of[i]) == int(self._copy_of[best])), None)
        if copy is not None:
            return picked, copy
        done = self.config.deliverable_done
        if any(self._writes[i] and step_scores[i] >= done * step_scores[best] for i in picked):
            return picked, None
        return [*picked, best], best

    def with_producer(self, ranking: Ranking) -> list[int]:
        """The picks with the first producer of the first of their `producer_top` best tools that needs one and has
        none picked (`list_channels` for `post_message`, a geocoder for a forecast) after them: those tools cannot
        be called without it. The producer need not match the request's words ("the weather in Lisbon" names no
        geocoder), only be in the `groups` searched and allowed to the caller; it comes before the tool added for
        the request's named output. It takes no place from the ranking. A result whose action a better result
        already does without a producer brings none (`_callable_above`)."""
        picked, groups, keep = ranking.picked, ranking.groups, ranking.delivered
        for rank, i in enumerate(picked[: self.config.producer_top]):
            producers = self._producers[i]
            if producers and self._callable_above(i, picked[:rank]):
                continue
            if producers and not set(producers) & set(picked):
                wanted = producers[0]
                outside = groups is not None and self._groups[wanted] not in groups
                if outside or (self.allowed is not None and not self.allowed[wanted]):
                    return picked
                if keep is not None and picked[-1] == keep and len(picked) > ranking.limit:
                    return [*picked[:-1], wanted, keep]  # the writer added after the places stays last
                return [*picked, wanted]
        return picked

    def places(self, query: str, limit: int, most: int) -> int:
        """The places a search of `query` gets when the model gives no limit: `limit`, and `places_per_need` more
        for each need past the first (`Query.needs`), at most `most` (LAZYTOOLS_SEARCH_MAX_LIMIT)."""
        if not self.config.on("places") or not query:
            return limit
        needs = len(self.analyze(query).needs)
        return max(limit, min(most, limit + self.config.places_per_need * max(0, needs - 1)))

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
                if self.allowed is not None and not self.allowed[other]:
                    continue
                if producer.name not in names and len(suggested) < limit:
                    names.add(producer.name)
                    suggested.append(producer)
        return suggested

    def in_groups(self, groups: Iterable[str]) -> npt.NDArray[np.bool_]:
        inside = np.zeros(len(self.entries), dtype=bool)
        for group in groups:
            positions = self.group_positions.get(group)
            if positions is not None:
                inside[positions] = True
        return inside

    def ranked(self, scores: ScoreArray, candidates: npt.NDArray[np.bool_], limit: int) -> list[int]:
        """Positions of the `limit` best candidates, best first, a tool listed twice by its server only once."""
        matched = np.flatnonzero(candidates)
        negated = -scores[matched]  # gathered once, for every pass over thousands of candidates below
        # Copies sit next to each other in the ranking, so twice the limit almost always holds `limit` originals.
        wanted = 2 * limit
        while True:
            pool = matched
            if matched.size > wanted:
                # The `wanted` best; among tools tied with the last of them, the first in catalog order (`matched`
                # is in that order), so that a larger limit only adds results after these.
                threshold = _smallest(negated, wanted)
                above = matched[negated < threshold]
                tied = matched[negated == threshold][: wanted - above.size]
                pool = np.concatenate([above, tied])
            order: list[int] = []
            seen: set[int] = set()
            # As Python numbers, read once: indexing numpy per item is slow next to a search's other work.
            # Sorted by (-score, position): equal scores keep catalog order, so results are deterministic.
            ranked = sorted(zip((-scores[pool]).tolist(), pool.tolist(), self._copy_of[pool].tolist()))
            for _, i, original in ranked:
                if original not in seen:
                    seen.add(original)
                    order.append(i)
            if len(order) >= limit or pool.size == matched.size:
                return order[:limit]
            wanted *= 2


SAMPLE_STRIDE = 8
"""`_smallest` first selects among every SAMPLE_STRIDE-th value: a threshold that leaves far fewer values to select
among (a catalog of 10,000 tools has thousands of candidates, and numpy's selection over all of them cost more
than the rest of the ranking)."""


def _smallest(values: npt.NDArray[np.float64], count: int) -> float:
    """The `count`-th smallest of `values` (as `np.partition(values, count - 1)[count - 1]`, ties counted). The
    `count`-th smallest of every SAMPLE_STRIDE-th value is at least it, and at least `count` values are at most that
    bound: the answer is among them."""
    if values.size > 2 * SAMPLE_STRIDE * count:
        bound = np.partition(values[::SAMPLE_STRIDE], count - 1)[count - 1]
        below = values[values <= bound]
        if below.size >= count:  # always, but for values that do not compare (NaN)
            values = below
    return float(np.partition(values, count - 1)[count - 1])


def build_index(
    entries: Iterable[ToolEntry],
    *,
    semantic: bool = False,
    embedder: str | Embedder = DEFAULT_EMBEDDER,
    cache_dir: Path | None = None,
    config: RankingConfig = DEFAULT,
) -> SearchIndex:
    """BM25 only, or (`semantic`) fused with `embedder`'s similarity, embedded here and now (through the vector
    cache in `cache_dir` when given)."""
    index = SearchIndex(entries, config=config)
    if semantic:
        from .semantic import made_outside, resolve, tool_vectors  # the optional extra, imported only when asked for

        model = resolve(embedder)
        vectors = tool_vectors(model, index.embedding_texts(), cache_dir)
        made_outside(model, cache_dir)
        index.use_embeddings(model, vectors)
    return index
