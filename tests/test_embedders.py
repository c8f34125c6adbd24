"""Embedders: a tiny random BERT written by the test in both layouts (numpy from safetensors, onnxruntime from
an ONNX graph of the same weights) must agree; model2vec folders, joined embedders, the vector cache, the
packaged MiniLM, and the server answering with BM25 until its embeddings are in."""

from __future__ import annotations

import json
import math
import re
import shlex
import sys
import threading
import tracemalloc
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lazytools import Catalog, ConfigError, Group
from lazytools.entry import ToolEntry
from lazytools.search import LiveIndex, SearchIndex
from lazytools.search.embedders import (
    Embedder,
    Joined,
    StaticEmbedder,
    VectorCache,
    Vectors,
    embedder_named,
    load_embedder,
    load_folder,
    packaged,
)
from lazytools.search.embedders import base as embedder_base
from lazytools.search.embedders.base import EmbeddingStopped
from lazytools.search.embedders.cache import text_key
from lazytools.search.embedders.transformer import BATCH, OnnxEncoder
from lazytools.search.semantic import MAX_EMBEDDED_NEEDS, query_vectors

from .conftest import embedded
from .fixtures.catalogs import realistic, tool

WORDS = ["rent", "car", "weather", "forecast", "rain", "file", "read", "write", "send", "message", "the", "a",
         "##s", "##ing", "city", "tomorrow"]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
HIDDEN, HEADS, LAYERS, INTERMEDIATE, POSITIONS = 16, 2, 2, 32, 64


def write_tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocab = {token: i for i, token in enumerate(SPECIALS + WORDS)}
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tokenizer.save(str(folder / "tokenizer.json"))


def bert_weights(seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def r(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    w = {"embeddings.word_embeddings.weight": r(len(SPECIALS) + len(WORDS), HIDDEN),
         "embeddings.position_embeddings.weight": r(POSITIONS, HIDDEN),
         "embeddings.token_type_embeddings.weight": r(2, HIDDEN),
         "embeddings.LayerNorm.weight": 1 + r(HIDDEN), "embeddings.LayerNorm.bias": r(HIDDEN)}
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."
        for name, (rows, cols) in {"attention.self.query": (HIDDEN, HIDDEN), "attention.self.key": (HIDDEN, HIDDEN),
                                   "attention.self.value": (HIDDEN, HIDDEN),
                                   "attention.output.dense": (HIDDEN, HIDDEN),
                                   "intermediate.dense": (INTERMEDIATE, HIDDEN),
                                   "output.dense": (HIDDEN, INTERMEDIATE)}.items():
            w[p + name + ".weight"], w[p + name + ".bias"] = r(rows, cols), r(rows)  # torch layout: (out, in)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + norm + ".weight"], w[p + norm + ".bias"] = 1 + r(HIDDEN), r(HIDDEN)
    return w


def write_config(folder: Path) -> None:
    config = {"hidden_size": HIDDEN, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS,
              "intermediate_size": INTERMEDIATE, "max_position_embeddings": POSITIONS, "hidden_act": "gelu",
              "layer_norm_eps": 1e-12, "model_type": "bert"}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))


def bert_onnx(w: dict[str, np.ndarray], path: Path) -> None:
    """The same BERT as an ONNX graph, written node by node (an independent second implementation)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[onnx.NodeProto] = []
    inits = [numpy_helper.from_array(value if value.ndim != 2 or "embeddings" in key else value.T.copy(), key)
             for key, value in w.items()]
    constants = {"half": 0.5, "one": 1.0, "sqrt2": math.sqrt(2.0), "scale": 1 / math.sqrt(HIDDEN // HEADS),
                 "big": -1e9}
    inits += [numpy_helper.from_array(np.array(v, dtype=np.float32), k) for k, v in constants.items()]
    inits += [numpy_helper.from_array(np.array([0, 0, HEADS, HIDDEN // HEADS], dtype=np.int64), "heads_shape"),
              numpy_helper.from_array(np.array([0, 0, HIDDEN], dtype=np.int64), "flat_shape"),
              numpy_helper.from_array(np.array([1], dtype=np.int64), "i1"),
              numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
              numpy_helper.from_array(np.array(1, dtype=np.int64), "step"),
              numpy_helper.from_array(np.array([1, 2], dtype=np.int64), "axes12")]

    def node(op: str, inputs: list[str], output: str, **attrs: object) -> str:
        nodes.append(helper.make_node(op, inputs, [output], **attrs))
        return output

    def norm(x: str, name: str, out: str) -> str:
        return node("LayerNormalization", [x, name + ".weight", name + ".bias"], out, axis=-1, epsilon=1e-12)

    def linear(x: str, name: str, out: str) -> str:
        return node("Add", [node("MatMul", [x, name + ".weight"], out + "_mm"), name + ".bias"], out)

    length = node("Gather", [node("Shape", ["input_ids"], "shape"), "i1"], "length1")
    positions = node("Range", ["zero", node("Squeeze", [length], "length"), "step"], "positions")
    x = node("Add", [node("Gather", ["embeddings.word_embeddings.weight", "input_ids"], "words"),
                     node("Gather", ["embeddings.position_embeddings.weight", positions], "pos")], "x_wp")
    x = node("Add", [x, node("Gather", ["embeddings.token_type_embeddings.weight", "token_type_ids"], "types")], "x_e")
    x = norm(x, "embeddings.LayerNorm", "x0")
    maskf = node("Cast", ["attention_mask"], "maskf", to=TensorProto.FLOAT)
    bias = node("Unsqueeze", [node("Mul", [node("Sub", ["one", maskf], "inv"), "big"], "neg"), "axes12"], "bias")
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."

        def heads(name: str, perm: list[int]) -> str:
            flat = linear(x, p + f"attention.self.{name}", f"{name}{n}")
            return node("Transpose", [node("Reshape", [flat, "heads_shape"], f"{name}{n}_r")], f"{name}{n}_t",
                        perm=perm)

        q, k, v = heads("query", [0, 2, 1, 3]), heads("key", [0, 2, 3, 1]), heads("value", [0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k], f"qk{n}"), "scale"], f"qks{n}"), bias], f"s{n}")
        context = node("MatMul", [node("Softmax", [scores], f"a{n}", axis=-1), v], f"c{n}")
        context = node("Reshape", [node("Transpose", [context], f"ct{n}", perm=[0, 2, 1, 3]), "flat_shape"], f"cf{n}")
        attended = linear(context, p + "attention.output.dense", f"ao{n}")
        x = norm(node("Add", [attended, x], f"r1{n}"), p + "attention.output.LayerNorm", f"x1{n}")
        h = linear(x, p + "intermediate.dense", f"h{n}")
        erf = node("Erf", [node("Div", [h, "sqrt2"], f"hd{n}")], f"he{n}")
        gelu = node("Mul", [node("Mul", [h, "half"], f"hh{n}"), node("Add", [erf, "one"], f"h1{n}")], f"g{n}")
        out = linear(gelu, p + "output.dense", f"o{n}")
        x = norm(node("Add", [out, x], f"r2{n}"), p + "output.LayerNorm", f"x2{n}")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    ints = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
            for name in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", HIDDEN])
    graph = helper.make_graph(nodes, "tiny-bert", ints, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


@pytest.fixture
def tiny_bert(tmp_path: Path) -> tuple[Path, Path]:
    """Two folders holding the same random BERT: safetensors (numpy) and onnx/model.onnx (onnxruntime)."""
    from safetensors.numpy import save_file

    weights = bert_weights()
    numpy_dir, onnx_dir = tmp_path / "st", tmp_path / "onnx"
    for folder in (numpy_dir, onnx_dir):
        folder.mkdir()
        write_tokenizer(folder)
        write_config(folder)
    save_file(weights, str(numpy_dir / "model.safetensors"))
    bert_onnx(weights, onnx_dir / "onnx" / "model.onnx")
    return numpy_dir, onnx_dir


TEXTS = ["rent a car", "weather forecast for the city tomorrow", "read a file", "sending messages",
         "rain", "zzz unknown words only", ""]


def test_numpy_and_onnx_encoders_agree_on_the_same_weights(tiny_bert: tuple[Path, Path]) -> None:
    numpy_model, onnx_model = load_folder(tiny_bert[0]), load_folder(tiny_bert[1])
    assert numpy_model.dimensions == onnx_model.dimensions == HIDDEN
    a, b = numpy_model.embed(TEXTS), onnx_model.embed(TEXTS)
    assert a.shape == (len(TEXTS), HIDDEN) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(a * b, axis=1)) > 0.9999
    assert numpy_model.fingerprint != onnx_model.fingerprint  # different files, different cache entries


def test_padding_does_not_change_a_texts_vector(tiny_bert: tuple[Path, Path]) -> None:
    # Alone, a short text has no padding; beside a long one it is padded: the mask must hide the padding.
    for folder in tiny_bert:
        model = load_folder(folder)
        alone = model.embed(["rent a car"])[0]
        padded = model.embed(["rent a car", "the weather forecast for the city tomorrow read a file"])[0]
        assert np.allclose(alone, padded, atol=1e-5)


def test_a_lone_surrogate_is_read_as_a_replacement_character(tiny_bert: tuple[Path, Path]) -> None:
    # A command-line argument that was not UTF-8 arrives as lone surrogates, which a tokenizer refuses.
    model = load_folder(tiny_bert[1])
    text, replaced = "rent a car \udcff\ud800 today", "rent a car \ufffd\ufffd today"
    assert np.allclose(model.embed([text, "rain"]), model.embed([replaced, "rain"]))
    assert model.tokens(text) == model.tokens(replaced)
    states = model.token_states(text, 64)
    assert states is not None and states[1] == model.token_states(replaced, 64)[1]  # type: ignore[index]


def test_model2vec_folder_means_the_rows_of_its_tokens(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    write_tokenizer(tmp_path)
    table = np.random.default_rng(1).standard_normal((len(SPECIALS) + len(WORDS), 8)).astype(np.float32)
    save_file({"embeddings": table}, str(tmp_path / "model.safetensors"))
    model = load_folder(tmp_path)
    assert isinstance(model, StaticEmbedder) and model.dimensions == 8
    ids = [len(SPECIALS) + WORDS.index(word) for word in ("rent", "car")]
    expected = table[ids].mean(axis=0)
    assert np.allclose(model.embed(["rent car"])[0], expected / np.linalg.norm(expected), atol=1e-6)
    assert np.allclose(model.embed(["rent car \udcff"]), model.embed(["rent car \ufffd"]))  # see the test above


def test_joined_cosine_is_the_mean_of_the_parts(tiny_bert: tuple[Path, Path]) -> None:
    first, second = load_folder(tiny_bert[0]), embedder_named("wordllama")
    joined = Joined([first, second])
    assert joined.dimensions == first.dimensions + second.dimensions
    pair = ["rent a car", "weather forecast"]
    expected = np.mean([(e.embed(pair)[0] @ e.embed(pair)[1]) for e in (first, second)])
    vectors = joined.embed(pair)
    assert np.isclose(vectors[0] @ vectors[1], expected, atol=1e-5)
    assert load_embedder(f"{tiny_bert[0]}+wordllama").fingerprint == joined.fingerprint


def test_unknown_embedders_and_broken_folders_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown embedder"):
        load_embedder("gpt-17")
    with pytest.raises(ConfigError, match="does not exist"):
        load_embedder(str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match="tokenizer"):
        load_embedder(str(tmp_path))


@pytest.mark.parametrize(("damaged", "content"), [
    ("tokenizer.json", b"{1: 2}"),
    ("model.safetensors", b"\xff" * 4096),
    ("onnx/model.onnx", b"not a protobuf at all" * 50),
])
def test_a_damaged_model_file_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch, damaged: str,
                                                    content: bytes) -> None:
    """The libraries' own errors (tokenizers raises a bare Exception) end as one line naming the file and the
    setting, in `search` and `eval` as in serve mode."""
    from safetensors.numpy import save_file

    from lazytools.cli import main

    folder = tmp_path / "model"
    folder.mkdir()
    write_tokenizer(folder)
    save_file({"embeddings": np.ones((len(SPECIALS) + len(WORDS), 4), dtype=np.float32)},
              str(folder / "model.safetensors"))
    (folder / damaged).parent.mkdir(exist_ok=True)
    (folder / damaged).write_bytes(content)
    with pytest.raises(ConfigError, match=re.escape(str(folder / damaged))):
        load_embedder(str(folder))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    eval_files = ["--tools", str(Path(__file__).parent / "fixtures" / "eval_tools.jsonl"),
                  "--queries", str(Path(__file__).parent / "fixtures" / "eval_queries.jsonl")]
    for command in (["search", "rent a car"], ["eval", *eval_files]):
        assert main(["--semantic", "--embedder", str(folder), *command]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and str(folder / damaged) in err and "--embedder" in err


class Counting:
    """An embedder that counts the texts it was asked to embed."""

    def __init__(self, inner: Embedder, fingerprint: str | None = None) -> None:
        self.inner, self.name = inner, inner.name
        self.fingerprint = fingerprint or inner.fingerprint
        self.embedded: list[str] = []

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.embedded.extend(texts)
        return self.inner.embed(texts)


def test_vector_cache_embeds_only_new_texts(tmp_path: Path) -> None:
    model = Counting(embedder_named("wordllama"))
    texts = ["read a file", "send a message", "rent a car"]
    first = VectorCache(tmp_path).vectors(model, texts)
    assert model.embedded == texts
    model.embedded.clear()
    again = VectorCache(tmp_path).vectors(model, texts)  # a restart: a new cache object, the same directory
    assert model.embedded == [] and np.array_equal(first, again)
    changed = VectorCache(tmp_path).vectors(model, ["read a file", "rent a bike", "send a message", "rent a bike"])
    assert model.embedded == ["rent a bike"]
    assert np.array_equal(changed[0], first[0]) and np.array_equal(changed[1], changed[3])
    other = Counting(model.inner, fingerprint="another-model")
    VectorCache(tmp_path).vectors(other, texts)
    assert other.embedded == texts  # vectors of one model are never served for another


def test_vector_cache_keeps_a_text_whose_key_ends_with_a_zero_byte(tmp_path: Path) -> None:
    from lazytools.search.embedders.cache import text_key

    zero = next(text for text in (f"tool {n}" for n in range(10_000)) if text_key(text).endswith(b"\0"))
    model = Counting(embedder_named("wordllama"))
    texts = ["read a file", zero, "send a message"]
    first = VectorCache(tmp_path).vectors(model, texts)
    model.embedded.clear()
    for _ in range(2):  # two restarts: the second read the file the first wrote
        cache = VectorCache(tmp_path)
        assert np.array_equal(cache.vectors(model, texts), first) and (cache.hits, cache.misses) == (3, 0)
    assert model.embedded == []


def test_an_unwritable_vector_cache_is_warned_of_once_with_what_to_do(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory", encoding="utf-8")
    model = Counting(embedder_named("wordllama"))
    with caplog.at_level("WARNING", logger="lazytools.search"):
        for texts in (["read a file"], ["send a message"], ["read a file"]):  # the catalog's, the outside's, ...
            assert VectorCache(blocked).vectors(model, texts).shape == (1, model.dimensions)
    warned = [record.getMessage() for record in caplog.records if "not written" in record.getMessage()]
    assert len(warned) == 1 and "LAZYTOOLS_CACHE_DIR" in warned[0], warned
    assert model.embedded == ["read a file", "send a message", "read a file"]  # nothing kept: embedded again


def test_vector_cache_survives_a_damaged_file_and_keeps_its_cap(tmp_path: Path) -> None:
    model = Counting(embedder_named("wordllama"))
    cache = VectorCache(tmp_path, max_entries=3)
    cache.path_for(model).parent.mkdir(parents=True)
    cache.path_for(model).write_bytes(b"not a numpy file")
    cache.vectors(model, ["a", "b", "c"])
    assert model.embedded == ["a", "b", "c"]
    cache.vectors(model, ["d", "e"])  # over the cap: old rows not asked for leave, the asked ones stay
    model.embedded.clear()
    cache.vectors(model, ["d", "e"])
    assert model.embedded == []
    with np.load(cache.path_for(model)) as data:
        assert len(data["keys"]) == 3



def test_a_truncated_cache_file_is_rebuilt_not_fatal(tmp_path: Path) -> None:
    """A cut-off .npz (a crash mid-copy, a full disk) reads as a damaged zip: rebuilt like any other damage."""
    model = Counting(embedder_named("wordllama"))
    texts = ["read a file", "send a message", "rent a car"]
    VectorCache(tmp_path).vectors(model, texts)
    path = VectorCache(tmp_path).path_for(model)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    model.embedded.clear()
    again = VectorCache(tmp_path).vectors(model, texts)
    assert model.embedded == texts and again.shape[0] == 3
    model.embedded.clear()
    VectorCache(tmp_path).vectors(model, texts)
    assert model.embedded == []  # and the rebuilt file serves the next restart

def _zip_bomb(path: Path, rows: int, dimensions: int) -> None:
    """An .npz whose arrays agree with each other but declare `rows` rows of zeros: small on disk, huge inflated."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, dtype, shape in (("keys.npy", np.dtype("S16"), (rows,)),
                                   ("vectors.npy", np.dtype("<f4"), (rows, dimensions))):
            with archive.open(name, "w", force_zip64=True) as member:
                np.lib.format.write_array_header_1_0(member, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                              "fortran_order": False, "shape": shape})
                left = math.prod(shape) * dtype.itemsize
                chunk = bytes(1 << 20)
                while left:
                    member.write(chunk[:left])
                    left -= min(left, len(chunk))


def test_a_cache_file_declaring_a_huge_array_is_rebuilt_without_inflating_it(tmp_path: Path,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    """Issue #20 item 6: the declared sizes are checked before any data is read, against the cache's row cap."""
    model = Counting(embedder_named("wordllama"))
    model.inner.embed(["load the model before measuring"])
    cache = VectorCache(tmp_path)
    path = cache.path_for(model)
    path.parent.mkdir(parents=True)
    rows = (96 << 20) // (model.dimensions * 4 + 16)  # 96 MB of zeros inflated
    assert rows > cache.max_entries
    _zip_bomb(path, rows, model.dimensions)
    assert path.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        got = cache.vectors(model, ["read a file"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert model.embedded == ["read a file"] and got.shape == (1, model.dimensions)  # rebuilt, like any damage
    assert peak < 8 << 20, f"reading the cache allocated {peak} bytes"
    assert "unreadable, rebuilding it" in caplog.text and "declares" in caplog.text
    model.embedded.clear()
    cache.vectors(model, ["read a file"])
    assert model.embedded == []  # the rewritten file reads back


def _write_npz(path: Path, keys: np.ndarray, rows: np.ndarray, *, version: tuple[int, int] = (1, 0),
               trailing: bytes = b"") -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in (("keys.npy", keys), ("vectors.npy", rows)):
            with archive.open(name, "w") as member:
                np.lib.format.write_array(member, array, version=version)
                member.write(trailing if name == "vectors.npy" else b"")


@pytest.mark.parametrize(("change", "kept"), [
    ({}, True),
    ({"version": (2, 0)}, True),
    ({"trailing": b"\0" * 4}, False),  # more bytes stored than the header declares
    ({"dtype": np.float64}, False),
    ({"fortran": True}, False),
    ({"rows": 1}, False),  # fewer rows than keys
])
def test_a_cache_file_is_read_only_as_declared(tmp_path: Path, change: dict[str, Any], kept: bool) -> None:
    model = Counting(embedder_named("wordllama"))
    texts = ["read a file", "send a message"]
    first = VectorCache(tmp_path).vectors(model, texts)
    path = VectorCache(tmp_path).path_for(model)
    keys = np.array([text_key(text) for text in texts], dtype="S16")
    rows = first[: change.get("rows", len(texts))].astype(change.get("dtype", np.float32))
    if change.get("fortran"):
        rows = np.asfortranarray(rows)
    _write_npz(path, keys, rows, version=change.get("version", (1, 0)), trailing=change.get("trailing", b""))
    model.embedded.clear()
    again = VectorCache(tmp_path).vectors(model, texts)
    assert model.embedded == ([] if kept else texts)
    assert np.allclose(again, first)


def test_a_cache_file_holding_nan_is_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """NaN rows on disk (a bad write, a hand edit) would turn every cosine into NaN: the file counts as damaged."""
    model = Counting(embedder_named("wordllama"))
    texts = ["read a file", "send a message"]
    first = VectorCache(tmp_path).vectors(model, texts)
    path = VectorCache(tmp_path).path_for(model)
    with np.load(path) as data:
        keys, rows = data["keys"], data["vectors"]
    rows[1, 0] = np.nan
    np.savez(path, keys=keys, vectors=rows)
    model.embedded.clear()
    again = VectorCache(tmp_path).vectors(model, texts)
    assert model.embedded == texts and np.array_equal(again, first)
    assert "non-finite" in caplog.text
    with np.load(path) as data:
        assert np.isfinite(data["vectors"]).all()  # the next restart reads a sound file


def nan_model2vec(folder: Path, nan_word: str | None) -> Embedder:
    """A model2vec folder whose row for `nan_word` is NaN (every row when None)."""
    from safetensors.numpy import save_file

    folder.mkdir()
    write_tokenizer(folder)
    table = np.random.default_rng(2).standard_normal((len(SPECIALS) + len(WORDS), 8)).astype(np.float32)
    table[len(SPECIALS) + WORDS.index(nan_word) if nan_word else slice(None)] = np.nan
    save_file({"embeddings": table}, str(folder / "model.safetensors"))
    return load_folder(folder)


@pytest.mark.parametrize("nan_word", ["car", None])
def test_nan_vectors_never_reach_scoring(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                         nan_word: str | None) -> None:
    """A model giving NaN (for one word, or for everything) has those rows zeroed, as for a text with nothing to
    embed, with one warning: searches keep finding what BM25 finds, and no NaN goes to the cache."""
    from lazytools.search import build_index

    model = nan_model2vec(tmp_path / "model", nan_word)
    tools = [tool("rent_car", "Rent a car in a city."), tool("weather", "The weather forecast for tomorrow."),
             tool("read_file", "Read a file.")]
    index = build_index(tools, semantic=True, embedder=model, cache_dir=tmp_path / "cache")
    assert index.semantic
    for query in ("rent a car", "rent a car", "weather forecast"):
        hits = index.search(query, limit=3)
        assert hits and all(math.isfinite(hit.score) for hit in hits)
        assert hits[0].entry.name == ("rent_car" if "car" in query else "weather")
    warnings = [r for r in caplog.records if "NaN or infinite" in r.getMessage()]
    assert len(warnings) == 1 and model.name in warnings[0].getMessage()
    with np.load(VectorCache(tmp_path / "cache").path_for(model)) as data:
        assert np.isfinite(data["vectors"]).all()


def test_unwritable_cache_directory_still_gives_vectors(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory would be")
    vectors = VectorCache(blocker).vectors(embedder_named("wordllama"), ["read a file"])
    assert vectors.shape == (1, 256)


def test_long_requests_embed_the_whole_and_each_need_in_one_call(tiny_bert: tuple[Path, Path]) -> None:
    model = Counting(load_folder(tiny_bert[0]))
    needs = ["rent a car", "the weather forecast"]
    vectors = query_vectors(model, "rent a car, then the weather forecast", needs)
    assert model.embedded == ["rent a car, then the weather forecast", *needs] and vectors.shape == (3, HIDDEN)
    assert np.allclose(vectors[1:], model.inner.embed(needs), atol=1e-5)
    model.embedded.clear()
    many = [f"rent car {n}" for n in range(MAX_EMBEDDED_NEEDS + 5)]
    assert query_vectors(model, ", ".join(many), many).shape == (MAX_EMBEDDED_NEEDS + 1, HIDDEN)
    assert model.embedded[1:] == many[:MAX_EMBEDDED_NEEDS]  # a hostile list of needs costs a bounded encoding


def test_packaged_minilm_is_checked_and_embeds_meaning(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = embedder_named("minilm")
    assert model.dimensions == 384 and model.fingerprint.startswith("minilm-int8-")
    a, b, c = model.embed(["will it rain tomorrow", "weather forecast for the next days", "compress a video"])
    assert a @ b > 0.5 > a @ c
    # A package whose file is not the pinned one is refused (found by find_spec, never imported).
    fake = tmp_path / packaged.MINILM_PACKAGE
    fake.mkdir()
    (fake / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (fake / "model.onnx").write_bytes(b"something else")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="not the expected file"):
        packaged.minilm_graph()


def _anonymous_mib() -> float:
    """This process's resident memory that no file backs (the heap and onnxruntime's arena), in MiB."""
    total, backed = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5:
            backed = len(fields) > 5 and fields[5].startswith("/")
        elif line.startswith("Rss:") and not backed:
            total += int(fields[1])
    return total / 1024


def test_a_large_batch_leaves_no_arena_behind() -> None:
    """The encoder's buffers for a batch of 32 texts at 256 tokens (about 450 MB in onnxruntime's CPU arena) are
    given back once the run ends, not held by the session for the life of the server."""
    encoder = OnnxEncoder(packaged.minilm_graph())  # a session of its own: no earlier test has grown its arena
    ids = np.random.default_rng(3).integers(1_000, 20_000, (BATCH, 256), dtype=np.int64)
    mask = np.ones_like(ids)
    encoder(ids[:1, :12], mask[:1, :12])
    before = _anonymous_mib()
    hidden = encoder(ids, mask)
    assert hidden.shape == (BATCH, 256, 384)
    del hidden
    assert _anonymous_mib() - before < 150


def test_the_published_minilm_needs_its_package_and_the_fine_tuned_one_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """`minilm` (the default's encoder) is the graph of a package; the fine-tuned graph ships with lazytools."""
    from lazytools.search import embedders

    monkeypatch.setitem(sys.modules, packaged.MINILM_PACKAGE, None)
    with pytest.raises(ConfigError, match=re.escape(embedders.SEMANTIC_EXTRA)):
        load_embedder(embedders.DEFAULT_EMBEDDER)
    assert load_embedder("minilm-tools+wordllama").dimensions == 384 + 256


@pytest.mark.parametrize("missing", ["tokenizers", "safetensors", "onnxruntime"])
async def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
                                                   missing: str) -> None:
    """The README's plain install has none of the extra's packages: the default embedder says how to get them,
    from the shell and in serve mode's log."""
    from lazytools.search import embedders

    monkeypatch.setitem(sys.modules, missing, None)  # what an import (and find_spec) sees when it is not installed
    monkeypatch.setattr(embedders, "_loaded", {})
    with pytest.raises(ConfigError, match=re.escape(embedders.SEMANTIC_EXTRA)):
        load_embedder(embedders.DEFAULT_EMBEDDER)
    live = LiveIndex(catalog_of([tool("read_file", "Read a file from disk.")]), semantic=True)
    await embedded(live)
    assert embedders.SEMANTIC_EXTRA in caplog.text
    # The clone, by this interpreter's pip: `pip install 'lazytools[semantic]'` reaches an unrelated PyPI package,
    # and another venv's pip installs where this lazytools never looks.
    clone = Path(embedders.__file__).resolve().parents[3]
    assert embedders.SEMANTIC_EXTRA == f"{shlex.quote(sys.executable)} -m pip install -e '{clone}[semantic]'"


def catalog_of(entries: list[ToolEntry]) -> Catalog:
    catalog = Catalog()
    for group in sorted({entry.group for entry in entries}):
        catalog.set_group(Group(group), [entry for entry in entries if entry.group == group])
    return catalog


class Gated:
    """An embedder whose first `embed` waits until the test opens the gate."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.fingerprint = inner, inner.name, inner.fingerprint
        self.gate, self.entered = threading.Event(), threading.Event()

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.entered.set()
        if not self.gate.wait(timeout=300):  # a guard against a hang if embedding ever blocked the server
            raise RuntimeError("the test never opened the gate")
        return self.inner.embed(texts)


async def test_bm25_answers_until_the_embeddings_are_ready(tmp_path: Path) -> None:
    import anyio.to_thread

    catalog = catalog_of(realistic())
    model = Gated(embedder_named("wordllama"))
    live = LiveIndex(catalog, semantic=True, embedder=model, cache_dir=tmp_path)
    index = await live.ready()
    await anyio.to_thread.run_sync(model.entered.wait)  # the background thread is embedding the tools now
    plain = SearchIndex(realistic())
    query = "read a file and list the directory"
    assert not index.semantic
    assert [h.entry.name for h in index.search(query)] == [h.entry.name for h in plain.search(query)]
    model.gate.set()
    assert (await embedded(live)) is index and index.semantic
    assert index.search("vorpal snickersnack")  # fused: every tool is ranked by meaning now


def test_a_stopped_cache_fill_keeps_the_batches_already_embedded(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder_base, "EMBED_BATCH", 2)
    stop = threading.Event()

    class StopsAfterOneBatch(Counting):
        def embed(self, texts: Sequence[str]) -> Vectors:
            stop.set()  # the process ends while this batch is embedded
            return super().embed(texts)

    model = StopsAfterOneBatch(embedder_named("wordllama"))
    texts = ["read a file", "send a message", "rent a car", "book a flight", "play a song"]
    with pytest.raises(EmbeddingStopped):
        VectorCache(tmp_path).vectors(model, texts, stop)
    assert model.embedded == texts[:2]
    again = Counting(model.inner)
    VectorCache(tmp_path).vectors(again, texts)  # the next start embeds only the rest
    assert again.embedded == texts[2:]


async def test_stopping_the_index_ends_embedding_between_batches(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """What the server does before it exits: the background thread must not be inside a model then."""
    import anyio.to_thread

    monkeypatch.setattr(embedder_base, "EMBED_BATCH", 4)
    counting = Counting(embedder_named("wordllama"))
    model = Gated(counting)
    live = LiveIndex(catalog_of(realistic()), semantic=True, embedder=model, cache_dir=tmp_path)
    index = await live.ready()
    background = live.background
    assert background is not None
    await anyio.to_thread.run_sync(model.entered.wait)  # inside the first batch
    stopper = threading.Thread(target=live.stop)
    stopper.start()
    assert await anyio.to_thread.run_sync(background.stopping.wait, 60)
    model.gate.set()  # the batch in progress ends; no other starts
    await anyio.to_thread.run_sync(stopper.join, 60)
    assert not stopper.is_alive() and background.done.is_set() and background.error is None
    assert len(counting.embedded) == 4 and not index.semantic
    again = Counting(counting.inner)
    VectorCache(tmp_path).vectors(again, index.embedding_texts())
    assert len(again.embedded) == len(index.embedding_texts()) - 4


async def test_a_broken_embedder_leaves_bm25_serving(tmp_path: Path) -> None:
    catalog = catalog_of([tool("read_file", "Read a file from disk.")])
    live = LiveIndex(catalog, semantic=True, embedder=str(tmp_path / "no-model"), cache_dir=tmp_path)
    index = await embedded(live)
    assert not index.semantic and live.background is not None
    assert isinstance(live.background.error, ConfigError)
    assert [h.entry.name for h in index.search("read a file")] == ["read_file"]


def test_an_embedder_setting_naming_nothing_stops_start_up(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from lazytools.cli import main
    from lazytools.search.embedders import check_embedder

    check_embedder("minilm+wordllama")
    check_embedder(f"wordllama+{tmp_path}")  # a folder that exists is checked when it loads, not here
    for wrong in ("gpt5", "minilm+", str(tmp_path / "missing")):
        with pytest.raises(ConfigError, match="unknown embedder"):
            check_embedder(wrong)
    monkeypatch.chdir(tmp_path)
    tools, queries = (str(Path(__file__).parent / "fixtures" / f"eval_{kind}.jsonl") for kind in ("tools", "queries"))
    for command in (["search", "weather"], ["eval", "--tools", tools, "--queries", queries]):
        assert main(["--semantic", "--embedder", "gpt5", *command]) == 2
        err = capsys.readouterr().err  # the flag and the variable, as for any other setting
        assert "--embedder / LAZYTOOLS_EMBEDDER: unknown embedder 'gpt5'" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(("damage", "said"), [
    ("zeros", "every row is zero"),
    ("huge", "not unit vectors"),
    ("largest", "not unit vectors"),
    ("twice", "stored twice"),
])
def test_rows_no_embedder_writes_are_damage(tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str,
                                            said: str) -> None:
    """Rows of zeros, 1e37 or float32's largest, or a key stored twice with another row, read back as good vectors
    and changed every ranking without a word: they are damage, rebuilt like a file that does not read."""
    model = Counting(embedder_named("wordllama"))
    texts = ["read a file", "send a message", "rent a car"]
    first = VectorCache(tmp_path).vectors(model, texts)
    path = VectorCache(tmp_path).path_for(model)
    keys = np.array([text_key(text) for text in texts], dtype="S16")
    rows = {"zeros": np.zeros_like(first), "huge": np.full_like(first, 1e37),
            "largest": np.full_like(first, np.finfo(np.float32).max), "twice": first}[damage]
    if damage == "twice":
        keys, rows = np.concatenate([keys, keys[:1]]), np.vstack([first, -first[:1]])
    np.savez(path, keys=keys, vectors=rows)
    model.embedded.clear()
    again = VectorCache(tmp_path).vectors(model, texts)
    assert model.embedded == texts and np.allclose(again, first)
    assert said in caplog.text


def test_vectors_made_by_other_embedding_code_are_not_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fingerprint names the weights; the cache file also names the code that turned texts into vectors, so a
    changed pooling or batching (an upgrade, a developer's edit) embeds again instead of serving the old vectors."""
    from lazytools.search.embedders import cache

    model = Counting(embedder_named("wordllama"))
    texts = ["read a file", "send a message"]
    VectorCache(tmp_path).vectors(model, texts)
    model.embedded.clear()
    VectorCache(tmp_path).vectors(model, texts)
    assert model.embedded == []
    assert len(cache.code_digest()) == 16 and cache.code_digest() == cache.code_digest()
    monkeypatch.setattr(cache, "code_digest", lambda: "other-code")
    VectorCache(tmp_path).vectors(model, texts)
    assert model.embedded == texts


def test_wordllamas_fingerprint_names_the_installed_table() -> None:
    model = embedder_named("wordllama")
    assert model.fingerprint.startswith("wordllama-l2_supercat-256-")
    version, size = model.fingerprint.rsplit("-", 2)[1:]
    import importlib.metadata

    assert version == importlib.metadata.version("wordllama") and int(size) > 1_000_000


async def test_a_rebuild_stops_the_embedding_of_the_index_it_supersedes(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog that changes faster than its tools are embedded runs one embedding thread, not one per change;
    the newest index is embedded in full."""
    import anyio.to_thread

    monkeypatch.setattr(embedder_base, "EMBED_BATCH", 4)
    model = Gated(embedder_named("wordllama"))
    catalog = catalog_of(realistic())
    live = LiveIndex(catalog, semantic=True, embedder=model, cache_dir=tmp_path)
    first = await live.ready()
    superseded = live.background
    assert superseded is not None
    await anyio.to_thread.run_sync(model.entered.wait)  # inside its first batch
    catalog.set_group(Group("extra"), [tool("rent_car", "Rent a car for a trip.", "extra")])
    newest = await live.ready()
    assert newest is not first and superseded.stopping.is_set()
    model.gate.set()
    assert await anyio.to_thread.run_sync(superseded.done.wait, 60) and not first.semantic
    assert (await embedded(live)) is newest and newest.semantic
    assert live.background is not None and not live.background.stopping.is_set()
    live.stop()
