"""Related words: a shipped table of English word stems and the stems nearest in meaning, for query expansion.

"current price of bitcoin" shares no word with "the latest stocks, cryptocurrencies and options", yet bitcoin's
neighbours are crypto, cryptocurrency, btc, blockchain. The table (`data/related_words.tsv.gz`, ~15,000 stems,
2 MB) was distilled offline from all-MiniLM-L6-v2 word vectors over the cl100k vocabulary by
`scripts/build_related_words.py`: general vocabulary, no model and no download at run time, and nothing drawn
from any evaluation set. A query term's neighbours that the catalog uses are added at a weight that falls with the
square of their similarity, so "remove" (0.76 from delete) counts for ~0.4 of "delete" and a 0.5 neighbour ~0.18.
"""

from __future__ import annotations

import gzip
from collections.abc import Container, Iterable, Mapping
from functools import lru_cache
from itertools import compress, islice
from pathlib import Path

from .config import DEFAULT

__all__ = ["DATA_FILE", "RelatedWords", "default_related_words"]

DATA_FILE = Path(__file__).with_name("data") / "related_words.tsv.gz"

Neighbours = tuple[tuple[str, float], ...]


class RelatedWords:
    """Stem → its neighbours (stem, similarity), best first; a row is parsed when looked up (each index keeps
    what it looked up for its own catalog, see `query.catalog_expansions`)."""

    def __init__(self, rows: Mapping[str, str]) -> None:
        self._rows = rows
        self._scaled: dict[float, _Scaled] = {}

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> RelatedWords:
        """Lines of `stem<TAB>neighbour:percent neighbour:percent …`; `#` lines are comments."""
        rows: dict[str, str] = {}
        for line in lines:
            if line and not line.startswith("#"):
                key, _, rest = line.partition("\t")
                rows[key] = rest
        return cls(rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, term: object) -> bool:
        return term in self._rows

    def neighbours(self, term: str) -> Neighbours:
        return _parse(self._rows.get(term, ""))

    def expansions(self, term: str, weight: float = DEFAULT.related_weight, within: Container[str] | None = None,
                   most: int | None = None) -> list[tuple[str, float]]:
        """The neighbours of `term` with the weight each adds to a query: weight * similarity**2 (sim**2 beat a flat
        weight and a linear one on MetaTool's halves); only those `within` holds, when given (a catalog's words), and
        the first `most` of those, when given.

        With `within`, a neighbour is looked up before its similarity is read: a row lists some forty, a catalog
        uses a few of them, and each new word of a request reads its row once."""
        row = self._rows.get(term, "")
        parts = row.replace(":", " ").split()
        if len(parts) != 2 * row.count(":"):  # not plain `term:percent` items: read item by item
            return [(other, weight * similarity * similarity) for other, similarity in _parse(row, within)][:most]
        # A row's words and percents read by C loops (a row lists some forty), and each percent's weight worked out
        # once per weight: a request's new words each read a row while it waits.
        scaled = self._scaled.get(weight)
        if scaled is None:
            scaled = self._scaled[weight] = _Scaled(weight)
        terms = parts[::2]
        pairs = zip(terms, parts[1::2])
        kept = pairs if within is None else compress(pairs, map(within.__contains__, terms))
        return [(other, scaled[percent]) for other, percent in (kept if most is None else islice(kept, most))]


class _Scaled(dict[str, float]):
    """A row's percent as written -> the weight its neighbour adds: `weight` * similarity**2."""

    def __init__(self, weight: float) -> None:
        super().__init__()
        self.weight = weight

    def __missing__(self, percent: str) -> float:
        similarity = int(percent) / 100
        added = self[percent] = self.weight * similarity * similarity
        return added


def _parse(row: str, within: Container[str] | None = None) -> Neighbours:
    """A row's `term:percent` items as (term, similarity), only the terms `within` holds when it is given."""
    found: list[tuple[str, float]] = []
    for item in row.split():
        term, _, percent = item.rpartition(":")
        if within is None or term in within:
            found.append((term, int(percent) / 100))
    return tuple(found)


@lru_cache(maxsize=1)
def default_related_words() -> RelatedWords:
    """The shipped table, read once per process (~80 ms)."""
    with gzip.open(DATA_FILE, "rt", encoding="utf-8") as table:
        return RelatedWords.from_lines(table.read().splitlines())
