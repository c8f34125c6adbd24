"""Learning from use under attack (#30 items 4, 5, 7, 10): the memory of who counted what at its cap, one OAuth user
flooding it, what a user's results tell of other users' searches, and store files planted by another user. Through
the real HTTP server with tokens of a real IdP, or the real SQLite store, as an attacker reaches them."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.to_thread
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from lazytools.app import build_server
from lazytools.learning.counted import Counted
from lazytools.learning.keys import KEY_FILE
from lazytools.learning.prior import UsagePrior
from lazytools.learning.records import CallRecord
from lazytools.server.core import LazyServer
from lazytools.transports.http import build_app

from .conftest import make_settings, text_of
from .helpers import _free_port, running_http
from .idp import IdP, running_idp
from .test_learning import QUERY, learning_server, notes_catalog

pytestmark = pytest.mark.anyio

NEXT = "search_notes, from past sessions"
"""The end of send_email's label, learnt from past sessions: called after, or used together with, search_notes."""
RANKED = "often used for such requests"


@asynccontextmanager
async def oauth_server(tmp_path: Path, **overrides: object) -> AsyncIterator[Callable[[str, str], object]]:
    """A learning server over HTTP with OAuth; yields `use(user, query)`: that user searches `query`, calls
    search_notes then send_email, and gets what the search said (once the log counted it all)."""
    async with running_idp() as idp:
        port = _free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        settings = make_settings(transport="http", port=port, auth_issuer=idp.issuer, auth_audience=url,
                                 learn=True, cache_dir=tmp_path, **overrides)
        server = build_server(notes_catalog(), settings)
        async with running_http(build_app(server, settings), port=port):
            yield _user(idp, url, server)


def _user(idp: IdP, url: str, server: LazyServer) -> Callable[[str, str], object]:
    async def use(user: str, query: str, *, then_email: bool = True) -> str:
        token = idp.sign(audience=url, sub=user)
        async with httpx2.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {token}"}) as http, \
                Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            found = text_of(await client.call_tool("search_tools", {"query": query}))
            assert not (await client.call_tool("search_notes", {"words": "budget"})).is_error
            if then_email:
                await client.call_tool("search_tools", {"tool_names": ["send_email"]})
                assert not (await client.call_tool("send_email", {"to": "friend@example.com"})).is_error
        assert server.usage is not None and await anyio.to_thread.run_sync(server.usage.flushed)
        return found
    return use


# -- item 4: the "count once" memory at its cap ----------------------------------------------------------------

def test_past_the_cap_the_least_recently_active_source_is_forgotten_whole() -> None:
    prior = UsagePrior(max_counted=100, max_per_source=40)
    for source in range(10):  # 10 sources of 20 patterns: twice the cap
        for number in range(20):
            prior.add(CallRecord(prior.origin, f"s{source}", "tool", True, terms=(f"t{source}-{number}",)))
    assert len(prior.counted) <= 100
    assert list(prior.counted.sources()) == [f"s{n}" for n in range(5, 10)]  # the oldest went first, whole
    assert prior.counted.forgotten == 5
    prior.add(CallRecord(prior.origin, "s5", "tool", True, terms=("t5-99",)))  # active again: last to go
    assert list(prior.counted.sources()) == ["s7", "s8", "s9", "s5"]  # one over the cap: s6 left
    prior.add(CallRecord(prior.origin, "s10", "tool", True, terms=("t10-0",)))
    assert list(prior.counted.sources()) == ["s7", "s8", "s9", "s5", "s10"]  # room again: none left


def test_eviction_at_the_cap_does_constant_work_per_record() -> None:
    """`del d[next(iter(d))]` walked every slot deleted before (work grew with each eviction): the memory now pops
    its oldest source from an OrderedDict. Counted in steps the memory takes, not in time."""
    memory = Counted(limit=1_000, per_source=1)
    for number in range(50_000):  # one pattern per source: every record past the cap evicts one source
        assert memory.first(f"s{number}", ("t", "x", "y"))
    assert len(memory) == 1_000 and memory.forgotten == 49_000
    assert next(memory.sources()) == "s49000"
    assert type(memory._by_source).__name__ == "OrderedDict"


async def test_records_are_counted_on_the_writer_thread_not_the_event_loop(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []
    real_add = UsagePrior.add

    def add(self: UsagePrior, record: object) -> None:
        threads.append(threading.current_thread().name)
        real_add(self, record)  # type: ignore[arg-type]

    monkeypatch.setattr(UsagePrior, "add", add)
    async with oauth_server(tmp_path) as use:
        await use("alice", QUERY)  # type: ignore[operator]
    assert threads and set(threads) == {"lazytools-usage"}


# -- item 5: one user flooding that memory ------------------------------------------------------------------------

async def test_one_user_flooding_made_up_words_cannot_count_their_pattern_again(tmp_path: Path) -> None:
    # A small memory, as a busy server's fills: mallory's flood fills her share, never her earlier pattern.
    async with oauth_server(tmp_path, learn_max_counted=150, learn_max_per_source=60) as use:
        await use("mallory", QUERY)  # type: ignore[operator]
        for number in range(40):  # made-up words: 400 new patterns to remember, past the memory of 150
            letters = chr(97 + number // 26) + chr(97 + number % 26)  # letters only: digits would split off
            words = " ".join(f"{stem}{letters}" for stem in ("qzv", "wxk", "plo", "jyb", "fuh"))
            await use("mallory", f"search notes {words}", then_email=False)  # type: ignore[operator]
        for _ in range(3):
            await use("mallory", QUERY)  # type: ignore[operator]
        await use("alice", QUERY)  # type: ignore[operator]
        found = await use("carol", QUERY)  # type: ignore[operator]
        assert NEXT not in found  # two users showed it, not three: mallory counted once
        found = await use("dave", QUERY)  # type: ignore[operator]
        assert NEXT in found  # mallory, alice and carol: three others


# -- item 7: what a user's results tell of other users' searches ---------------------------------------------------

async def test_a_learnt_label_shows_only_once_enough_other_users_showed_it(tmp_path: Path) -> None:
    async with oauth_server(tmp_path) as use:
        for user in ("alice", "bob", "mallory"):
            await use(user, QUERY)  # type: ignore[operator]
        probe = await use("mallory", QUERY)  # type: ignore[operator]
        # Three users showed it, but only two besides mallory: her result must not tell her they searched it.
        assert RANKED not in probe and NEXT not in probe
        await use("dave", QUERY)  # type: ignore[operator]
        probe = await use("mallory", QUERY)  # type: ignore[operator]
        assert RANKED in probe and NEXT in probe  # three others: no one of them is told apart


# -- item 10: store files planted by another user -------------------------------------------------------------------

def _planted(path: Path, monkeypatch: pytest.MonkeyPatch, *, how: str) -> None:
    if how == "writable":
        path.chmod(0o666)
    elif how == "hard link":
        os.link(path, path.with_name(path.name + ".elsewhere"))  # the same file under a name outside the store
    elif how == "readable key":
        path.chmod(0o644)
    elif os.geteuid() == 0:
        os.chown(path, 65534, 65534)  # as root, really another user's file
    else:
        monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)  # this process as another user


@pytest.mark.parametrize(("name", "how"), [(name, how) for name in (KEY_FILE, "usage.sqlite3")
                                           for how in ("writable", "other owner", "hard link")]
                         + [(KEY_FILE, "readable key")])
async def test_a_store_file_another_user_planted_or_may_write_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, name: str,
        how: str) -> None:
    first = learning_server(tmp_path)  # makes both files, as this user
    assert first.usage is not None and first.usage.loaded.wait(10) and not first.usage.failed
    first.usage.close()
    _planted(tmp_path / name, monkeypatch, how=how)
    with caplog.at_level(logging.WARNING, logger="lazytools.usage"):
        server = learning_server(tmp_path)
        assert server.usage is not None and server.usage.loaded.wait(10)
    assert server.usage.failed  # nothing read from it, nothing written to it
    assert "not trusted" in caplog.text
