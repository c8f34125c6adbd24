"""A long request read once: by the static embedder beside the encoder when there is one, else by one pass of the
sentence encoder over its first tokens, its needs pooled from it.

Encoding a request and each of its needs as separate texts sends every word of a long request through the encoder
twice, and past the model's window the whole text is cut anyway. A request whose texts together stay within
REQUEST_TOKENS is encoded that way (its needs each on their own, in one batch, which ranks best).

A longer one, with a static embedder beside the encoder (`minilm+wordllama`), is read by the static one alone: the
whole request and every need, each a unit vector whose encoder columns are zero. The encoder's cost grows with
every token, and on long requests its pass over the first tokens found no more of the wanted tools than the static
table, which reads every token of the request where the window sees only the first few needs (the figures:
docs/search-log.md, "Round 4e").

With the encoder alone (`minilm`, a model folder) a longer request is read once over its first QUERY_WINDOW tokens:
the whole is the mean of every token's state there, and each need that starts inside the window is the mean of its
own tokens' states (contextual, as the encoder read them in the request). Needs past the window get no vector
(BM25 still scores them), as needs past MAX_EMBEDDED_NEEDS did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .base import Embedder, Vectors, embed_finite, unit_rows
from .transformer import TransformerEmbedder

__all__ = ["QUERY_WINDOW", "REQUEST_TOKENS", "request_vectors"]

QUERY_WINDOW = 128
"""Tokens of a long request the encoder reads: all-MiniLM-L6-v2 was trained on texts of up to 128 tokens (it accepts
256), and its cost grows with every token."""
REQUEST_TOKENS = 256
"""A request whose text and needs' texts are at most this many tokens in all is encoded text by text, as before."""


def request_vectors(embedder: Embedder, text: str, needs: Sequence[str], spans: Sequence[tuple[int, int]]) -> Vectors:
    """The vector of the request `text`, then one per need (`needs`: each need's own text to embed; `spans`: where
    each need lies in `text`, as (start, end) characters). Fewer rows than needs come back when a long request's
    later needs lie past the window; they are always its last needs."""
    parts = _parts(embedder)
    encoders = [part for part in parts if isinstance(part, TransformerEmbedder)]
    texts = [text, *needs]
    if not encoders or sum(encoders[0].tokens(t) for t in texts) <= REQUEST_TOKENS:
        return embed_finite(embedder, texts)
    if len(encoders) < len(parts):
        return _read_statically(parts, texts)
    read = [encoder.token_states(text, QUERY_WINDOW) for encoder in encoders]
    if any(states is None for states in read):
        return embed_finite(embedder, texts)
    kept = min(_inside(offsets, spans) for _, offsets in (states for states in read if states is not None))
    scale = np.float32(1.0 / math.sqrt(len(parts)))
    columns: list[Vectors] = []
    states_of = iter(read)
    for part in parts:
        if isinstance(part, TransformerEmbedder):
            states = next(states_of)
            assert states is not None
            columns.append(_pooled(*states, spans[:kept]))
        else:
            columns.append(embed_finite(part, texts[: kept + 1]))
    joined = np.hstack([column * scale for column in columns]) if len(parts) > 1 else columns[0]
    out = np.asarray(joined, dtype=np.float32)
    out[~np.isfinite(out).all(axis=1)] = 0.0
    return out


def _read_statically(parts: Sequence[Embedder], texts: Sequence[str]) -> Vectors:
    """Every text by the static parts alone, as unit rows of the joined width whose encoders' columns are zero."""
    scale = np.float32(1.0 / math.sqrt(len(parts)))
    columns = [np.zeros((len(texts), part.dimensions), dtype=np.float32) if isinstance(part, TransformerEmbedder)
               else embed_finite(part, texts) * scale for part in parts]
    return unit_rows(np.hstack(columns))


def _parts(embedder: Embedder) -> list[Embedder]:
    parts = getattr(embedder, "parts", None)  # `Joined`, without importing the package that defines it
    return list(parts) if isinstance(parts, list) else [embedder]


def _inside(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> int:
    """How many of `spans`, from the first, start at a character some token in the window covers."""
    end = max((b for a, b in offsets if b > a), default=0)
    kept = 0
    for start, _ in spans:
        if start >= end:
            break
        kept += 1
    return kept


def _pooled(hidden: Vectors, offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> Vectors:
    """Row 0: the mean of every token's state (special tokens included, as mean pooling over the whole text does);
    then per span, the mean of the states of the tokens inside it."""
    rows = [hidden.mean(axis=0)]
    starts = np.array([a for a, _ in offsets])
    ends = np.array([b for _, b in offsets])
    real = ends > starts
    for start, end in spans:
        inside = real & (starts >= start) & (ends <= end)
        rows.append(hidden[inside].mean(axis=0) if inside.any() else np.zeros(hidden.shape[1], dtype=np.float32))
    return unit_rows(np.vstack(rows))
