"""Every weight of the ranking, in one place: `RankingConfig`.

A served index reads its config from `LAZYTOOLS_SEARCH_RANKING` (JSON, or the path of a JSON file; empty: the
defaults below). Tests and the ablation benchmark build a config (`RankingConfig(group_boost=0.0)`,
`RankingConfig(off={"producer"})`) instead of patching a module. Each weight says what it does and where it was
measured; the figures are in docs/search.md and docs/search-log.md.

`off` switches parts of the pipeline off by name: a ranking stage (`STAGES`, in the order they run) or a rule that
makes query terms (`RULES`). Both lists are documented in docs/search.md ("How search ranks").
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ConfigError
from ..safetext import clip

__all__ = ["RULES", "STAGES", "RankingConfig", "ranking_config"]

STAGES: tuple[str, ...] = (
    "clauses",
    "group_boost",
    "name_words",
    "semantic",
    "names",
    "native_first",
    "deliverable",
    "producer",
    "places",
)
"""The ranking stages that can be switched off, in the order they run (BM25F itself always runs)."""

RULES: tuple[str, ...] = (
    "phrasal_verbs",
    "verb_objects",
    "verb_senses",
    "number_senses",
    "asked_senses",
    "questions",
    "typos",
    "completions",
    "short_numbers",
    "crosslang",
    "related",
)
"""The rules that add or weigh a query's terms (`query.analyze`), each reading one table or one reading."""

_FIELD_WEIGHTS = {"name": 3.0, "title": 2.0, "description": 1.0, "parameters": 1.0, "group": 1.0, "english": 0.3}
"""Other weights moved the two dev-set halves in opposite directions, so these stay the plain defaults; `english` at
0.3 finds a Chinese-described tool without Chinese tools crowding English ones out (docs/search-log.md)."""

# Finite: an infinite weight makes every score inf, or (as k1) no search find anything; NaN compares with nothing.
Weight = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
Share = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class RankingConfig(BaseModel):
    """The ranking's weights and switches (frozen: an index holds one, `SearchIndex.configured` gives another)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    off: frozenset[str] = Field(default=frozenset(), description="Stages and rules switched off (STAGES, RULES).")

    # Query terms (query.analyze): each a share of a typed word's weight.
    typo_weight: Weight = Field(default=0.7, description="A typo fix one edit away in the catalog's vocabulary.")
    completion_weight: Weight = Field(default=0.5, description='A completion of a cut-off word ("kube").')
    phrase_weight: Weight = Field(default=0.7, description='Each word an everyday phrase means ("create" for "spin up").')
    number_weight: Weight = Field(default=0.3, description="A short bare number: an amount, not a word of the tool.")
    max_amount_digits: int = Field(default=3, ge=0, description="Longer runs of digits are identifiers and count in full.")
    crosslang_weight: Weight = Field(default=0.7, description="Each English word of a Chinese request's words.")
    related_weight: Weight = Field(default=0.7, description="A related word of similarity s counts this times s squared.")
    max_related: int = Field(default=10, ge=0, description="Related words a query word brings at most (the closest).")
    max_terms_to_correct: int = Field(default=4, ge=0, description="Only queries of at most this many terms get typo fixes.")

    # BM25F and its boosts.
    # Read when an index is built (as bm25s' constructor reads k1 and b); `configured` keeps the index's own.
    bm25_k1: Weight = Field(default=2.0, gt=0.0, description="BM25F's term-frequency saturation.")
    bm25_b: Share = Field(default=0.75, description="BM25F's length normalisation, each field by its own length.")
    field_weights: dict[str, Weight] = Field(
        default_factory=lambda: dict(_FIELD_WEIGHTS),
        description="Each field's weight in BM25F; `english` is a Chinese-described tool's English rendering.")
    clause_weight: Weight = Field(default=0.3, description="A tool gains this times its best need's score (scaled).")
    long_task_clauses: int = Field(default=4, ge=2, description="A task of this many needs or more is a long task.")
    long_task_clause_weight: Weight = Field(default=0.6, description="clause_weight for a long task.")
    group_boost: Weight = Field(default=0.5, description="Tools of a group the query names score this share more.")
    name_words_boost: Weight = Field(default=0.5, description="Tools all of whose name words the query holds score more.")

    # The semantic extra.
    semantic_weight: Share = Field(default=0.6, description="The embedding similarity's share of the fused score.")
    long_task_semantic_weight: Share = Field(default=0.45, description="At most this share for a long task.")
    unnamed_semantic_weight: Share = Field(
        default=0.7, description="The share for a shorter request that names no group (scaled as to semantic_weight).")


    # Places after the ranking: the deliverable's writer and a prerequisite's producer.
    deliverable_done: Share = Field(default=0.5, description="A writing pick at this share of the best writer does it.")
    min_deliverable_limit: int = Field(default=3, ge=1, description="Below this limit no writer or producer is added.")
    producer_top: int = Field(default=2, ge=0, description="A producer is added for one of this many best results.")
    places_per_need: int = Field(
        default=1, ge=0, description="Each need past the first adds this many places to a search the model gives no "
                                     "limit (at most LAZYTOOLS_SEARCH_MAX_LIMIT).")

    @field_validator("off")
    @classmethod
    def _known(cls, value: frozenset[str]) -> frozenset[str]:
        unknown = sorted(value - set(STAGES) - set(RULES))
        if unknown:
            raise ValueError(f"unknown stages or rules: {', '.join(unknown)} (stages: {', '.join(STAGES)}; rules: "
                             f"{', '.join(RULES)})")
        return value

    @field_validator("field_weights")
    @classmethod
    def _fields(cls, value: dict[str, float]) -> dict[str, float]:
        if set(value) - set(_FIELD_WEIGHTS):
            raise ValueError(f"the fields are {', '.join(_FIELD_WEIGHTS)}")
        return {**_FIELD_WEIGHTS, **value}  # a field left out keeps its default

    def on(self, name: str) -> bool:
        """Whether the stage or rule `name` runs."""
        return name not in self.off

    def without(self, *names: str) -> RankingConfig:
        """This config with `names` switched off as well."""
        return self.model_copy(update={"off": self.off | frozenset(names)})


DEFAULT = RankingConfig()


def ranking_config(value: str) -> RankingConfig:
    """The config a setting gives: empty for the defaults, JSON (`{"group_boost": 0.3, "off": ["producer"]}`), or
    the path of a file holding such JSON."""
    text = value.strip()
    if not text:
        return DEFAULT
    if not text.startswith("{"):
        text = _read_config_file(Path(text).expanduser())
    return RankingConfig.model_validate_json(text)


MAX_CONFIG_BYTES = 1 << 20
"""A ranking config file larger than this is refused unread (a config is a few hundred bytes)."""


def _read_config_file(path: Path) -> str:
    """A regular file of at most MAX_CONFIG_BYTES: a FIFO would block the start for ever, /dev/zero fill memory."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{path} is not a regular file")
    if info.st_size > MAX_CONFIG_BYTES:
        raise OSError(f"{path} is over {MAX_CONFIG_BYTES} bytes ({info.st_size})")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # swapped for a FIFO after the check: no wait
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise OSError(f"{path} is over {MAX_CONFIG_BYTES} bytes")
    return data.decode("utf-8")


def configured_ranking(value: str) -> RankingConfig:
    """LAZYTOOLS_SEARCH_RANKING read, or a ConfigError saying what is wrong with it (the server, `lazytools search`
    and `lazytools eval` all rank with it)."""
    try:
        return ranking_config(value)
    except ValidationError as exc:
        raise ConfigError(f"LAZYTOOLS_SEARCH_RANKING: {clip(_one_line(exc), 600)}") from None
    except (OSError, ValueError) as exc:  # a bad UTF-8 byte is a ValueError
        raise ConfigError(f"LAZYTOOLS_SEARCH_RANKING: {clip(str(exc), 600)}") from exc


def _one_line(exc: ValidationError) -> str:
    """Each problem as `field NAME: why`, on one line (pydantic's own text takes several)."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        why = error["msg"].removeprefix("Value error, ")
        problems.append(f"field {where}: {why}" if where else why)
    return "; ".join(problems)
