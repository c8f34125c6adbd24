"""The answers to the last few queries of one index: a bounded, thread-safe map, the least recently used first out.

An index never changes once built (a changed catalog gets a new index), so what it answered for a query holds for as
long as the index lives; what could change it (embeddings arriving, a restricted view) clears or gets its own map.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["RecentAnswers"]

V = TypeVar("V")


class RecentAnswers(Generic[V]):
    """At most `size` answers by key; reading one makes it the most recently used."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._answers: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()  # searches run in worker threads and on the event loop at once

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None:
                self._answers.move_to_end(key)
            return answer

    def put(self, key: Hashable, answer: V) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._answers[key] = answer
            self._answers.move_to_end(key)
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()
