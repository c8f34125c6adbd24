"""Search that learns from use, end to end: real clients search and call, a new server reads what they did."""

from __future__ import annotations

import itertools
import logging
import sqlite3
import time
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

from lazytools import Catalog, FunctionGroup, Group, LazyServer, build_server
from lazytools.learning.keys import hashed_terms
from lazytools.learning.log import UsageLog
from lazytools.learning.records import CallRecord
from lazytools.learning.sqlite import SqliteUsageStore, open_sqlite
from lazytools.learning.summary import summarize
from lazytools.report import usage_report

from .conftest import client, make_settings, text_of

QUERY = "search my notes for budget ideas"


def notes_catalog(*, with_files: bool = True) -> Catalog:
    notes = FunctionGroup("notes", summary="Personal notes.")

    @notes.tool
    def search_notes(words: str) -> list[str]:
        """Search the notes by words."""
        return [f"note about {words}"]

    @notes.tool
    def tag_note(note: str, tag: str) -> str:
        """Add a tag to a note."""
        return f"{note} #{tag}"

    files = FunctionGroup("mail", summary="Electronic mail.")

    @files.tool
    def send_email(to: str) -> str:
        """Send an email to someone."""
        if to == "nobody":
            raise ValueError("no such address")
        return f"sent to {to}"

    catalog = Catalog()
    groups = [notes, files] if with_files else [notes]
    for group in groups:
        catalog.set_group(Group(group.group, group.summary), group.entries)
    return catalog


def learning_server(cache: Path, catalog: Catalog | None = None, **overrides: object) -> LazyServer:
    settings = {"learn": True, "cache_dir": cache, **overrides}
    return build_server(catalog or notes_catalog(), make_settings(**settings))


async def _use(server: LazyServer, *, sessions: int) -> None:
    """Sessions that search for notes, call the search, then send an email (one send fails in the first session)."""
    for number in range(sessions):
        async with client(server) as session:
            found = text_of(await session.call_tool("search_tools", {"query": QUERY}))
            # send_email shares no word with the request; after three sessions that sent an email right after
            # searching their notes, it is listed with search_notes (counted on the log's writer thread once
            # each session ends, before the next starts), labelled as learnt rather than relevant.
            assert "search_notes" in found and ("send_email" in found) == (number >= 3)
            assert ("search_notes, from past sessions" in found) == (number >= 3)
            assert not (await session.call_tool("search_notes", {"words": "budget"})).is_error
            await session.call_tool("search_tools", {"tool_names": ["send_email"]})
            assert not (await session.call_tool("send_email", {"to": f"friend-{number}@example.com"})).is_error
            if number == 0:
                assert (await session.call_tool("send_email", {"to": "nobody"})).is_error
        assert server.usage is None or await anyio.to_thread.run_sync(server.usage.flushed)


@pytest.mark.anyio
async def test_what_sessions_called_is_recorded_and_a_new_server_learns_from_it(tmp_path: Path) -> None:
    first = learning_server(tmp_path)
    assert first.usage is not None
    await _use(first, sessions=4)
    assert first.usage.flushed()
    with sqlite3.connect(tmp_path / "usage.sqlite3") as db:
        calls = db.execute("SELECT tool, ok, after FROM calls ORDER BY n").fetchall()
        searched = db.execute("SELECT request, returned, enabled FROM searches WHERE request IS NOT NULL").fetchall()
    assert calls[:3] == [("search_notes", 1, None), ("send_email", 1, "search_notes"), ("send_email", 0, "send_email")]
    assert len(calls) == 9 and len(searched) == 4 and searched[0][0] == QUERY
    assert "search_notes" in searched[0][1].split("\n") and "search_notes" in searched[0][2].split("\n")
    first.usage.close()

    # A restarted server reads the history: search_notes follows such requests, send_email follows search_notes.
    second = learning_server(tmp_path)
    assert second.usage is not None and second.usage.loaded.wait(10)
    assert set(second.usage.prior.boosts(second.usage.prior.terms("look through my notes for budget ideas"))) >= {"search_notes"}
    async with client(second) as session:
        found = text_of(await session.call_tool("search_tools", {"query": "look through my notes for budget ideas"}))
    head, _, suggested = found.partition("Also possibly relevant")
    # Used with search_notes in every session: a place after the ranked ones (co-usage), labelled as learnt.
    assert "search_notes" in head and "send_email" in head and "send_email" not in suggested
    assert "often used together with search_notes, from past sessions" in head
    assert "often used for such requests" in head  # search_notes' place owes something to past sessions
    second.usage.close()

    # A server whose catalog lacks send_email never names it, whatever the history says.
    third = learning_server(tmp_path, notes_catalog(with_files=False))
    assert third.usage is not None and third.usage.loaded.wait(10)
    async with client(third) as session:
        found = text_of(await session.call_tool("search_tools", {"query": "look through my notes for budget ideas"}))
    assert "search_notes" in found and "send_email" not in found
    third.usage.close()

    report = usage_report(tmp_path, limit=10)
    assert "send_email" in report and "\nLAZYTOOLS_ALWAYS_AVAILABLE_TOOLS=" in report
    pins = report.split("LAZYTOOLS_ALWAYS_AVAILABLE_TOOLS=")[1].split(",")
    assert sorted(pin.strip() for pin in pins) == ["search_notes", "send_email"]


@pytest.mark.anyio
async def test_request_text_can_be_kept_out_and_learning_turned_off(tmp_path: Path) -> None:
    hashed = learning_server(tmp_path / "hashed", learn_request_text=False)
    await _use(hashed, sessions=1)
    assert hashed.usage is not None and hashed.usage.flushed()
    with sqlite3.connect(tmp_path / "hashed" / "usage.sqlite3") as db:
        rows = db.execute("SELECT request, terms FROM searches").fetchall()
    assert rows and all(request is None for request, _ in rows)
    assert rows[0][1].split("\n") == list(hashed.usage.prior.terms(QUERY))
    # Hashed with this install's random key (0600 beside the database), not a key anyone can read in the source.
    key_file = tmp_path / "hashed" / "usage.key"
    assert (key_file.stat().st_mode & 0o777) == 0o600 and len(key_file.read_bytes()) == 32
    assert rows[0][1].split("\n") != list(hashed_terms(QUERY))
    other = learning_server(tmp_path / "other", learn_request_text=False)
    assert other.usage is not None and other.usage.prior.terms(QUERY) != hashed.usage.prior.terms(QUERY)
    other.usage.close()
    hashed.usage.close()

    off = learning_server(tmp_path / "off", learn=False)
    assert off.usage is None
    await _use(off, sessions=1)
    assert not (tmp_path / "off").exists()


@pytest.mark.anyio
async def test_stored_searches_are_bounded_in_size_and_misses_are_not_kept(tmp_path: Path) -> None:
    server = learning_server(tmp_path)
    words = " ".join("zq" + "".join(letters) for letters in itertools.product("bcdfgh", repeat=3))  # 216 words
    async with client(server) as session:
        await session.call_tool("search_tools", {"query": f"{QUERY} {words}"})
        await session.call_tool("search_tools", {"query": "xylophone quasar tarantula"})  # matches nothing
    assert server.usage is not None and server.usage.flushed()
    with sqlite3.connect(tmp_path / "usage.sqlite3") as db:
        rows = db.execute("SELECT request, terms FROM searches").fetchall()
    server.usage.close()
    assert len(rows) == 1, rows
    (request, terms), = rows
    assert request == f"{QUERY} {words}"[:500] and len(terms.split("\n")) == 64


def test_records_dated_implausibly_in_the_sqlite_file_are_skipped_not_fatal(tmp_path: Path) -> None:
    # The file is the operator's, but anything that can write it could once stop learning for good (OverflowError).
    store = SqliteUsageStore(tmp_path / "usage.sqlite3")
    now = time.time()
    store.write([CallRecord(at=at, session="s", tool="far", ok=True) for at in (1e308, 4.5e9, float("-inf"), 10.0)])
    store.write([CallRecord(at=now, session="s", tool="near", ok=True)])
    store.close()
    log = UsageLog(open_sqlite(tmp_path), key_file=tmp_path / "usage.key")
    log.start()
    assert log.loaded.wait(10) and not log.failed
    assert "near" in log.prior.called and "far" not in log.prior.called
    log.close()
    summary = summarize(SqliteUsageStore(tmp_path / "usage.sqlite3"), now=now)
    assert [tool.tool for tool in summary.tools if tool.calls > 0] == ["near"]


class _FailingStore(SqliteUsageStore):
    """A store with a bug: reading what others added raises something no store should."""

    def newer(self, limit: int) -> list[Any]:
        raise RuntimeError("a bug")


def test_a_writer_thread_that_fails_says_so_and_turns_learning_off(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    log = UsageLog(lambda: _FailingStore(tmp_path / "usage.sqlite3"), shared=True, poll=0.01)
    with caplog.at_level(logging.WARNING, logger="lazytools.usage"):
        log.start()
        assert log.loaded.wait(10)
        for _ in range(1000):  # bounded: the thread polls every 10 ms
            if log.failed:
                break
            time.sleep(0.01)
    assert log.failed
    assert any("usage learning stopped" in record.getMessage() for record in caplog.records)
