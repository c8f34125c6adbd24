"""A replica's local copies of session records, kept while an invalidation channel says they are current.

Pure bookkeeping, no I/O: `redis.py` decides when the copies may be trusted (subscribed to the channel, nothing
unread on it, the key confirmed in Redis recently) and feeds this what it reads, writes and hears.

A copy is a record's stored value and its revision. Every write in Redis publishes `<key>|<rev>` (or `<key>|` when
the session was deleted); hearing a revision newer than the copy's drops the copy. A read or write in flight when
such a message is heard does not store what it got if that is older than what was heard (its reply and the message
come over different connections, so either can be seen first).
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["LocalCopies"]

_DELETED = 1 << 62
"""The revision a deletion counts as: newer than any a record reaches."""


class LocalCopies:
    """Records by session key, bounded in number and bytes (the least recently used go first)."""

    def __init__(self, *, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, tuple[int, bytes]] = OrderedDict()
        self._bytes = 0
        self._in_flight: dict[str, list[int]] = {}
        """Per key with reads or writes in flight: [how many, the newest revision heard meanwhile]."""
        self._epoch = 0
        self.trusted = False
        """Whether invalidations are being heard now; while not, nothing is kept or served."""

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """Bytes of the values kept."""
        return self._bytes

    def get(self, key: str) -> bytes | None:
        if not self.trusted:
            return None
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def begin(self, key: str) -> int:
        """A read or write of `key` starts; pass what this returns to `end`."""
        slot = self._in_flight.get(key)
        if slot is None:
            self._in_flight[key] = [1, -1]
        else:
            slot[0] += 1
        return self._epoch

    def end(self, key: str, token: int, rev: int | None, value: bytes | None) -> None:
        """It ended with `value` at revision `rev` (None: the key is not in Redis): kept unless something newer was
        heard meanwhile, or the copies were dropped since it began."""
        slot = self._in_flight[key]
        slot[0] -= 1
        heard = slot[1]
        if slot[0] == 0:
            del self._in_flight[key]
        if value is None or rev is None:
            self.drop(key)
        elif self.trusted and token == self._epoch and heard <= rev:
            self._keep(key, rev, value)

    def heard(self, key: str, rev: int | None) -> None:
        """Redis published that `key` was written at `rev` (None: deleted)."""
        newest = _DELETED if rev is None else rev
        slot = self._in_flight.get(key)
        if slot is not None and newest > slot[1]:
            slot[1] = newest
        entry = self._entries.get(key)
        if entry is not None and entry[0] < newest:
            self.drop(key)

    def drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= len(entry[1])

    def trust(self) -> None:
        """Invalidations are heard from now on: what was kept before may have missed some, so it goes."""
        self._clear()
        self.trusted = True

    def distrust(self) -> None:
        """Invalidations may be missed from now on: nothing is kept or served until `trust`."""
        self.trusted = False
        self._clear()

    def _clear(self) -> None:
        self._entries.clear()
        self._bytes = 0
        self._epoch += 1  # reads in flight store nothing

    def _keep(self, key: str, rev: int, value: bytes) -> None:
        entry = self._entries.get(key)
        if entry is not None and entry[0] > rev:
            return  # a write of this replica's own, newer than this read
        self.drop(key)
        if len(value) > self.max_bytes:
            return
        self._entries[key] = (rev, value)
        self._bytes += len(value)
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            _, (_, gone) = self._entries.popitem(last=False)
            self._bytes -= len(gone)
