"""The usage log's queue: the request path only appends a record; the writer thread makes it storable, counts it and
writes bursts in batches; a full queue drops (said once, bounded); a writer that fails never fails a call."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from lazytools import build_server
from lazytools.learning import log as usage_log
from lazytools.learning.keys import hashed_terms
from lazytools.learning.log import BATCH_LIMIT, UsageLog
from lazytools.learning.records import CallRecord, Record, SearchRecord
from lazytools.learning.sqlite import SqliteUsageStore, open_sqlite

from .conftest import client, make_settings, text_of
from .helpers import eventually
from .test_learning import QUERY, notes_catalog


class _GatedStore(SqliteUsageStore):
    """A SQLite store whose first write waits for the test to open the gate: records queue up meanwhile."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.sizes: list[int] = []

    def write(self, records: Sequence[Record]) -> None:
        if not self.sizes:
            self.entered.set()
            if not self.gate.wait(60):
                raise OSError("the test never opened the gate")
        self.sizes.append(len(records))
        super().write(records)


def _call(number: int, session: str = "s1") -> CallRecord:
    return CallRecord(at=time.time(), session=session, tool=f"tool_{number % 7}", ok=True, search="q",
                      terms=hashed_terms("roll back the deployment"))


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        count: int = db.execute("SELECT count(*) FROM calls").fetchone()[0]
    return count


def test_a_burst_of_calls_is_written_in_batches_and_every_record_arrives(tmp_path: Path) -> None:
    store = _GatedStore(tmp_path / "usage.sqlite3")
    log = UsageLog(lambda: store)
    log.record(_call(0))
    assert store.entered.wait(30)  # the writer holds the first record, in the store
    burst = 2 * BATCH_LIMIT + 37
    for number in range(1, burst + 1):
        log.record(_call(number, session=f"s{number % 5}"))
    store.gate.set()
    assert log.flushed(30)
    log.close()
    # One write for the first record, then the burst in full batches and the rest: not a write per record.
    assert store.sizes == [1, BATCH_LIMIT, BATCH_LIMIT, 37]
    assert log.stored == burst + 1 and log.batches == 4 and log.dropped == 0
    assert _rows(tmp_path / "usage.sqlite3") == burst + 1
    assert sum(log.prior.called.values()) == pytest.approx(burst + 1, rel=1e-3)  # all counted into the prior


def test_a_full_queue_drops_what_comes_past_it_with_one_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(usage_log, "QUEUE_LIMIT", 50)
    store = _GatedStore(tmp_path / "usage.sqlite3")
    log = UsageLog(lambda: store)
    log.record(_call(0))
    assert store.entered.wait(30)
    with caplog.at_level(logging.WARNING, logger="lazytools.usage"):
        for number in range(1, 120):
            log.record(_call(number))
    warnings = [r.getMessage() for r in caplog.records if "faster than they are written" in r.getMessage()]
    assert len(warnings) == 1
    assert log.dropped == 119 - 50  # bounded: at most QUEUE_LIMIT wait, whatever comes
    store.gate.set()
    assert log.flushed(30)
    log.close()
    assert log.stored == 51 and _rows(tmp_path / "usage.sqlite3") == 51


class _WhereHashed(UsageLog):
    """Notes the thread that makes a record storable (a shared store's session hash)."""

    threads: set[int]

    def stored_source(self, source: str) -> str:
        self.threads.add(threading.get_ident())
        return super().stored_source(source)


def test_the_caller_only_queues_a_record_the_writer_hashes_and_bounds_it(tmp_path: Path) -> None:
    log = _WhereHashed(open_sqlite(tmp_path), shared=True, poll=60)
    log.threads = set()
    log.start()
    assert log.loaded.wait(30) and not log.failed
    log.record(SearchRecord(id="a", at=time.time(), session="session-id", terms=hashed_terms(QUERY) * 30,
                            returned=("notes/search_notes",), enabled=(), request="x" * 5000))
    log.record(_call(1, session="session-id"))
    assert log.flushed(30)
    log.close()
    assert log.threads and threading.get_ident() not in log.threads  # hashed on the writer thread only
    with sqlite3.connect(tmp_path / "usage.sqlite3") as db:
        searched = db.execute("SELECT session, request, terms FROM searches").fetchall()
        called = db.execute("SELECT session FROM calls").fetchall()
    (session, request, terms), = searched
    assert session == log.stored_source("session-id") != "session-id" and called == [(session,)]
    assert len(request) == 500 and len(terms.split("\n")) == 64


class _BuggyStore(SqliteUsageStore):
    """A store with a bug: every write raises what no store should."""

    def write(self, records: Sequence[Record]) -> None:
        raise RuntimeError("a bug in the store")


@pytest.mark.anyio
async def test_a_writer_that_fails_never_fails_a_call(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    usage = UsageLog(lambda: _BuggyStore(tmp_path / "usage.sqlite3"))
    server = build_server(notes_catalog(), make_settings(learn=True, cache_dir=tmp_path), usage=usage)
    with caplog.at_level(logging.WARNING, logger="lazytools.usage"):
        async with client(server) as session:
            assert "search_notes" in text_of(await session.call_tool("search_tools", {"query": QUERY}))
            for number in range(20):
                result = await session.call_tool("search_notes", {"words": f"budget {number}"})
                assert not result.is_error
            await eventually(lambda: usage.failed)  # the writer stopped on the bug...
            result = await session.call_tool("search_notes", {"words": "after the failure"})
            assert not result.is_error and "after the failure" in text_of(result)  # ...and calls go on
    assert any("usage learning stopped" in r.getMessage() for r in caplog.records)
