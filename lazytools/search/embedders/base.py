"""What every embedder is: texts in, unit vectors out, and a fingerprint that names the exact weights."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Vectors", "unit_rows"]

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
