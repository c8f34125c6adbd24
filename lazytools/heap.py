"""The heap after start-up: what was built to serve (the catalog, the search index, the modules) is kept out of the
cyclic garbage collector's way.

CPython's collector walks every tracked object of the generations it collects; each full collection would walk the
catalog and index again, though they live as long as the process. `gc.freeze()` moves every object alive at the
end of start-up into a permanent generation the collector never walks. Reference counting still frees them when
they are dropped (a catalog rebuilt after an upstream's change); only a reference cycle among them would outlive its
use, and start-up builds each such structure once.
"""

from __future__ import annotations

import gc
import logging

__all__ = ["settle"]


def settle() -> int:
    """Collect start-up's garbage, then freeze what remains; the number of objects now frozen."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    logging.getLogger(__name__).debug("start-up heap: %d objects frozen out of the collector's walks", frozen)
    return frozen
