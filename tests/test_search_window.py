"""A long request is read once: by the static embedder beside the encoder when there is one, else within the
encoder's window; shorter ones as before (`embedders.window`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from lazytools.search.embedders import Joined, TransformerEmbedder, embed_finite, embedder_named
from lazytools.search.embedders.window import QUERY_WINDOW, request_vectors
from lazytools.search.query import clauses
from lazytools.search.semantic import MAX_EMBEDDED_NEEDS, _spans, query_vectors

TASKS = Path(__file__).parent.parent / "benchmarks" / "data" / "multiserver" / "queries.jsonl"


def counted_minilm() -> tuple[TransformerEmbedder, list[int]]:
    """The shipped MiniLM, with each pass of its encoder's token count recorded."""
    model = embedder_named("minilm")
    assert isinstance(model, TransformerEmbedder)
    passes: list[int] = []

    def encode(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        passes.extend([int(row.sum()) for row in mask])
        return model._encode(ids, mask)

    counted = TransformerEmbedder(model._tokenizer, encode, dimensions=model.dimensions, name="counted",
                                  fingerprint="counted")
    return counted, passes


def long_request() -> str:
    tasks = [json.loads(line)["query"] for line in TASKS.read_text(encoding="utf-8").splitlines()
             if json.loads(line)["split"] == "long"]
    return "\n".join(tasks[:6])


def test_a_short_request_is_encoded_as_before() -> None:
    model = embedder_named("minilm+wordllama")
    query = "find the weather in Lisbon, then post it on Slack"
    needs = clauses(query)
    assert np.array_equal(query_vectors(model, query, needs), embed_finite(model, [query, *needs]))


def test_a_long_request_is_read_once_within_the_window() -> None:
    model, passes = counted_minilm()
    query = long_request()
    needs = clauses(query)
    assert len(query) > 1000 and len(needs) > 8
    vectors = request_vectors(model, query, needs, _spans(query, needs))
    assert len(passes) == 1 and passes[0] == QUERY_WINDOW  # one pass, cut at the window
    kept = len(vectors) - 1
    assert 1 <= kept < len(needs)  # the needs past the window have no vector
    # The whole is what the encoder gives the request cut at the window ...
    cut = TransformerEmbedder(model._tokenizer, embedder_named("minilm")._encode, dimensions=model.dimensions,
                              name="cut", fingerprint="cut", max_length=QUERY_WINDOW)
    assert float(vectors[0] @ cut.embed([query])[0]) > 0.999
    # ... and each need's vector, pooled from its own tokens, is closer to that need alone than to the others.
    alone = embedder_named("minilm").embed(needs[:kept])
    nearest = np.argmax(vectors[1:] @ alone.T, axis=1)
    assert np.mean(nearest == np.arange(kept)) >= 0.8


def test_the_default_pair_reads_a_long_request_with_its_static_part_alone() -> None:
    counted, passes = counted_minilm()
    static = embedder_named("wordllama")
    pair = Joined([counted, static])
    query = long_request()
    needs = clauses(query)[:MAX_EMBEDDED_NEEDS]
    vectors = request_vectors(pair, query, needs, _spans(query, needs))
    assert passes == []  # no pass of the encoder at all
    assert vectors.shape == (1 + len(needs), pair.dimensions)  # every need has a vector, none is cut at a window
    encoder, table = vectors[:, :counted.dimensions], vectors[:, counted.dimensions:]
    assert not encoder.any()
    assert np.allclose(table, static.embed([query, *needs]), atol=1e-6)  # the static table's own unit vectors
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_short_request_still_goes_through_the_encoder() -> None:
    counted, passes = counted_minilm()
    pair = Joined([counted, embedder_named("wordllama")])
    query = "find the weather in Lisbon, then post it on Slack"
    needs = clauses(query)
    request_vectors(pair, query, needs, _spans(query, needs))
    assert len(passes) == 1 + len(needs)
