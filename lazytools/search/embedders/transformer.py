"""Sentence encoders: a BERT-style transformer, mean-pooled and normalised (all-MiniLM-L6-v2 and its kind).

A model is a folder in the sentence-transformers layout: `tokenizer.json`, `config.json`, and the weights as
`onnx/model.onnx` (or `model.onnx`, run with onnxruntime) or `model.safetensors` (run here in numpy);
`1_Pooling/config.json` and `sentence_bert_config.json` are read when present. The ONNX graph may return the
last hidden states (pooled here) or a pooled sentence vector. Texts are embedded in batches of similar length,
so that padding costs little, and truncated to the model's maximum length.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError
from ...safetext import encodable
from .base import Vectors, model_file, unit_rows
from .static import SEMANTIC_EXTRA

__all__ = ["BertNumpy", "OnnxEncoder", "TransformerEmbedder", "load_transformer"]

logger = logging.getLogger("lazytools.search")

Ids = npt.NDArray[np.int64]
Encode = Callable[[Ids, Ids], Vectors]
"""(token ids, attention mask), both (batch, length) -> hidden states (batch, length, dim) or (batch, dim)."""

BATCH = 32
_ARENA_SHRINKAGE = "memory.enable_memory_arena_shrinkage"
"""onnxruntime's run option that returns the CPU arena's unused memory once a run ends."""
_ONNX_FILES = (Path("onnx") / "model.onnx", Path("model.onnx"))


class TransformerEmbedder:
    """Tokenise, run the encoder on batches of similar length, pool over real tokens, normalise."""

    def __init__(
        self,
        tokenizer: Any,
        encode: Encode,
        *,
        dimensions: int,
        name: str,
        fingerprint: str,
        max_length: int = 256,
        pooling: str = "mean",
    ) -> None:
        if pooling not in ("mean", "cls"):
            raise ConfigError(f"{name}: pooling {pooling!r} is not supported (mean or cls)")
        self._tokenizer = tokenizer
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length)
        self._encode = encode
        self._dimensions = dimensions
        self.name = name
        self.fingerprint = fingerprint
        self.pooling = pooling

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch([encodable(text) for text in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for rows in _batches(order, [len(encodings[i].ids) for i in order]):
            length = len(encodings[rows[-1]].ids)
            ids = np.zeros((len(rows), length), dtype=np.int64)
            mask = np.zeros((len(rows), length), dtype=np.int64)
            for j, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[j, :n] = encodings[i].ids
                mask[j, :n] = 1
            out[rows] = self._pool(self._encode(ids, mask), mask)
        return unit_rows(out)

    def tokens(self, text: str) -> int:
        """How many tokens `text` is (cut at the model's maximum length)."""
        return len(self._tokenizer.encode(encodable(text)).ids)

    def token_states(self, text: str, window: int) -> tuple[Vectors, list[tuple[int, int]]] | None:
        """One pass of the encoder over the first `window` tokens of `text` (its closing token kept): each token's
        state and the characters of `text` it covers ((0, 0) for the special tokens). None when the graph returns
        pooled sentence vectors or the model pools on its first token, so that a span of tokens cannot be pooled."""
        if self.pooling != "mean":
            return None
        encoding = self._tokenizer.encode(encodable(text))
        ids, offsets = list(encoding.ids), [tuple(pair) for pair in encoding.offsets]
        if len(ids) > window >= 2:
            ids, offsets = ids[: window - 1] + ids[-1:], offsets[: window - 1] + [(0, 0)]
        hidden = self._encode(np.asarray([ids], dtype=np.int64), np.ones((1, len(ids)), dtype=np.int64))
        if hidden.ndim != 3:
            return None
        return hidden[0], [(int(a), int(b)) for a, b in offsets]

    def _pool(self, hidden: Vectors, mask: Ids) -> Vectors:
        if hidden.ndim == 2:  # the graph pooled already
            return hidden
        if self.pooling == "cls":
            return hidden[:, 0]
        weights = mask[..., None].astype(np.float32)
        pooled: Vectors = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return pooled


def _batches(order: list[int], lengths: list[int]) -> list[list[int]]:
    """`order` (sorted by length) cut into batches of at most BATCH texts whose padding stays small: a batch
    ends where the next text is more than a third longer than its first (and at least 8 tokens longer)."""
    batches: list[list[int]] = []
    for position, (row, length) in enumerate(zip(order, lengths, strict=True)):
        if batches and len(batches[-1]) < BATCH and length <= max(lengths[position - len(batches[-1])] * 4 // 3,
                                                                   lengths[position - len(batches[-1])] + 8):
            batches[-1].append(row)
        else:
            batches.append([row])
    return batches


class OnnxEncoder:
    """An ONNX graph with inputs input_ids, attention_mask (and token_type_ids), run by onnxruntime."""

    def __init__(self, path: Path, *, threads: int = 1) -> None:
        try:
            import onnxruntime
        except ImportError as exc:
            raise ConfigError(f"{path} needs onnxruntime: {SEMANTIC_EXTRA}") from exc
        options = onnxruntime.SessionOptions()
        # One thread: a query's few short texts gain nothing from more, and other sessions share the cores.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        with model_file(path):
            self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        # The CPU arena keeps the largest batch's buffers for the life of the session: after embedding a catalog of
        # long tool texts (batches of 32 at 256 tokens) a served process held hundreds of MB it never used again.
        # Shrinking at the end of each run gives them back and costs nothing measurable on a query.
        self._run_options = onnxruntime.RunOptions()
        self._run_options.add_run_config_entry(_ARENA_SHRINKAGE, "cpu:0")
        self._inputs = {node.name for node in self._session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self._inputs
        if missing:
            raise ConfigError(f"{path}: the graph has no input {', '.join(sorted(missing))}")
        self.dimensions = int(self._session.get_outputs()[0].shape[-1])

    def __call__(self, ids: Ids, mask: Ids) -> Vectors:
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds, self._run_options)[0]
        return np.asarray(hidden, dtype=np.float32)


def _erf(x: Vectors) -> Vectors:
    """Error function (Abramowitz and Stegun 7.1.26, error below 1.5e-7): numpy has none, GELU needs it."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    out: Vectors = sign * (1.0 - poly * np.exp(-a * a))
    return out


def _gelu(h: Vectors) -> Vectors:
    out: Vectors = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
    return out


def _gelu_tanh(h: Vectors) -> Vectors:
    inner = np.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h * h * h))
    return np.asarray(0.5 * h * (1.0 + inner), dtype=np.float32)


def _relu(h: Vectors) -> Vectors:
    return np.maximum(h, np.float32(0.0))


_ACTIVATIONS: Mapping[str, Callable[[Vectors], Vectors]] = {"gelu": _gelu, "gelu_new": _gelu_tanh, "relu": _relu}


class BertNumpy:
    """A BERT encoder (absolute positions, post-layer-norm) in numpy, from `model.safetensors` + `config.json`."""

    def __init__(self, weights: Mapping[str, npt.NDArray[Any]], config: Mapping[str, Any]) -> None:
        self.w = {key.removeprefix("bert."): np.asarray(value, dtype=np.float32) for key, value in weights.items()}
        try:
            self.layers = int(config["num_hidden_layers"])
            self.heads = int(config["num_attention_heads"])
            self.dimensions = int(config["hidden_size"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"config.json lacks a BERT size field: {exc}") from exc
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        activation = str(config.get("hidden_act", "gelu"))
        if activation not in _ACTIVATIONS:
            raise ConfigError(f"config.json: activation {activation!r} is not supported")
        self.activation = _ACTIVATIONS[activation]
        if self.dimensions % self.heads:
            raise ConfigError("config.json: hidden_size is not a multiple of num_attention_heads")
        needed = ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight"] + [
            f"encoder.layer.{n}.output.LayerNorm.weight" for n in range(self.layers)
        ]
        missing = [key for key in needed if key not in self.w]
        if missing:
            raise ConfigError(f"model.safetensors is not a BERT encoder (no {missing[0]})")
        # Linear layers as (in, out), ready for x @ W.
        for key in [k for k in self.w if k.endswith(".weight") and self.w[k].ndim == 2 and "embeddings" not in k]:
            self.w[key] = np.ascontiguousarray(self.w[key].T)

    def _norm(self, x: Vectors, name: str) -> Vectors:
        mean = x.mean(-1, keepdims=True)
        centred = x - mean
        variance = (centred * centred).mean(-1, keepdims=True)
        out: Vectors = centred / np.sqrt(variance + self.eps) * self.w[name + ".weight"] + self.w[name + ".bias"]
        return out

    def _linear(self, x: Vectors, name: str) -> Vectors:
        out: Vectors = x @ self.w[name + ".weight"] + self.w[name + ".bias"]
        return out

    def __call__(self, ids: Ids, mask: Ids) -> Vectors:
        w = self.w
        size, length = ids.shape
        head = self.dimensions // self.heads
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length][None]
        if "embeddings.token_type_embeddings.weight" in w:
            x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = self._norm(x, "embeddings.LayerNorm")
        padding = (1.0 - mask.astype(np.float32))[:, None, None, :] * np.float32(-1e9)

        def split(t: Vectors) -> Vectors:
            return t.reshape(size, length, self.heads, head).transpose(0, 2, 1, 3)

        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."
            q, k, v = (split(self._linear(x, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(head)) + padding
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(size, length, self.dimensions)
            x = self._norm(self._linear(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            hidden = self.activation(self._linear(x, p + "intermediate.dense"))
            x = self._norm(self._linear(hidden, p + "output.dense") + x, p + "output.LayerNorm")
        return x


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pooling(folder: Path) -> str:
    config = _read_json(folder / "1_Pooling" / "config.json")
    if config.get("pooling_mode_cls_token"):
        return "cls"
    if config and not config.get("pooling_mode_mean_tokens", True):
        raise ConfigError(f"{folder}: only mean or CLS pooling is supported")
    return "mean"


def load_transformer(
    folder: Path,
    *,
    onnx_file: Path | None = None,
    tokenizer: Any = None,
    name: str | None = None,
    fingerprint: str | None = None,
    max_length: int | None = None,
) -> TransformerEmbedder:
    """The encoder in `folder` (sentence-transformers layout); `onnx_file` and `tokenizer` (a `tokenizers`
    Tokenizer) replace the files found there (a package may ship the graph and the tokenizer apart)."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ConfigError(f"Semantic search needs the optional extra: {SEMANTIC_EXTRA}") from exc
    if tokenizer is None:
        if not (folder / "tokenizer.json").is_file():
            raise ConfigError(f"{folder}: no tokenizer.json")
        with model_file(folder / "tokenizer.json"):
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    config = _read_json(folder / "config.json")
    limit = max_length or int(_read_json(folder / "sentence_bert_config.json").get("max_seq_length", 0) or 0)
    limit = min(limit or 256, int(config.get("max_position_embeddings", 512)))
    graph = onnx_file or next((folder / f for f in _ONNX_FILES if (folder / f).is_file()), None)
    encode: Encode
    if graph is not None:
        encoder = OnnxEncoder(graph)
        encode, dimensions, weights_file = encoder, encoder.dimensions, graph
    elif (folder / "model.safetensors").is_file():
        from safetensors.numpy import load_file

        with model_file(folder / "model.safetensors"):
            tensors = load_file(str(folder / "model.safetensors"))
        bert = BertNumpy(tensors, config)
        encode, dimensions, weights_file = bert, bert.dimensions, folder / "model.safetensors"
    else:
        raise ConfigError(f"{folder}: no onnx/model.onnx, model.onnx or model.safetensors")
    label = name or f"transformer:{folder.name}"
    pooling = _pooling(folder)
    if fingerprint is None:
        parts = [file_digest(weights_file), tokenizer.to_str(), pooling, str(limit)]
        fingerprint = f"{label}-{hashlib.sha256('|'.join(parts).encode()).hexdigest()[:16]}"
    logger.info("semantic search: %s (%s, %d dimensions, up to %d tokens)", label, weights_file.name, dimensions,
                limit)
    return TransformerEmbedder(tokenizer, encode, dimensions=dimensions, name=label, fingerprint=fingerprint,
                               max_length=limit, pooling=pooling)
