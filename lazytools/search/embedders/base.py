"""What every embedder is: texts in, unit vectors out, and a fingerprint that names the exact weights."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError
from ...safetext import clip

__all__ = ["EMBED_BATCH", "Embedder", "EmbeddingStopped", "Vectors", "embed_batches", "embed_finite", "model_file",
           "unit_rows"]

logger = logging.getLogger("lazytools.search")

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to float32 unit vectors (a zero row for a text with nothing to embed).

    `fingerprint` changes whenever the vectors would: the on-disk cache of tool vectors is keyed by it."""

    name: str
    fingerprint: str

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def unit_rows(vectors: npt.ArrayLike) -> Vectors:
    """Rows scaled to length 1, as float32; all-zero rows stay zero (no NaN)."""
    out: Vectors = np.array(vectors, dtype=np.float32, copy=True)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out


_warned: set[str] = set()


def embed_finite(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """`embedder.embed(texts)`, every row holding NaN or infinity zeroed: vectors reach the index only this way.

    One such row would make a cosine NaN, and one NaN score hid every match of every later search. A zero row is
    what a text with nothing to embed already gets (BM25 alone answers for it), so one odd text (an overflow in a
    half-precision export) costs that text its meaning, not the whole catalog; a model broken for every text loses
    its semantic part and says so, once per model, in the log."""
    vectors = embedder.embed(texts)
    bad = ~np.isfinite(vectors).all(axis=1)
    if bad.any():
        if embedder.fingerprint not in _warned:
            _warned.add(embedder.fingerprint)
            first = texts[int(np.argmax(bad))]
            logger.warning("embedder %s gave NaN or infinite values for %d of %d texts (the first: %s); those "
                           "are left to BM25", embedder.name, int(bad.sum()), len(texts), repr(clip(first, 60)))
        vectors = vectors.copy()
        vectors[bad] = 0.0
    return vectors


EMBED_BATCH = 32
"""Texts embedded per call by `embed_batches`: a batch of tool descriptions takes a transformer a fraction of a
second on one core, so a stop asked for between batches is seen that soon."""


class EmbeddingStopped(Exception):
    """Embedding a catalog was asked to stop (the process is ending) before every text had its vector."""


def embed_batches(embedder: Embedder, texts: Sequence[str], stop: threading.Event | None = None,
                  progress: Callable[[int, int], None] | None = None) -> Vectors:
    """`embed_finite` over `texts`, EMBED_BATCH at a time; once `stop` is set, the rows embedded so far (fewer
    rows than texts: the caller can tell, and keep them). `progress(done, total)` hears before the first batch and
    after each."""
    done: list[Vectors] = []
    if progress is not None and texts:
        progress(0, len(texts))
    for start in range(0, len(texts), EMBED_BATCH):
        if stop is not None and stop.is_set():
            break
        done.append(embed_finite(embedder, texts[start:start + EMBED_BATCH]))
        if progress is not None:
            progress(start + len(done[-1]), len(texts))
    if not done:
        return np.zeros((0, embedder.dimensions), dtype=np.float32)
    joined: Vectors = np.vstack(done).astype(np.float32, copy=False)
    return joined


@contextmanager
def model_file(path: Path) -> Iterator[None]:
    """Reading a model's file: what the libraries raise for a damaged one (tokenizers a bare Exception, safetensors
    and onnxruntime their own types) becomes a ConfigError naming the file, for one line in the shell."""
    try:
        yield
    except ConfigError:
        raise
    except Exception as exc:
        reason = clip(str(exc) or type(exc).__name__, 160)
        raise ConfigError(f"{path} is not a model file lazytools can read ({reason}); replace it, or choose another "
                          "--embedder / LAZYTOOLS_EMBEDDER") from exc
