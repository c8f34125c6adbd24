"""The index of a live catalog: rebuilt off the event loop on first use after the catalog changed (reading again
only the groups whose tools changed), and (with the semantic extra) embedded in the background while BM25
answers."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from ..catalog import Catalog
from ..entry import ToolEntry
from .config import DEFAULT, RankingConfig
from .embedders import DEFAULT_EMBEDDER
from .index import SearchIndex
from .segments import Segment, catalog_segments

if TYPE_CHECKING:
    from .embedders import Embedder
    from .semantic import BackgroundVectors

__all__ = ["LiveIndex"]

_POLL = 0.05
"""Seconds between two looks at whether the background embedding is done (`LiveIndex.embedded`)."""


class LiveIndex:
    """The index of a catalog, rebuilt on first use after the catalog changed.

    With `semantic`, each new index answers with BM25 at once while its tools are embedded in a background
    thread (through the vector cache in `cache_dir`); fusion starts when they are ready
    (`background.done`)."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        semantic: bool = False,
        embedder: str | Embedder = DEFAULT_EMBEDDER,
        cache_dir: Path | None = None,
        config: RankingConfig = DEFAULT,
    ) -> None:
        self._catalog = catalog
        self._config = config
        self._semantic = semantic
        self._embedder = embedder
        self._cache_dir = cache_dir
        self._index: SearchIndex | None = None
        self._segments: dict[str, Segment] = {}
        """The last build's segments by group: what each group's tools gave it, read again only if they change."""
        self._version = -1
        self._lock = anyio.Lock()
        self.background: BackgroundVectors | None = None
        self._embedding: list[BackgroundVectors] = []  # every index's, until done: an older one may still run

    def _build(self, entries: list[ToolEntry]) -> SearchIndex:
        segments = catalog_segments(entries, self._segments)
        index = SearchIndex(entries, config=self._config, segments=segments)
        self._segments = {segment.group: segment for segment in segments}
        # Built here, in the worker thread, so the first typo of a query on the event loop (`quick_search`) costs
        # a look-up, not the table.
        index.vocabulary.prepare()
        if self._semantic:
            from .semantic import BackgroundVectors

            running = [b for b in self._embedding if not b.done.is_set()]
            for older in running:
                # Its index is superseded: embedding on for it would only compete with this one, and a catalog
                # that changes faster than it embeds would run one thread per change. What it embedded is cached.
                older.stopping.set()
            self.background = BackgroundVectors(self._embedder, index.embedding_texts(), index.use_embeddings,
                                                cache_dir=self._cache_dir)
            self._embedding = [*running, self.background]
        return index

    def stop(self) -> None:
        """Stop embedding in the background (between two batches) and wait for it: called before the process
        exits, which must not happen while a thread runs a model's native code."""
        for background in self._embedding:
            background.stop()
        self._embedding = []

    @property
    def fresh(self) -> SearchIndex | None:
        """The index if it is the catalog's as it is now (nothing to wait for), else None."""
        return self._index if self._index is not None and self._version >= self._catalog.version else None

    async def embedded(self, wait: float) -> bool:
        """Whether the newest index's tools are embedded (or semantic search is off), after waiting up to `wait`
        seconds for them (not for the outside tools made after them) without holding a thread: a search that comes
        seconds after start would otherwise be ranked and enabled by BM25 alone, and what it enables stays. It stops
        waiting once the embedding's pace says it will not end within `wait` (`semantic.Pace`)."""
        def pending() -> bool:  # the newest's: a catalog change meanwhile starts another (and stops this one)
            return self.background is not None and not self.background.served.is_set()

        def hopeless(until: float) -> bool:  # it will not be done in time at its pace so far (`Pace`)
            left = self.background.pace.left() if self.background is not None else None
            return left is not None and left > until - anyio.current_time()

        if pending():
            deadline = anyio.current_time() + wait
            with anyio.move_on_after(wait):
                while pending() and not hopeless(deadline):
                    await anyio.sleep(_POLL)
        return not pending()

    async def ready(self) -> SearchIndex:
        """The index of the catalog as it is now, or newer; a stale one is rebuilt in a worker thread, so other
        sessions keep being served. A caller waits for one build at most: a catalog that keeps changing while it
        is built (upstreams relisting again and again) must not keep its searches waiting for a build that is
        never the last."""
        wanted = self._catalog.version
        if self._index is not None and self._version >= wanted:
            return self._index
        async with self._lock:  # one rebuild at a time; those who waited find it fresh enough
            if self._index is None or self._version < wanted:
                version = self._catalog.version
                # set_group swaps in new dicts rather than mutating, so the thread reads a consistent snapshot.
                snapshot = list(self._catalog)
                index = await anyio.to_thread.run_sync(lambda: self._build(snapshot))
                self._index, self._version = index, version
        return self._index
