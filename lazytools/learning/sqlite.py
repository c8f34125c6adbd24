"""The usage store of one machine: records in one SQLite file under the cache directory (WAL: several
lazytools processes may share it), bounded in rows, a damaged file moved aside."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from .keys import check_trusted
from .records import LOAD_LIMIT, CallRecord, Record, SearchRecord, UsageStore

__all__ = ["KEEP_ROWS", "SqliteUsageStore", "open_sqlite"]

logger = logging.getLogger("lazytools.usage")

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
            check_trusted(self.path)  # one found here, not made here: planted by another user?
        for suffix in ("-wal", "-shm"):  # sqlite3 reads these with the file: records could come in through them
            beside = self.path.with_name(self.path.name + suffix)
            if beside.exists() or beside.is_symlink():
                check_trusted(beside)
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



def open_sqlite(directory: Path) -> Callable[[], UsageStore]:
    """The opener of the SQLite store in `directory` (usage.sqlite3), for `UsageLog`."""
    return lambda: SqliteUsageStore(directory / "usage.sqlite3")
