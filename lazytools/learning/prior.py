"""Search that learns from use: what sessions searched for, which tools they then called, and a prior from it.

Every search is recorded with the tools it returned and enabled; every call of a catalog tool with whether it
succeeded, the search that found it and the tool called just before it in the same session. From those records
`UsagePrior` keeps, decayed by age (half-life `HALF_LIFE_DAYS`):
- for each query term (a keyed hash of its stem: the store never needs the words), how often each tool was called
  after a search holding it, against how many searches held it;
- for each tool, which tools were called right after it.
Search uses the first as a bounded boost among tools that already clear the relevance floor (`search.prior.reorder`), and the
second to suggest a tool usually called next (`companions`). The records are kept by a `UsageStore`: SQLite under
the cache directory here, or Redis shared by replicas (`redis_store.py`), whose records other processes add are
read back into the prior as they come (`UsageStore.newer`). Reads and writes happen on one writer thread
(`UsageLog`), never on the event loop.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import math
import os
import queue
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from ..search.analysis import tokenize

__all__ = [
    "HALF_LIFE_DAYS",
    "KEEP_ROWS",
    "KEY_FILE",
    "MAX_REQUEST_CHARS",
    "MAX_SEARCH_TERMS",
    "CallRecord",
    "SearchRecord",
    "SqliteUsageStore",
    "ToolUsage",
    "UsageLog",
    "UsagePrior",
    "UsageStore",
    "UsageSummary",
    "UsageUnavailableError",
    "hashed_terms",
    "install_key",
    "open_sqlite",
    "plausible",
    "summarize",
]

logger = logging.getLogger("lazytools.usage")

HALF_LIFE_DAYS = 30.0
"""A record counts half as much after this many days: what a team used last month still helps, last year's less."""

MIN_EVIDENCE = 0.5
"""A query term informs the prior once searches holding it add up to this much (decayed): one search of the last
half-life."""

COMPANION_MIN = 1.5
"""A tool is suggested after another once it was called right after it this much (decayed: two recent calls)..."""
COMPANION_SHARE = 0.25
"""...and in at least this share of the calls that followed the other one."""
MIN_SESSIONS = 3
"""Distinct sessions that must show a pattern (a tool called after such requests, or right after another tool)
before it moves a tool up or suggests one: one session repeating itself teaches nothing to the others. A record's
`session` is who it counts for: an OAuth user's records all carry one (server/learning.py), so it takes three
users, not three sessions of one."""
MAX_COUNTED = 1_000_000
"""(session, term, tool) and (session, tool, next tool) keys remembered so that a session counts once per pair (the
oldest are forgotten first)."""

MAX_TERMS = 50_000
"""Query terms the prior keeps (the least used leave first): bounds its memory whatever the store holds."""
MAX_TOOLS_PER_TERM = 32
LOAD_LIMIT = 200_000
"""Records of each kind read from the store at start, newest first."""
MAX_REQUEST_CHARS = 500
"""Characters of a request's text stored."""
MAX_SEARCH_TERMS = 64
"""Hashed terms stored per search (the first ones)."""
QUEUE_LIMIT = 10_000
"""Records waiting for the writer thread; past it new ones are dropped (and said so once)."""

_TEST_KEY = b"lazytools-usage-1"
"""The key of a prior built without an install's key (tests, `UsagePrior()` alone): never the one a store uses."""
KEY_FILE = "usage.key"
_KEY_BYTES = 32


@lru_cache(maxsize=256)  # a served search asks twice: for the prior's boosts, then for the record of it
def hashed_terms(query: str, key: bytes = _TEST_KEY) -> tuple[str, ...]:
    """The query's index terms (stems, stop words dropped), each as a 64-bit hash keyed with `key`: what the store
    keeps. Pseudonymous, not anonymous: whoever holds the key can hash a word list and match the terms."""
    return tuple(_term_hash(term, key) for term in dict.fromkeys(tokenize(query)))


MAX_CACHED_HASHES = 65_536
"""Distinct (key, term) hashes `_term_hash` keeps; past it the cache starts afresh."""
MAX_CACHED_TERM_CHARS = 64
"""Longer terms are hashed each time, so the cache's memory stays bounded."""
_hashes: dict[tuple[bytes, str], str] = {}


def _term_hash(term: str, key: bytes) -> str:
    """One term's keyed hash, kept per distinct term: a request's words recur across requests that differ."""
    found = _hashes.get((key, term))
    if found is None:
        found = hashlib.blake2b(term.encode(), digest_size=8, key=key).hexdigest()
        if len(term) <= MAX_CACHED_TERM_CHARS:
            if len(_hashes) >= MAX_CACHED_HASHES:
                _hashes.clear()
            _hashes[(key, term)] = found
    return found


def install_key(path: Path) -> bytes:
    """This install's random hashing key in `path` (created 0600 on first use; a symlink is refused), so the hashes
    in one store cannot be matched with a key read from elsewhere."""
    if path.is_symlink():
        raise OSError(f"{path} is a symbolic link: not followed")
    try:
        made = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        with open(path, "rb") as existing:
            key = existing.read(_KEY_BYTES + 1)
        if len(key) != _KEY_BYTES:
            raise OSError(f"{path} does not hold a {_KEY_BYTES}-byte key") from None
        return key
    key = secrets.token_bytes(_KEY_BYTES)
    with os.fdopen(made, "wb") as out:
        out.write(key)
    return key


@dataclass(frozen=True, slots=True)
class SearchRecord:
    id: str
    at: float
    session: str
    terms: tuple[str, ...]
    returned: tuple[str, ...]
    enabled: tuple[str, ...]
    request: str | None = None
    """The request's text, unless the operator keeps it out of the store (then only `terms`)."""


@dataclass(frozen=True, slots=True)
class CallRecord:
    at: float
    session: str
    tool: str
    ok: bool
    search: str | None = None
    """The id of the session's latest search that returned this tool, if any."""
    terms: tuple[str, ...] = ()
    """That search's terms."""
    after: str | None = None
    """The tool this session called just before, if any."""


Record = SearchRecord | CallRecord


class UsageUnavailableError(OSError):
    """The store cannot be reached now (a shared store's server is down or slow): learning pauses, then resumes."""


class UsageStore(Protocol):
    """Where usage records are kept. Called from one worker thread at a time, never from the event loop; trouble
    is an OSError (or sqlite3.Error), `UsageUnavailableError` when it may pass."""

    def write(self, records: Sequence[Record]) -> None: ...
    def searches(self, limit: int = LOAD_LIMIT) -> list[SearchRecord]:
        """The newest `limit` search records, oldest first."""
        ...
    def calls(self, limit: int = LOAD_LIMIT) -> list[CallRecord]:
        """The newest `limit` call records, oldest first."""
        ...
    def newer(self, limit: int) -> list[Record]:
        """Records other processes added since the last read (`searches`, `calls` or this), oldest first, at most
        `limit` of each kind: what keeps the prior of a replica up to date with the others'. A store nobody else
        writes returns none."""
        ...
    def shared_key(self) -> bytes | None:
        """The hashing key every process sharing this store uses, made by the first one (None: the store keeps
        none, the install's key file is used)."""
        ...
    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS searches (
    id TEXT PRIMARY KEY, at REAL NOT NULL, session TEXT NOT NULL, terms TEXT NOT NULL,
    returned TEXT NOT NULL, enabled TEXT NOT NULL, request TEXT
);
CREATE TABLE IF NOT EXISTS calls (
    n INTEGER PRIMARY KEY, at REAL NOT NULL, session TEXT NOT NULL, tool TEXT NOT NULL, ok INTEGER NOT NULL,
    search TEXT, terms TEXT NOT NULL, after TEXT
);
CREATE INDEX IF NOT EXISTS searches_at ON searches (at);
CREATE INDEX IF NOT EXISTS calls_at ON calls (at);
"""

_SEP = "\n"  # tool names and hashes never hold a newline (names.py)


def _joined(items: Iterable[str]) -> str:
    return _SEP.join(items)


def _split(text: str | None) -> tuple[str, ...]:
    return tuple(text.split(_SEP)) if text else ()


KEEP_ROWS = 2 * LOAD_LIMIT
"""Rows of each kind the SQLite file keeps (the oldest go first): a busy server's file stays bounded, and what it
drops has long stopped being read."""
PRUNE_EVERY = 200
"""Writes between two prunings."""


class SqliteUsageStore:
    """Usage records in one SQLite file (stdlib sqlite3, WAL: several lazytools processes may share it)."""

    def __init__(self, path: Path, *, keep: int = KEEP_ROWS, repair: bool = True) -> None:
        """Open (or create, 0600 in a 0700 directory it makes) the store at `path`. A symbolic link is refused
        (OSError); a damaged file is renamed `.damaged` and started afresh when `repair`, else sqlite3.Error."""
        if not path.parent.exists():
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = path
        self.keep = keep
        self._writes = 0
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError as exc:
            if not repair or not _damaged(exc):
                raise
            aside = path.with_name(path.name + ".damaged")
            logger.warning("%s is damaged (%s): moved to %s, usage is recorded afresh", path, exc, aside)
            os.replace(path, aside)
            for suffix in ("-wal", "-shm"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)
            self._db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        if self.path.is_symlink():  # checked before sqlite3 opens it, which would follow the link
            raise OSError(f"{self.path} is a symbolic link: not followed")
        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
        except FileExistsError:
            pass
        # One connection, used by whichever single thread holds the store at a time (the writer thread).
        db = sqlite3.connect(self.path, timeout=5.0, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            db.execute("SELECT count(*) FROM searches").fetchone()
        except sqlite3.Error:
            db.close()
            raise
        return db

    def write(self, records: Sequence[Record]) -> None:
        searches = [(r.id, r.at, r.session, _joined(r.terms), _joined(r.returned), _joined(r.enabled), r.request)
                    for r in records if isinstance(r, SearchRecord)]
        calls = [(r.at, r.session, r.tool, int(r.ok), r.search, _joined(r.terms), r.after)
                 for r in records if isinstance(r, CallRecord)]
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO searches VALUES (?, ?, ?, ?, ?, ?, ?)", searches)
            self._db.executemany("INSERT INTO calls (at, session, tool, ok, search, terms, after) "
                                 "VALUES (?, ?, ?, ?, ?, ?, ?)", calls)
        self._writes += 1
        if self._writes % PRUNE_EVERY == 1:
            self.prune()

    def prune(self) -> None:
        """Drop all but the newest `keep` rows of each table."""
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute("DELETE FROM calls WHERE n < (SELECT n FROM calls ORDER BY n DESC LIMIT 1 OFFSET ?)",
                             (self.keep - 1,))
            self._db.execute("DELETE FROM searches WHERE at < (SELECT at FROM searches ORDER BY at DESC LIMIT 1 "
                             "OFFSET ?)", (self.keep - 1,))

    def searches(self, limit: int = LOAD_LIMIT) -> list[SearchRecord]:
        rows = self._db.execute("SELECT id, at, session, terms, returned, enabled, request FROM searches "
                                "ORDER BY at DESC LIMIT ?", (limit,)).fetchall()
        return [SearchRecord(id=row[0], at=row[1], session=row[2], terms=_split(row[3]), returned=_split(row[4]),
                             enabled=_split(row[5]), request=row[6]) for row in reversed(rows)]

    def calls(self, limit: int = LOAD_LIMIT) -> list[CallRecord]:
        rows = self._db.execute("SELECT at, session, tool, ok, search, terms, after FROM calls "
                                "ORDER BY at DESC, n DESC LIMIT ?", (limit,)).fetchall()
        return [CallRecord(at=row[0], session=row[1], tool=row[2], ok=bool(row[3]), search=row[4],
                           terms=_split(row[5]), after=row[6]) for row in reversed(rows)]

    def newer(self, limit: int) -> list[Record]:
        return []  # processes sharing the file learn from each other at their next start

    def shared_key(self) -> bytes | None:
        return None

    def close(self) -> None:
        self._db.close()


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc)
    return "malformed" in text or "not a database" in text


@dataclass(slots=True)
class _Decay:
    """Decayed counts kept as amounts at a fixed origin: adding is one multiply, no pass over old counts."""

    origin: float
    half_life: float

    def weight(self, at: float) -> float:
        return _power((at - self.origin) / self.half_life)

    def now(self, at: float) -> float:
        """What a stored amount is worth at `at` (the amounts are at the origin's scale)."""
        return _power(-(at - self.origin) / self.half_life)


_MAX_EXPONENT = 512.0
"""Half-lives a decay exponent is clamped to (2**512 is finite): a time far off never overflows a float."""
EARLIEST = 1_577_836_800.0
"""2020-01-01 UTC: a record dated before it is not one lazytools made (it is skipped)."""
MAX_SKEW = 300.0
"""Seconds a record may be dated after this process's clock (clocks of replicas differ a little); later ones are
skipped: a record of the far future would outweigh every other one."""


def _power(exponent: float) -> float:
    if not math.isfinite(exponent):
        exponent = 0.0
    return float(2.0 ** min(max(exponent, -_MAX_EXPONENT), _MAX_EXPONENT))


def plausible(at: float, now: float | None = None) -> bool:
    """Whether `at` may be the time of a record: a finite time since 2020, not later than now (plus skew)."""
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
        return False
    return EARLIEST <= at <= (time.time() if now is None else now) + MAX_SKEW


@dataclass(slots=True)
class UsagePrior:
    """Decayed evidence of which tools followed which requests and which tools, built from records."""

    half_life: float = HALF_LIFE_DAYS * 86_400.0
    origin: float = field(default_factory=time.time)
    searches_with: dict[str, float] = field(default_factory=dict)
    """Per term hash: searches that held it."""
    called_after: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per term hash: per tool, successful calls after a search that held it."""
    followed_by: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per tool: per tool, calls right after it in the same session."""
    called: dict[str, float] = field(default_factory=dict)
    """Per tool: successful calls."""
    failed: dict[str, float] = field(default_factory=dict)
    """Per tool: failed calls."""
    search_count: float = 0.0
    key: bytes = _TEST_KEY
    """The key `terms` hashes with (this install's, see `install_key`)."""
    sessions: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """Per ("t", term, tool) and ("f", tool, next tool): distinct sessions that showed it."""
    _counted: dict[tuple[str, ...], None] = field(default_factory=dict, repr=False)
    _eligible: dict[str, list[tuple[str, float]]] = field(default_factory=dict, repr=False)
    """Per term hash: the tools of `called_after` that enough sessions showed, as `boosts` reads them; dropped when
    the term's counts change (most of the prior's lookup time was re-checking every tool's sessions)."""
    _next: dict[str, tuple[float, tuple[tuple[str, float], ...]]] = field(default_factory=dict, repr=False)
    """Per tool: `_following`'s answer, dropped when its counts change."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def terms(self, query: str) -> tuple[str, ...]:
        """`query`'s hashed terms under this prior's key: what its records hold and `boosts` takes."""
        return hashed_terms(query, self.key)

    def _w(self, at: float) -> float:
        return _Decay(self.origin, self.half_life).weight(at)

    def add(self, record: Record) -> None:
        """Count one record (called on the event loop for live records: a few dict updates). A record dated
        implausibly (`plausible`: a store written by something else) is skipped."""
        if not plausible(record.at):
            return
        w = self._w(record.at)
        with self._lock:
            if isinstance(record, SearchRecord):
                self.search_count += w
                for term in record.terms:
                    if self._first(("s", record.session, term)):
                        self.searches_with[term] = self.searches_with.get(term, 0.0) + w
                if len(self.searches_with) > MAX_TERMS:
                    self._prune()
                return
            if not record.ok:
                self.failed[record.tool] = self.failed.get(record.tool, 0.0) + w
                return
            self.called[record.tool] = self.called.get(record.tool, 0.0) + w
            # A session counts once per (terms, tool) and per (tool, next tool): a pattern one session repeats
            # is not evidence for the others.
            for term in record.terms:
                if self._first(("t", record.session, term, record.tool)):
                    self._credit("t", self.called_after, term, record.tool, w)
            after = record.after
            if after is not None and after != record.tool and self._first(("f", record.session, after, record.tool)):
                self._credit("f", self.followed_by, after, record.tool, w)

    def _credit(self, kind: str, table: dict[str, dict[str, float]], key: str, tool: str, weight: float) -> None:
        """Add `weight` to `tool` under `key` in `table`; past MAX_TOOLS_PER_TERM tools the lightest leaves."""
        tools = table.setdefault(key, {})
        tools[tool] = tools.get(tool, 0.0) + weight
        if kind == "t":
            self._eligible.pop(key, None)
        else:
            self._next.pop(key, None)
        self._seen_in((kind, key, tool))
        if len(tools) > MAX_TOOLS_PER_TERM:
            gone = min(tools, key=tools.__getitem__)
            del tools[gone]
            self.sessions.pop((kind, key, gone), None)

    def _first(self, key: tuple[str, ...]) -> bool:
        """Whether `key` (a session and what it showed) is new; remembered, the oldest forgotten past MAX_COUNTED."""
        if key in self._counted:
            return False
        self._counted[key] = None
        if len(self._counted) > MAX_COUNTED:
            del self._counted[next(iter(self._counted))]
        return True

    def _seen_in(self, key: tuple[str, str, str]) -> None:
        self.sessions[key] = self.sessions.get(key, 0) + 1

    def _prune(self) -> None:
        keep = sorted(self.searches_with, key=self.searches_with.__getitem__, reverse=True)[: MAX_TERMS * 3 // 4]
        kept = set(keep)
        self.searches_with = {term: self.searches_with[term] for term in keep}
        self.called_after = {term: tools for term, tools in self.called_after.items() if term in kept}
        self.sessions = {key: n for key, n in self.sessions.items() if key[0] != "t" or key[1] in kept}
        self._eligible.clear()
        self._next.clear()

    def merge(self, other: UsagePrior) -> None:
        """Add `other`'s counts (of the same origin and half-life) to these. `other` is used up: the smaller side's
        counts are added to the larger's tables, which this prior then keeps. The lock, which searches on the event
        loop take to read the prior, is held only for that smaller side: a history of 200,000 records merged at
        start costs them no wait, only the few records made meanwhile are added under it."""
        with self._lock:
            if self._size() <= other._size():
                _add_counts(other, self)
                self.searches_with, self.called_after, self.followed_by = (other.searches_with, other.called_after,
                                                                           other.followed_by)
                self.called, self.failed, self.sessions = other.called, other.failed, other.sessions
                self._counted, self.search_count = other._counted, other.search_count
            else:
                _add_counts(self, other)
            self._eligible.clear()
            self._next.clear()
            if len(self.searches_with) > MAX_TERMS:
                self._prune()

    def _size(self) -> int:
        return len(self._counted) + len(self.sessions) + len(self.searches_with)

    def __bool__(self) -> bool:
        return bool(self.called)

    def boosts(self, terms: Sequence[str], *, at: float | None = None) -> dict[str, float]:
        """Per tool, in [0, 1]: how often it was called after searches holding these terms, each term weighted by
        how specific it is to few searches, averaged over all the query's terms (a request that shares one word of
        six with past ones gets a sixth of the evidence)."""
        if not terms or not self.called:
            return {}
        now = time.time() if at is None else at
        scale = _Decay(self.origin, self.half_life).now(now)
        with self._lock:
            total = self.search_count * scale
            sums: dict[str, float] = {}
            weight_sum = 0.0
            for term in terms:
                seen = self.searches_with.get(term, 0.0) * scale
                weight = math.log1p(max(total, 1.0) / max(seen, 1.0))
                weight_sum += weight
                if seen < MIN_EVIDENCE:
                    continue
                eligible = self._eligible.get(term)
                if eligible is None:
                    eligible = self._eligible[term] = [
                        (tool, count) for tool, count in self.called_after.get(term, {}).items()
                        if self.sessions.get(("t", term, tool), 0) >= MIN_SESSIONS]
                for tool, count in eligible:
                    # +1: one search is weak evidence; the share nears the plain share as searches add up
                    sums[tool] = sums.get(tool, 0.0) + weight * min(1.0, count * scale / (seen + 1.0))
        if weight_sum <= 0:
            return {}
        return {tool: value / weight_sum for tool, value in sums.items() if value > 0}

    def companions(self, found: Sequence[str], *, at: float | None = None) -> list[tuple[str, str]]:
        """(tool, the tool of `found` it is usually called right after), strongest first (not those of `found`)."""
        now = time.time() if at is None else at
        scale = _Decay(self.origin, self.half_life).now(now)
        shown = set(found)
        picked: dict[str, tuple[float, str]] = {}
        with self._lock:
            for name in found:
                following = self._next.get(name)
                if following is None:
                    following = self._next[name] = self._following(name)
                summed, eligible = following
                if not eligible:
                    continue
                total = summed * scale
                for tool, count in eligible:
                    value = count * scale
                    if tool not in shown and value >= COMPANION_MIN and value >= COMPANION_SHARE * total:
                        if value > picked.get(tool, (0.0, ""))[0]:
                            picked[tool] = (value, name)
        return [(tool, picked[tool][1]) for tool in sorted(picked, key=lambda tool: -picked[tool][0])]

    def _following(self, name: str) -> tuple[float, tuple[tuple[str, float], ...]]:
        """(the calls right after `name`, summed; those of the tools enough sessions showed): what `companions`
        reads, kept per tool until its counts change (the lock is held)."""
        nexts = self.followed_by.get(name)
        if not nexts:
            return 0.0, ()
        eligible = tuple((tool, count) for tool, count in nexts.items()
                         if self.sessions.get(("f", name, tool), 0) >= MIN_SESSIONS)
        return sum(nexts.values()), eligible

    def ranked_calls(self, *, at: float | None = None) -> list[tuple[str, float, float]]:
        """(tool, decayed successful calls, decayed failed calls), most called first."""
        scale = _Decay(self.origin, self.half_life).now(time.time() if at is None else at)
        with self._lock:
            tools = set(self.called) | set(self.failed)
            rows = [(tool, self.called.get(tool, 0.0) * scale, self.failed.get(tool, 0.0) * scale) for tool in tools]
        return sorted(rows, key=lambda row: (-row[1], row[0]))


def _add_counts(into: UsagePrior, source: UsagePrior) -> None:
    """Add `source`'s counts to `into`'s tables (the caller holds what locks it needs)."""
    for mine, theirs in ((into.searches_with, source.searches_with), (into.called, source.called),
                         (into.failed, source.failed)):
        for key, value in theirs.items():
            mine[key] = mine.get(key, 0.0) + value
    for nested, other_nested in ((into.called_after, source.called_after), (into.followed_by, source.followed_by)):
        for key, inner in other_nested.items():
            row = nested.setdefault(key, {})
            for tool, value in inner.items():
                row[tool] = row.get(tool, 0.0) + value
    for pair, seen in source.sessions.items():
        into.sessions[pair] = into.sessions.get(pair, 0) + seen
    for counted in source._counted:
        into._counted[counted] = None
    into.search_count += source.search_count


PIN_SESSION_SHARE = 0.25
"""A tool is suggested for ALWAYS_AVAILABLE_TOOLS once sessions that called it successfully are this share of the
sessions that called any tool (decayed): one session in four finding it first is worth its place in every list."""
MAX_PINS = 5


@dataclass(frozen=True, slots=True)
class ToolUsage:
    tool: str
    calls: float
    """Successful calls, decayed."""
    failed: float
    session_share: float
    """Sessions that called it successfully, as a share of the sessions that called any tool (decayed)."""


@dataclass(frozen=True, slots=True)
class UsageSummary:
    searches: int
    calls: int
    sessions: int
    """Sessions that searched or called a tool."""
    tools: list[ToolUsage]
    """Most called first."""
    calling: int = 0
    """Of `sessions`, those that called a tool: each tool's session share is of these."""

    def always_available(self) -> list[str]:
        """The tools worth listing from the start: used in many sessions, at most MAX_PINS."""
        return [t.tool for t in self.tools if t.session_share >= PIN_SESSION_SHARE][:MAX_PINS]


def summarize(store: UsageStore, *, now: float | None = None, half_life: float = HALF_LIFE_DAYS * 86_400.0
              ) -> UsageSummary:
    """What `lazytools usage` shows: the store's calls per tool, decayed, and in how many sessions."""
    at = time.time() if now is None else now
    calls = store.calls()
    searches = store.searches()
    per_tool: dict[str, list[float]] = {}
    tool_sessions: dict[str, dict[str, float]] = {}
    sessions: dict[str, float] = {}
    for record in calls:
        if not plausible(record.at, at):
            continue
        weight = _power(-(at - record.at) / half_life)
        row = per_tool.setdefault(record.tool, [0.0, 0.0])
        row[0 if record.ok else 1] += weight
        sessions[record.session] = max(sessions.get(record.session, 0.0), weight)
        if record.ok:
            seen = tool_sessions.setdefault(record.tool, {})
            seen[record.session] = max(seen.get(record.session, 0.0), weight)
    total = sum(sessions.values())
    tools = [ToolUsage(tool, row[0], row[1], sum(tool_sessions.get(tool, {}).values()) / total if total else 0.0)
             for tool, row in per_tool.items()]
    tools.sort(key=lambda t: (-t.calls, t.tool))
    searching = {record.session for record in searches if plausible(record.at, at)}
    return UsageSummary(len(searches), len(calls), len(searching | sessions.keys()), tools, calling=len(sessions))


_STOP = object()

PAUSE_FIRST = 0.5
PAUSE_MAX = 30.0
"""After the store failed, the writer tries it again after PAUSE_FIRST seconds, doubling up to PAUSE_MAX; records
made meanwhile are learnt in memory but not stored."""
NEWER_PAGES = 10
NEWER_PAGE = 1_000
"""At most NEWER_PAGES reads of NEWER_PAGE records of each kind per poll of a shared store: a replica far behind
catches up over several polls, and one poll stays bounded."""


class UsageLog:
    """Records usage into a store on one writer thread and keeps the prior up to date in memory.

    Nothing here blocks the caller: records go to a bounded queue (and straight into the prior, a few dict
    updates); the thread writes them in batches and, first of all, reads the store's history into the prior.
    With `shared` (a store several replicas write), the hashing key is the store's, records are refused until the
    thread has read it, and every `poll` seconds the thread reads what the other replicas recorded into the prior.
    A store that fails pauses storing (one warning) until it answers again (one line); learning in memory and
    serving go on."""

    def __init__(self, open_store: Callable[[], UsageStore], *, keep_requests: bool = True,
                 key_file: Path | None = None, shared: bool = False, poll: float = 2.0) -> None:
        self.prior = UsagePrior()
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
        self._queue: queue.Queue[object] = queue.Queue(maxsize=QUEUE_LIMIT)
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

    def record(self, record: Record) -> None:
        if self.failed or not self._keyed:
            return  # a shared store's key is not known yet: terms hashed now would match nobody's
        if self.shared:
            # Other replicas' operators read this store: a session is known by a keyed hash of its id (the id is
            # a credential of the live session), the same on every replica that serves it.
            session = hashlib.blake2b(record.session.encode(), digest_size=8, key=self.prior.key).hexdigest()
            record = replace(record, session=session)
        if isinstance(record, SearchRecord):
            # Bounded in bytes, not only in rows: a query of thousands of words stores its start.
            request = record.request[:MAX_REQUEST_CHARS] if self.keep_requests and record.request else None
            record = SearchRecord(record.id, record.at, record.session, record.terms[:MAX_SEARCH_TERMS],
                                  record.returned, record.enabled, request)
        self.start()
        self.prior.add(record)
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            if not self._dropped:
                self._dropped = True
                logger.warning("usage records are arriving faster than they are written: some are dropped")

    def flushed(self, timeout: float = 10.0) -> bool:
        """Wait until every record queued so far is written, or dropped for a paused store (tests, the command
        line); False on timeout."""
        done = threading.Event()
        if self._thread is None or self.failed:
            return True
        try:
            self._queue.put(done, timeout=timeout)
        except queue.Full:
            return False
        return done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            return
        thread.join(timeout)

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
        history_prior = UsagePrior(origin=self.prior.origin, half_life=self.prior.half_life, key=self.prior.key)
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
            try:
                item = self._queue.get(timeout=max(0.0, next_poll - time.monotonic())) if self.shared \
                    else self._queue.get()
            except queue.Empty:
                item = None
            batch: list[Record] = []
            waiters: list[threading.Event] = []
            stop = False
            while True:
                if item is _STOP:
                    stop = True
                elif isinstance(item, threading.Event):
                    waiters.append(item)
                elif isinstance(item, (SearchRecord, CallRecord)):
                    batch.append(item)
                if len(batch) >= 500:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                self._write(store, batch)
            if self.shared and time.monotonic() >= next_poll:
                self._catch_up(store)
                next_poll = time.monotonic() + self.poll
            for waiter in waiters:
                waiter.set()
            if stop:
                return


def open_sqlite(directory: Path) -> Callable[[], UsageStore]:
    """The opener of the SQLite store in `directory` (usage.sqlite3), for `UsageLog`."""
    return lambda: SqliteUsageStore(directory / "usage.sqlite3")
