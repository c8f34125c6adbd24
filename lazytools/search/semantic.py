"""The semantic mode's plumbing between the index and the embedders: which embedder, cached tool vectors, and
embedding a catalog in the background while BM25 answers.

The embedders themselves live in `lazytools.search.embedders` (the `semantic` extra).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .analysis import split_words
from .crosslang import english_rendering
from .embedders import (
    DEFAULT_EMBEDDER,
    SEMANTIC_EXTRA,
    Embedder,
    EmbeddingStopped,
    StaticEmbedder,
    VectorCache,
    Vectors,
    embed_batches,
    embedder_named,
)
from .embedders.static import load_wordllama
from .embedders.window import request_vectors
from .fit import DEFAULT_FIT, outside_made, outside_vectors
from .phrases import meant_words

__all__ = [
    "DEFAULT_EMBEDDER",
    "MAX_EMBEDDED_NEEDS",
    "SEMANTIC_EXTRA",
    "STOP_TIMEOUT",
    "BackgroundVectors",
    "Pace",
    "StaticEmbedder",
    "load_wordllama",
    "query_vectors",
    "resolve",
    "tool_vectors",
]

logger = logging.getLogger("lazytools.search")


def resolve(embedder: str | Embedder) -> Embedder:
    """An embedder object for a setting value (loaded once per process) or the object itself."""
    return embedder_named(embedder) if isinstance(embedder, str) else embedder


MAX_EMBEDDED_NEEDS = 8
"""Needs of one request embedded at most (the first ones): a query of 8,000 characters can hold hundreds, and
each costs milliseconds of an encoder; BM25 still scores them all."""


def query_vectors(embedder: Embedder, query: str, needs: Sequence[str]) -> Vectors:
    """The vector of `query`, then one per need of it (`needs`, from `query.clauses`, at most
    MAX_EMBEDDED_NEEDS), in one call so that an encoder batches them. The whole request is encoded on its own, not
    made from its needs' vectors: a mean of parts loses what the sentence says as a whole (docs/search-log.md).
    A long request is read once (`embedders.window`): by the static embedder beside the encoder when there is one,
    else within the encoder's window, where fewer needs may have a vector, the first ones."""
    needs = needs[:MAX_EMBEDDED_NEEDS]
    return request_vectors(embedder, _readable(query), [_readable(text) for text in needs], _spans(query, needs))


def _spans(query: str, needs: Sequence[str]) -> list[tuple[int, int]]:
    """Where each need lies in `query`, in order (a need not found there, which `clauses` never gives, spans
    nothing)."""
    spans: list[tuple[int, int]] = []
    at = 0
    for need in needs:
        start = query.find(need, at)
        if start < 0:
            spans.append((len(query), len(query)))
            continue
        spans.append((start, start + len(need)))
        at = start + len(need)
    return spans


def _readable(text: str) -> str:
    """`text`, with the words its informal verbs and phrasal verbs mean ("remember that ..." stores a fact in
    memory: phrases.py), and for Chinese text its English words too (crosslang.py): the shipped encoders read
    English, and a Chinese request must meet the English tools it asks for. An opening question's meaning is left
    out: the encoder reads a question in its context ("how many open issues" is no count tool)."""
    english = english_rendering(text)
    # The English words' phrases too: 记住 "remember" stores a fact in memory as "remember" does.
    meant = " ".join(dict.fromkeys(word for said in (text, english)
                                   for word in meant_words(split_words(said), questions=False)))
    if meant:
        text = f"{text} ({meant})"
    return f"{text} ({english})" if english else text


def tool_vectors(embedder: Embedder, texts: Sequence[str], cache_dir: Path | None = None,
                 stop: threading.Event | None = None, progress: Callable[[int, int], None] | None = None) -> Vectors:
    """The vectors of `texts`, through the on-disk cache when `cache_dir` is given (`progress`: see
    `embed_batches`, over the texts the cache lacks). Once `stop` is set, embedding ends between two batches with
    EmbeddingStopped (the vectors made so far are cached)."""
    if cache_dir is not None:
        return VectorCache(cache_dir).vectors(embedder, texts, stop, progress)
    vectors = embed_batches(embedder, texts, stop, progress)
    if len(vectors) < len(texts):
        raise EmbeddingStopped(f"stopped with {len(vectors)} of {len(texts)} texts embedded")
    return vectors


def made_outside(embedder: Embedder, cache_dir: Path | None = None, stop: threading.Event | None = None) -> bool:
    """The outside tools' vectors (`fit.outside_vectors`) made now, through the on-disk cache when `cache_dir` is
    given, if the shipped rule reads them: an index given `embedder`'s vectors from then on finds them made, and a
    restart reads them instead of embedding them again. Whether they were made by this call."""
    if not DEFAULT_FIT.outside_weight or outside_made(embedder) is not None:
        return False
    outside_vectors(embedder, lambda texts: tool_vectors(embedder, texts, cache_dir, stop))
    return True


STOP_TIMEOUT = 30.0
"""Seconds `BackgroundVectors.stop` waits for the thread: a batch takes a fraction of a second, loading a model a
few seconds."""


class Pace:
    """How far an embedding has come, and when it will end at the pace of its batches so far: a search that may
    wait for the embedding does not wait for one that will not end within its wait (5,000 changed tools take over
    a minute on 2 cores; a catalog that kept changing made every search wait the whole `LAZYTOOLS_SEMANTIC_WAIT`).
    The pace is read from the second batch on: the first also warms the model up."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._first: tuple[float, int] | None = None  # when the first batch ended, and the texts it held
        self._done = self._total = 0
        self._at = 0.0

    def heard(self, done: int, total: int) -> None:
        """`done` of `total` texts embedded (0 before the first batch)."""
        with self._lock:
            now = self._clock()
            if done > 0 and self._first is None:
                self._first = (now, done)
            self._done, self._total, self._at = done, total, now

    def left(self) -> float | None:
        """Seconds until every text is embedded at the pace of the batches after the first; None before there is
        one."""
        with self._lock:
            if self._first is None or self._done <= self._first[1]:
                return None
            rate = (self._at - self._first[0]) / (self._done - self._first[1])
            return (self._total - self._done) * rate - (self._clock() - self._at)


class BackgroundVectors:
    """Embeds texts in a daemon thread and hands the vectors to `deliver`: `served` is set once it has (or has
    failed), `done` once the outside tools are made too, either way.

    The server keeps answering with BM25 meanwhile: a first index over 1,000 tools takes seconds with a
    transformer, and nothing about the catalog's words needs to wait for it. Whoever ends the process calls
    `stop()` first: an interpreter that exits while the thread is inside onnxruntime aborts (SIGABRT, "terminate
    called without an active exception") instead of exiting with its status."""

    def __init__(
        self,
        embedder: str | Embedder,
        texts: Sequence[str],
        deliver: Callable[[Embedder, Vectors], None],
        *,
        cache_dir: Path | None = None,
    ) -> None:
        self.done = threading.Event()
        self.served = threading.Event()
        """Set once the catalog's vectors are delivered (before the outside tools are made) or the run has ended."""
        self.error: BaseException | None = None
        self.stopping = threading.Event()  # set: end after the batch being embedded (`stop` sets it and waits)
        self.pace = Pace()
        """How fast the catalog's texts are being embedded, and so when they will be."""
        self._thread = threading.Thread(
            target=self._run, args=(embedder, list(texts), deliver, cache_dir), name="lazytools-embed", daemon=True
        )
        self._thread.start()

    def _run(
        self,
        embedder: str | Embedder,
        texts: list[str],
        deliver: Callable[[Embedder, Vectors], None],
        cache_dir: Path | None,
    ) -> None:
        started = time.perf_counter()
        try:
            model = resolve(embedder)
            if self.stopping.is_set():
                raise EmbeddingStopped("stopped before the first batch")
            vectors = tool_vectors(model, texts, cache_dir, self.stopping, self.pace.heard)
            deliver(model, vectors)
            self.served.set()
            logger.info("semantic search ready: %d tools embedded by %s in %.2f s", len(texts), model.name,
                        time.perf_counter() - started)
            # Semantic search is served meanwhile: "nothing fits" reads the outside tools once they are made.
            if made_outside(model, cache_dir, self.stopping):
                deliver(model, vectors)
        except EmbeddingStopped as exc:
            logger.info("semantic indexing stopped: %s", exc)
        except Exception as exc:  # a missing extra or a broken model must not stop BM25 from serving
            self.error = exc
            logger.error("semantic search unavailable, BM25 only: %s", exc)
        finally:
            self.served.set()
            self.done.set()

    def stop(self, timeout: float = STOP_TIMEOUT) -> bool:
        """Ask the thread to stop after the batch it is embedding, and wait for it (at most `timeout` seconds);
        whether it has ended."""
        self.stopping.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            logger.warning("semantic indexing still running after %g s; exiting anyway", timeout)
            return False
        return True
