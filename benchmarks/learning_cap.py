"""The learning store's "count each source once" memory at its cap: the cost of one more record there.

    python -m benchmarks.learning_cap [--cap 1000000] [--records 20000]

Fills the memory to `--cap` patterns, then times `--records` more, each of a new source and pattern (every one evicts):
- `dict, del d[next(iter(d))]`: the structure before #30 item 4, rebuilt here as it was. A dict does not reuse the
  slots at its front, so finding the oldest key walks every slot deleted before it: the cost grows with each
  eviction until the dict is next resized;
- `Counted` (lazytools/learning/counted.py): per source, in an OrderedDict; the oldest source leaves by `popitem`.
Prints microseconds per record for the first and the last thousand records past the cap.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from lazytools.learning.counted import Counted


def _old(cap: int) -> Callable[[str, tuple[str, ...]], bool]:
    counted: dict[tuple[str, ...], None] = {}

    def first(source: str, pattern: tuple[str, ...]) -> bool:
        key = (source, *pattern)
        if key in counted:
            return False
        counted[key] = None
        if len(counted) > cap:
            del counted[next(iter(counted))]
        return True
    return first


def _new(cap: int) -> Callable[[str, tuple[str, ...]], bool]:
    return Counted(limit=cap, per_source=1).first


def _run(name: str, first: Callable[[str, tuple[str, ...]], bool], cap: int, records: int) -> None:
    for number in range(cap):
        first(f"fill{number}", ("t", "x", "y"))
    spans: list[float] = []
    for block in range(records // 1_000):
        began = time.perf_counter()
        for number in range(1_000):
            first(f"new{block}-{number}", ("t", "x", "y"))
        spans.append((time.perf_counter() - began) / 1_000 * 1e6)
    print(f"{name:32s} first 1k past the cap {spans[0]:9.2f} us/record, last 1k {spans[-1]:9.2f} us/record")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=int, default=1_000_000)
    parser.add_argument("--records", type=int, default=20_000)
    args = parser.parse_args()
    _run("dict, del d[next(iter(d))]", _old(args.cap), args.cap, args.records)
    _run("Counted (OrderedDict per source)", _new(args.cap), args.cap, args.records)


if __name__ == "__main__":
    main()
