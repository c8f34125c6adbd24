"""Static embeddings: a text's vector is the mean of its tokens' rows in a fixed table (WordLlama, model2vec).

No model runs, so embedding a query takes well under a millisecond on the CPU. WordLlama's `l2_supercat` table
(256 dimensions, 32,000 tokens) ships inside the `wordllama` wheel. Only its files are used: importing
`wordllama` itself configures the root logger, and its loader looks for the tokenizer under `tokenizer/` while
the wheel installs it under `tokenizers/`, so the two files are opened here by path. A model2vec folder
(`tokenizer.json` + `model.safetensors` holding `embeddings`) loads the same way.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError
from ...safetext import encodable
from .base import Vectors, model_file, unit_rows

__all__ = ["SEMANTIC_EXTRA", "StaticEmbedder", "load_model2vec", "load_wordllama"]

logger = logging.getLogger("lazytools.search")



def _install_hint() -> str:
    """The command that installs the extra into the environment running now (whatever venv that is), from the
    clone this package was installed from when it is one (an editable install)."""
    python = shlex.quote(sys.executable or "python3")
    clone = Path(__file__).resolve().parents[3]
    if (clone / "pyproject.toml").is_file():
        return f"{python} -m pip install -e {shlex.quote(f'{clone}[semantic]')}"
    return f"from the lazytools clone, {python} -m pip install -e '.[semantic]'"


SEMANTIC_EXTRA = _install_hint()
"""How to install the extra. A bare `pip install 'lazytools[semantic]'` would fetch an unrelated package of that
name from PyPI, and another venv's pip would install it where this lazytools never looks."""
_WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
_TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"


class StaticEmbedder:
    """Texts to unit vectors: the mean of the table rows of their tokens (a zero vector for no tokens)."""

    def __init__(
        self,
        table: npt.ArrayLike,
        encode: Callable[[str], Sequence[int]],
        *,
        name: str = "custom",
        fingerprint: str | None = None,
    ) -> None:
        self.table: Vectors = np.ascontiguousarray(np.asarray(table, dtype=np.float32))
        if self.table.ndim != 2 or self.table.shape[0] == 0:
            raise ValueError("an embedding table needs shape (tokens, dimensions)")
        self._encode = encode
        self.name = name
        self.fingerprint = fingerprint or f"{name}-{hashlib.sha256(self.table.tobytes()).hexdigest()[:16]}"

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
        return unit_rows(out)


def _package_dir(module: str, extra: str) -> Path:
    """Where an installed package's files are, found without importing it (imports may print or log)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"Semantic search needs the optional extra: {extra}")
    return Path(next(iter(spec.submodule_search_locations)))


def _check_extra() -> None:
    if importlib.util.find_spec("safetensors") is None or importlib.util.find_spec("tokenizers") is None:
        raise ConfigError(f"Semantic search needs the optional extra: {SEMANTIC_EXTRA}")


def load_wordllama(package_dir: Path | None = None) -> StaticEmbedder:
    """WordLlama's table and tokenizer, read from the installed wheel (or `package_dir`) without a download."""
    _check_extra()
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    root = package_dir if package_dir is not None else _package_dir("wordllama", SEMANTIC_EXTRA)
    weights, tokenizer_file = root / _WEIGHTS, root / _TOKENIZER
    for path in (weights, tokenizer_file):
        if not path.is_file():
            raise ConfigError(f"Semantic search: {path} is missing; reinstall with {SEMANTIC_EXTRA}")
    table = load_file(str(weights))["embedding.weight"]
    tokenizer = Tokenizer.from_file(str(tokenizer_file))

    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(encodable(text), add_special_tokens=False).ids)

    logger.info("semantic search: WordLlama l2_supercat, %d tokens x %d dimensions", *table.shape)
    # The wheel's version and the table's size name its weights (a wheel's files never change under one version)
    # without hashing 30 MB at every start.
    fingerprint = f"wordllama-l2_supercat-256-{_installed_version('wordllama')}-{weights.stat().st_size}"
    return StaticEmbedder(table, encode, name="wordllama", fingerprint=fingerprint)


def _installed_version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unpackaged"  # a folder given by path: its size still tells tables apart


def load_model2vec(folder: Path) -> StaticEmbedder:
    """A model2vec folder: `tokenizer.json` and `model.safetensors` with an `embeddings` table (mean, then unit)."""
    _check_extra()
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    with model_file(folder / "model.safetensors"):
        tensors = load_file(str(folder / "model.safetensors"))
    if "embeddings" not in tensors or tensors["embeddings"].ndim != 2:
        raise ConfigError(f"{folder}: model.safetensors has no 2-D 'embeddings' table (not a model2vec folder)")
    with model_file(folder / "tokenizer.json"):
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    table = tensors["embeddings"].astype(np.float32)
    if "weights" in tensors and tensors["weights"].shape == (table.shape[0],):
        table = table * tensors["weights"].astype(np.float32)[:, None]  # per-token weights of newer versions

    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(encodable(text), add_special_tokens=False).ids)

    logger.info("semantic search: static table from %s, %d tokens x %d dimensions", folder, *table.shape)
    return StaticEmbedder(table, encode, name=f"model2vec:{folder.name}")
