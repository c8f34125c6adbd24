"""The usage log: the request path appends each record to a bounded queue and nothing more; one writer thread
makes it storable (a shared store's session hash, the bounds on its text), counts it into the prior and writes it
to the store in batches, so none of that runs on the event loop; it reads the store's history first, and with a
store replicas share, what the others recorded since."""

from __future__ import annotations

import atexit
import hashlib
import logging
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from .keys import install_key
from .prior import UsagePrior
from .records import MAX_REQUEST_CHARS, MAX_SEARCH_TERMS, CallRecord, Record, SearchRecord, UsageStore
from .view import PriorView

__all__ = ["BATCH_LIMIT", "BATCH_SECONDS", "QUEUE_LIMIT", "UsageLog"]

logger = logging.getLogger("lazytools.usage")

QUEUE_LIMIT = 10_000
"""Records waiting for the writer thread; past it new ones are dropped (and said so once)."""
BATCH_SECONDS = 0.25
"""How long the writer thread, woken by a record, lets more arrive before it counts and writes them: a burst of
calls is one write to the store (one transaction), not one each; `flushed` and `close` do not wait for it."""
BATCH_LIMIT = 500
"""Records written to the store at once, at most."""

_STOP = object()

PAUSE_FIRST = 0.5
PAUSE_MAX = 30.0
"""After the store failed, the writer tries it again after PAUSE_FIRST seconds, doubling up to PAUSE_MAX; records
made meanwhile are learnt in memory but not stored."""
NEWER_PAGES = 10
NEWER_PAGE = 1_000
"""At most NEWER_PAGES reads of NEWER_PAGE records of each kind per poll of a shared store: a replica far behind
catches up over several polls, and one poll stays bounded."""


def _bounded(record: SearchRecord, keep_requests: bool) -> SearchRecord:
    """A search record bounded in bytes, not only in rows: a query of thousands of words stores its start."""
    request = record.request[:MAX_REQUEST_CHARS] if keep_requests and record.request else None
    return SearchRecord(record.id, record.at, record.session, record.terms[:MAX_SEARCH_TERMS], record.returned,
                        record.enabled, request)


class UsageLog:
    """Records usage into a store on one writer thread and keeps the prior up to date in memory.

    Nothing here blocks the caller: records go to a bounded queue; the thread counts them into the prior and
    writes them in batches and, first of all, reads the store's history into the prior. Counting is the thread's
    too, so the prior's upkeep (its memory of who counted what, at its cap) never runs on the event loop.
    With `shared` (a store several replicas write), the hashing key is the store's, records are refused until the
    thread has read it, and every `poll` seconds the thread reads what the other replicas recorded into the prior.
    A store that fails pauses storing (one warning) until it answers again (one line); learning in memory and
    serving go on."""

    def __init__(self, open_store: Callable[[], UsageStore], *, keep_requests: bool = True,
                 key_file: Path | None = None, shared: bool = False, poll: float = 2.0,
                 prior: UsagePrior | None = None) -> None:
        self.prior = prior if prior is not None else UsagePrior()
        self.failed = False
        self.shared = shared
        self.poll = poll
        self._keyed = not shared
        if key_file is not None:
            try:
                key_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self.prior.key = install_key(key_file)
            except OSError as exc:
                logger.warning("usage is not recorded: its hashing key could not be read or made (%s)", exc)
                self.failed = True
        self.keep_requests = keep_requests
        self._open_store = open_store
        self._pending: deque[object] = deque()
        """Records (and the writer's orders: a flush's event, the stop) in arrival order. An append is all the
        request path does: no lock is taken, and the writer is woken only when it is not awake already."""
        self._wake = threading.Event()
        self._urgent = threading.Event()
        """Set with a flush or a stop: the writer does not wait for the batch to fill."""
        self._thread: threading.Thread | None = None
        self._started = threading.Lock()
        self._dropped = False
        self._skipped = False
        self._paused_at: float | None = None
        self._pause = PAUSE_FIRST
        self._retry_at = 0.0
        self._lost = 0
        self._history_read = False
        self.loaded = threading.Event()
        """Set once the store's history is in the prior, or the first attempt to read it failed."""
        self.stored = 0
        """Records written to the store so far (tests, the command line)."""
        self.dropped = 0
        """Records dropped because the queue was full."""
        self.batches = 0
        """Writes to the store so far (each of up to BATCH_LIMIT records)."""

    @property
    def paused(self) -> bool:
        """Whether the store failed and is not answering yet (records are not stored meanwhile)."""
        return self._paused_at is not None

    def start(self) -> None:
        """Open the store and read its history on the writer thread (idempotent)."""
        with self._started:
            if self.failed:
                self.loaded.set()
                return
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="lazytools-usage", daemon=True)
            self._thread.start()
            atexit.register(self.close)

    def stored_source(self, source: str) -> str:
        """What records of `source` (server/learning.py) carry as their session once recorded."""
        if self.shared:
            return hashlib.blake2b(source.encode(), digest_size=8, key=self.prior.key).hexdigest()
        return source

    def seen_by(self, source: str) -> PriorView:
        """The prior as `source` may read it (others' patterns only above the floor: `UsagePrior.seen_by`)."""
        return self.prior.seen_by(self.stored_source(source))

    def record(self, record: Record) -> None:
        """Queue `record` for the writer thread (never blocks, never raises): the request path's whole share of
        learning. Past QUEUE_LIMIT waiting records it is dropped, said once."""
        if self.failed or not self._keyed:
            return  # a shared store's key is not known yet: terms hashed now would match nobody's
        if self._thread is None:
            self.start()
        pending = self._pending
        if len(pending) >= QUEUE_LIMIT:
            self.dropped += 1
            if not self._dropped:
                self._dropped = True
                logger.warning("usage records are arriving faster than they are written: some are dropped")
            return
        pending.append(record)
        if not self._wake.is_set():
            self._wake.set()

    def _storable(self, record: Record) -> Record:
        """`record` as the store keeps it (on the writer thread): a shared store's session as a keyed hash, a
        search's terms and text bounded."""
        if self.shared:
            # Other replicas' operators read this store: a session is known by a keyed hash of its id (the id is
            # a credential of the live session), the same on every replica that serves it.
            record = replace(record, session=self.stored_source(record.session))
        return _bounded(record, self.keep_requests) if isinstance(record, SearchRecord) else record

    def flushed(self, timeout: float = 10.0) -> bool:
        """Wait until every record queued so far is counted into the prior and written, or dropped for a paused
        store (tests, the command line); False on timeout."""
        if self._thread is None or self.failed:
            return True
        done = threading.Event()
        self._order(done)
        return done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        self._order(_STOP)
        thread.join(timeout)

    def _order(self, order: object) -> None:
        """Queue an order for the writer (past the records already queued), to be carried out without waiting."""
        self._pending.append(order)
        self._urgent.set()
        self._wake.set()

    def _run(self) -> None:
        try:
            store = self._open_store()
        except (OSError, sqlite3.Error) as exc:
            logger.warning("usage is not recorded: the store could not be opened (%s)", exc)
            self.failed = True
            self.loaded.set()
            return
        try:
            self._ready(store)
            self._write_until_stopped(store)
        except Exception:  # a bug, not the store's trouble: said loudly, and learning stops rather than hangs
            logger.exception("usage learning stopped: its writer thread failed; search goes on without recording")
            self.failed = True
            self.loaded.set()
        finally:
            store.close()

    def _ready(self, store: UsageStore) -> bool:
        """Read the shared key and the history once the store answers; whether it has (else the next poll tries)."""
        if self._history_read:
            return True
        if self.shared:
            try:
                key = store.shared_key()
            except (OSError, sqlite3.Error) as exc:
                self._failed(exc)
                self.loaded.set()
                return False
            if key is not None:
                self.prior.key = key
        try:
            history: list[Record] = [*store.searches(), *store.calls()]
        except (OSError, sqlite3.Error) as exc:
            if self.shared:
                self._failed(exc)
                self.loaded.set()
                return False
            logger.warning("usage history could not be read (%s); learning from this run only", exc)
            history = []
        self._answered()
        history_prior = self.prior.empty_like()
        for record in history:
            self._learn(history_prior, record)
        self.prior.merge(history_prior)
        self._history_read = True
        self._keyed = True
        self.loaded.set()
        return True

    def _same_key(self, store: UsageStore) -> bool:
        """Adopt the store's hashing key if it changed (a Redis restarted empty gets a new one from the first
        replica to ask: every replica reads it again here, so all hash alike again); False if the store failed."""
        try:
            key = store.shared_key()
        except (OSError, sqlite3.Error) as exc:
            self._failed(exc)
            return False
        if key is not None and key != self.prior.key:
            logger.warning("the shared usage store holds a new hashing key (it lost its data?): using it")
            self.prior.key = key
        return True

    def _learn(self, prior: UsagePrior, record: Record) -> None:
        """Add a record read from the store: one that cannot be counted (the store holds what something else
        wrote) is skipped, said once, and never stops the thread."""
        try:
            prior.add(record)
        except (ValueError, TypeError, ArithmeticError) as exc:
            if not self._skipped:
                self._skipped = True
                logger.warning("a usage record in the store could not be counted (%s: %s): such records are "
                               "skipped", type(exc).__name__, exc)

    def _failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        if self._paused_at is None:
            logger.warning("usage store unavailable (%s): learning is paused, the store is tried again shortly", exc)
            self._paused_at = now
            self._pause = PAUSE_FIRST
        else:
            self._pause = min(self._pause * 2, PAUSE_MAX)
        self._retry_at = now + self._pause

    def _answered(self) -> None:
        if self._paused_at is not None:
            logger.warning("usage store answers again: learning is stored again (%d records made meanwhile were "
                           "not stored)", self._lost)
            self._paused_at = None
            self._lost = 0

    def _write(self, store: UsageStore, batch: list[Record]) -> None:
        if self._paused_at is not None and time.monotonic() < self._retry_at:
            self._lost += len(batch)
            return
        if not self._ready(store):
            self._lost += len(batch)
            return
        try:
            store.write(batch)
        except (OSError, sqlite3.Error) as exc:
            self._lost += len(batch)
            self._failed(exc)
            return
        self.stored += len(batch)
        self.batches += 1
        self._answered()

    def _catch_up(self, store: UsageStore) -> None:
        """Add what other processes recorded since the last read to the prior (bounded per poll)."""
        if self._paused_at is not None and time.monotonic() < self._retry_at:
            return
        if not self._ready(store):
            return
        if self.shared and not self._same_key(store):
            return
        for _ in range(NEWER_PAGES):
            try:
                records = store.newer(NEWER_PAGE)
            except (OSError, sqlite3.Error) as exc:
                self._failed(exc)
                return
            self._answered()
            for record in records:
                self._learn(self.prior, record)
            if len(records) < NEWER_PAGE:
                return

    def _write_until_stopped(self, store: UsageStore) -> None:
        next_poll = time.monotonic() + self.poll
        while True:
            self._wake.wait(max(0.0, next_poll - time.monotonic()) if self.shared else None)
            if self._pending and not self._urgent.is_set():
                self._urgent.wait(BATCH_SECONDS)  # a burst's records arrive meanwhile: one batch, one write
            # Cleared before the queue is read: whatever arrives after this wakes the thread again.
            self._wake.clear()
            self._urgent.clear()
            stop = self._drain(store)
            if self.shared and time.monotonic() >= next_poll:
                self._catch_up(store)
                next_poll = time.monotonic() + self.poll
            if stop:
                return

    def _drain(self, store: UsageStore) -> bool:
        """Count and write what is queued now, in batches of BATCH_LIMIT; set the flushes' events after; whether
        the stop was ordered."""
        pending = self._pending
        batch: list[Record] = []
        waiters: list[threading.Event] = []
        stop = False
        for _ in range(len(pending)):  # what is queued now; a record queued later wakes the thread again
            item = pending.popleft()
            if item is _STOP:
                stop = True
            elif isinstance(item, threading.Event):
                waiters.append(item)
            elif isinstance(item, (SearchRecord, CallRecord)):
                batch.append(self._storable(item))
                if len(batch) >= BATCH_LIMIT:
                    self._take(store, batch)
                    batch = []
        if batch:
            self._take(store, batch)
        for waiter in waiters:
            waiter.set()
        return stop

    def _take(self, store: UsageStore, batch: list[Record]) -> None:
        for record in batch:
            self._learn(self.prior, record)
        self._write(store, batch)
