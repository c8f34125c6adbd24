"""Static word embeddings for the optional semantic search (`pip install 'lazytools[semantic]'`).

A text's vector is the mean of its tokens' vectors in a fixed table: no model runs, so embedding a query takes
well under a millisecond on the CPU and nothing is downloaded. The default table is WordLlama's `l2_supercat`
(256 dimensions, 32,000 tokens), whose weights ship inside the `wordllama` wheel. Only its files are used:
importing `wordllama` itself configures the root logger, and its loader looks for the tokenizer under
`tokenizer/` while the wheel installs it under `tokenizers/`, so the two files are opened here by path.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError

__all__ = ["WORDLLAMA_EXTRA", "StaticEmbedder", "default_embedder", "load_wordllama"]

logger = logging.getLogger("lazytools.search")

WORDLLAMA_EXTRA = "pip install 'lazytools[semantic]'"
_WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
_TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"

Vectors = npt.NDArray[np.float32]


class StaticEmbedder:
    """Texts to unit vectors: the mean of the table rows of their tokens (a zero vector for no tokens)."""

    def __init__(self, table: npt.ArrayLike, encode: Callable[[str], Sequence[int]], *, name: str = "custom") -> None:
        self.table: Vectors = np.ascontiguousarray(np.asarray(table, dtype=np.float32))
        if self.table.ndim != 2 or self.table.shape[0] == 0:
            raise ValueError("an embedding table needs shape (tokens, dimensions)")
        self._encode = encode
        self.name = name

    @property
    def dimensions(self) -> int:
        return int(self.table.shape[1])

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        last = self.table.shape[0] - 1
        for row, text in enumerate(texts):
            ids = [i for i in self._encode(text) if 0 <= i <= last]
            if ids:
                out[row] = self.table[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def _wordllama_dir() -> Path:
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"Semantic search needs the optional extra: {WORDLLAMA_EXTRA}")
    return Path(next(iter(spec.submodule_search_locations)))


def load_wordllama(package_dir: Path | None = None) -> StaticEmbedder:
    """WordLlama's table and tokenizer, read from the installed wheel (or `package_dir`) without a download."""
    try:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ConfigError(f"Semantic search needs the optional extra: {WORDLLAMA_EXTRA}") from exc
    root = package_dir if package_dir is not None else _wordllama_dir()
    weights, tokenizer_file = root / _WEIGHTS, root / _TOKENIZER
    for path in (weights, tokenizer_file):
        if not path.is_file():
            raise ConfigError(f"Semantic search: {path} is missing; reinstall with {WORDLLAMA_EXTRA}")
    table = load_file(str(weights))["embedding.weight"]
    tokenizer = Tokenizer.from_file(str(tokenizer_file))

    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False).ids)

    logger.info("semantic search: WordLlama l2_supercat, %d tokens x %d dimensions", *table.shape)
    return StaticEmbedder(table, encode, name="wordllama-l2_supercat-256")


_default: StaticEmbedder | None = None
_lock = threading.Lock()


def default_embedder() -> StaticEmbedder:
    """The WordLlama embedder, loaded once per process (about 16 MB of weights)."""
    global _default
    with _lock:
        if _default is None:
            _default = load_wordllama()
        return _default
