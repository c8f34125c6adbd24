"""The ranking as an ordered list of stages (`PIPELINE`), each a small class reading its weights from the index's
`RankingConfig` and switched off by naming it in the config's `off`.

Every stage reads the analysed `Query` (query.analyze: needs, weighted terms, named tools, deliverable) and the
`Ranking` the stages before it left: the BM25F scores of the whole request and of each need, the combined scores,
the candidates, then the picked positions. BM25F is one strategy among the stages (the first), as in FastMCP's
search transforms; the semantic extra is another (`Embed`, `Fuse`). The order, and what each stage reads, is in
docs/search.md ("How search ranks").
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from .fusion import ScoreArray, fuse_semantic, semantic_weight, with_clauses
from .query import Query
from .semantic import query_vectors

if TYPE_CHECKING:
    from .bm25 import TermsRead
    from .config import RankingConfig
    from .embedders import Embedder, Vectors
    from .names import NameWords as NameWordsIndex

__all__ = ["PIPELINE", "Index", "Ranking", "Stage", "run"]


@dataclass(slots=True)
class Ranking:
    """What the stages pass along, for one query over one index."""

    query: Query
    limit: int
    groups: Sequence[str] | None
    whole: ScoreArray = field(default_factory=lambda: np.zeros(0))
    """BM25F of the whole request, every tool."""
    parts: list[ScoreArray] = field(default_factory=list)
    """BM25F of each need of the request (none for a request of one need)."""
    scores: ScoreArray = field(default_factory=lambda: np.zeros(0))
    candidates: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    similarities: list[ScoreArray] = field(default_factory=list)
    """With the semantic extra: the whole request's similarity to every tool, then each need's."""
    request: npt.NDArray[np.float32] | None = None
    """With the semantic extra: the whole request's vector (what `fit` weighs the closest tools by)."""
    read: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None
    """The whole request's terms as the postings read them (`TermsRead.first`): the fit's evidence reads them too."""
    picked: list[int] = field(default_factory=list)
    delivered: int | None = None
    """The pick that writes the request's named output, if any (`Deliverable`)."""

    @property
    def need_similarities(self) -> list[ScoreArray]:
        return self.similarities[1:]


class Index(Protocol):
    """What the stages read of the index they rank over (`index.SearchIndex` is one): its config, what it built
    once per catalog, and the steps that read its tables."""

    config: RankingConfig
    embedder: Embedder | None
    vectors: Vectors | None
    allowed: npt.NDArray[np.bool_] | None
    """The tools this view of the index may return (None: all)."""
    group_positions: dict[str, npt.NDArray[np.int64]]
    name_words: NameWordsIndex
    rendered_tools: npt.NDArray[np.bool_]
    """Tools with a translated (rendered) text."""

    def scores_of_each(self, terms: Sequence[Mapping[str, float]]) -> tuple[list[ScoreArray], TermsRead]: ...

    def mentioned(self, terms: AbstractSet[str]) -> list[str]: ...

    def in_groups(self, groups: Iterable[str]) -> npt.NDArray[np.bool_]: ...

    def ranked(self, scores: ScoreArray, candidates: npt.NDArray[np.bool_], limit: int) -> list[int]: ...

    def native_first(self, ranked: list[int], named: Collection[int]) -> list[int]: ...

    def with_deliverable(self, ranking: Ranking) -> tuple[list[int], int | None]: ...

    def with_producer(self, ranking: Ranking) -> list[int]: ...


class Stage:
    """One step of the ranking; `name` is what `RankingConfig.off` names to skip it (None: always runs)."""

    name: ClassVar[str | None] = None

    def applies(self, index: Index, ranking: Ranking) -> bool:
        """Whether this stage has anything to do for this query and index (beyond being switched on)."""
        return True

    def run(self, index: Index, ranking: Ranking) -> None:
        raise NotImplementedError


class Lexical(Stage):
    """BM25F of the whole request and of each need (their weighted terms, `Query.terms`, `Query.need_terms`)."""

    def run(self, index: Index, ranking: Ranking) -> None:
        query = ranking.query
        scores, read = index.scores_of_each([query.terms.weights, *(terms.weights for terms in query.need_terms)])
        ranking.whole, *ranking.parts = scores
        ranking.read = read.first()


class Combined(Stage):
    """The scores the boosts below change: the whole request's (a copy: `whole` stays BM25F's)."""

    def run(self, index: Index, ranking: Ranking) -> None:
        ranking.scores = ranking.whole.copy()


class Candidates(Stage):
    """The tools any word of the request reaches (a positive score)."""

    def run(self, index: Index, ranking: Ranking) -> None:
        ranking.candidates = ranking.scores > 0


class Clauses(Stage):
    """Each tool gains `clause_weight` (long tasks: `long_task_clause_weight`) of its best need's score."""

    name = "clauses"

    def run(self, index: Index, ranking: Ranking) -> None:
        config = index.config
        weight = config.long_task_clause_weight if len(ranking.parts) >= config.long_task_clauses else \
            config.clause_weight
        ranking.scores = with_clauses(ranking.scores, ranking.parts, weight)


class GroupBoost(Stage):
    """Tools of a group the request names ("github issues") score `group_boost` more."""

    name = "group_boost"

    def run(self, index: Index, ranking: Ranking) -> None:
        mentioned = index.mentioned(ranking.query.tokens)
        if mentioned:
            ranking.scores[np.concatenate([index.group_positions[group] for group in mentioned])] *= \
                1.0 + index.config.group_boost


class NameWords(Stage):
    """Tools all of whose name words (two or more) the request holds score `name_words_boost` more."""

    name = "name_words"

    def run(self, index: Index, ranking: Ranking) -> None:
        ranking.scores[index.name_words.covering(ranking.query.tokens)] *= 1.0 + index.config.name_words_boost


class Embed(Stage):
    """The semantic extra: the request's and each need's similarity to every tool (one encoder call)."""

    name = "semantic"

    def applies(self, index: Index, ranking: Ranking) -> bool:
        return index.vectors is not None and index.embedder is not None

    def run(self, index: Index, ranking: Ranking) -> None:
        vectors, embedder = index.vectors, index.embedder
        assert vectors is not None and embedder is not None
        # einsum rather than BLAS: a single matrix-vector product gains nothing from BLAS threads, which make it
        # slower and erratic on a busy machine.
        asked = query_vectors(embedder, ranking.query.text, ranking.query.needs)
        ranking.request = asked[0]
        ranking.similarities = list(np.einsum("ij,kj->ki", vectors, asked).astype(np.float64))


class Fuse(Stage):
    """Semantic: z-scores of BM25 and of the similarity, weighted by `semantic_weight` (`long_task_semantic_weight`,
    `unnamed_semantic_weight`), each tool gaining `clause_weight` of its best need's similarity: without it
    MetaTool's two-tool requests lose (docs/search-log.md, "Round 4, second pass")."""

    name = "semantic"

    def applies(self, index: Index, ranking: Ranking) -> bool:
        return bool(ranking.similarities)

    def run(self, index: Index, ranking: Ranking) -> None:
        config = index.config
        # No cosine separates "related" from "unrelated" for static vectors (gibberish reaches 0.45 on MetaTool,
        # where a fifth of the right tools score below 0.2), so every tool is ranked.
        ranking.candidates[:] = True
        named = bool(index.mentioned(ranking.query.tokens))
        weight = semantic_weight(len(ranking.query.needs), config, named=named)
        clause = config.clause_weight if config.on("clauses") else 0.0
        ranking.scores = fuse_semantic(ranking.scores, ranking.similarities[0], weight,
                                       parts=ranking.need_similarities, clause_weight=clause)


class Names(Stage):
    """A tool the request names (exactly, as an identifier, or by a prefix) goes above every relevance score."""

    name = "names"

    def applies(self, index: Index, ranking: Ranking) -> bool:
        return bool(ranking.query.named)

    def run(self, index: Index, ranking: Ranking) -> None:
        # Tiers sit above every relevance score; within a tier, relevance still orders the tools.
        lift = float(np.abs(ranking.scores).max()) * 2 + 1.0
        for position, tier in ranking.query.named.items():
            ranking.scores[position] += tier * lift
            ranking.candidates[position] = True


class Scope(Stage):
    """Only the tools of the groups searched, and those the caller may see."""

    def run(self, index: Index, ranking: Ranking) -> None:
        if ranking.groups is not None:
            ranking.candidates &= index.in_groups(ranking.groups)
        if index.allowed is not None:
            ranking.candidates &= index.allowed


class Pick(Stage):
    """The first `limit` candidates by score; for an English request, each tool found through its English rendering
    moved after a native tool of the same name (`native_first`)."""

    def run(self, index: Index, ranking: Ranking) -> None:
        config, query, limit = index.config, ranking.query, ranking.limit
        if index.rendered_tools.any() and not query.cjk and config.on("native_first"):
            # Twice the limit, so that a tool answering something else can move up past a moved one.
            ranked = index.ranked(ranking.scores, ranking.candidates, 2 * limit)
            ranking.picked = index.native_first(ranked, query.named.keys())[:limit]
        else:
            ranking.picked = index.ranked(ranking.scores, ranking.candidates, limit)


class Deliverable(Stage):
    """A request that names where its result goes gets the best tool for that output after its places, unless a
    pick already writes there (`deliverable_done`)."""

    name = "deliverable"

    def applies(self, index: Index, ranking: Ranking) -> bool:
        return ranking.query.deliverable is not None and ranking.limit >= index.config.min_deliverable_limit

    def run(self, index: Index, ranking: Ranking) -> None:
        ranking.picked, ranking.delivered = index.with_deliverable(ranking)


class Producer(Stage):
    """When one of the `producer_top` best results needs an input another tool of its server produces and none is
    picked, that producer is added after the places."""

    name = "producer"

    def applies(self, index: Index, ranking: Ranking) -> bool:
        return ranking.limit >= index.config.min_deliverable_limit

    def run(self, index: Index, ranking: Ranking) -> None:
        ranking.picked = index.with_producer(ranking)


PIPELINE: tuple[Stage, ...] = (
    Lexical(), Combined(), Clauses(), GroupBoost(), NameWords(), Candidates(), Embed(),
    Fuse(), Names(), Scope(), Pick(), Deliverable(), Producer(),
)
"""The stages, in the order they run."""


def run(index: Index, ranking: Ranking, stages: Sequence[Stage] = PIPELINE) -> Ranking:
    """`ranking` after every stage the index's config leaves on (and that applies to it)."""
    config = index.config
    for stage in stages:
        if (stage.name is None or config.on(stage.name)) and stage.applies(index, ranking):
            stage.run(index, ranking)
    return ranking
