"""Learning from use: the SQLite store, the decayed prior, the bounded reorder and the writer thread."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from lazytools.cli import main
from lazytools.learning.keys import hashed_terms
from lazytools.learning.log import UsageLog
from lazytools.learning.prior import UsagePrior
from lazytools.learning.records import CallRecord, SearchRecord
from lazytools.learning.sqlite import SqliteUsageStore, open_sqlite
from lazytools.search.prior import LEARN_WEIGHT, reorder

DAY = 86_400.0


def _search(id: str, query: str, returned: tuple[str, ...], at: float, request: str | None = None,
            session: str = "s1") -> SearchRecord:
    return SearchRecord(id=id, at=at, session=session, terms=hashed_terms(query), returned=returned,
                        enabled=returned[:2], request=request)


def _call(tool: str, query: str, at: float, *, ok: bool = True, after: str | None = None,
          session: str = "s1") -> CallRecord:
    return CallRecord(at=at, session=session, tool=tool, ok=ok, search="q", terms=hashed_terms(query), after=after)


def test_terms_are_hashed_stems_not_words() -> None:
    terms = hashed_terms("Restart the payments deployments")
    assert len(terms) == 3  # "the" is a stop word
    assert hashed_terms("restarting payment deployment") == terms  # stems, so a rewording meets the same terms
    assert not any("deploy" in term or "payment" in term for term in terms)


def test_sqlite_store_round_trips_and_keeps_no_text_when_asked(tmp_path: Path) -> None:
    now = time.time()
    store = SqliteUsageStore(tmp_path / "u" / "usage.sqlite3")
    store.write([_search("a", "roll back the deployment", ("k/rollout", "k/get"), now, request="roll back"),
                 _call("k/rollout", "roll back the deployment", now + 1, after="k/get")])
    store.close()
    again = SqliteUsageStore(tmp_path / "u" / "usage.sqlite3")
    (search,) = again.searches()
    (call,) = again.calls()
    assert search.returned == ("k/rollout", "k/get") and search.enabled == ("k/rollout", "k/get")
    assert search.request == "roll back" and search.terms == hashed_terms("roll back the deployment")
    assert call.tool == "k/rollout" and call.ok and call.after == "k/get" and call.terms == search.terms
    again.close()


def test_prior_favours_tools_called_after_similar_requests() -> None:
    now = time.time()
    prior = UsagePrior(origin=now)
    for i in range(3):
        prior.add(_search(f"s{i}", "roll back the api deployment", ("k/get", "k/rollout"), now, session=f"s{i}"))
        prior.add(_call("k/rollout", "roll back the api deployment", now, session=f"s{i}"))
    boosts = prior.boosts(hashed_terms("undo the rollout: roll the checkout deployment back"), at=now)
    assert set(boosts) == {"k/rollout"}
    assert 0 < boosts["k/rollout"] <= 1
    assert prior.boosts(hashed_terms("weather in Paris"), at=now) == {}


def test_failed_calls_teach_nothing_and_old_records_fade() -> None:
    now = time.time()
    prior = UsagePrior(origin=now - 90 * DAY)
    prior.add(_search("a", "convert a pdf", ("pdf/convert",), now))
    prior.add(_call("pdf/convert", "convert a pdf", now, ok=False))
    assert prior.boosts(hashed_terms("convert a pdf"), at=now) == {}
    for session in ("s1", "s2", "s3"):  # three sessions: enough to teach
        prior.add(_call("pdf/convert", "convert a pdf", now, session=session))
    fresh = prior.boosts(hashed_terms("convert a pdf"), at=now)["pdf/convert"]
    # 90 days later (three half-lives) the one search holding the terms weighs 1/8: below the evidence needed.
    assert prior.boosts(hashed_terms("convert a pdf"), at=now + 90 * DAY) == {}
    assert fresh > 0
    (row,) = prior.ranked_calls(at=now)
    assert row[0] == "pdf/convert" and abs(row[1] - 3.0) < 1e-9 and abs(row[2] - 1.0) < 1e-9


def test_companions_are_tools_usually_called_next() -> None:
    now = time.time()
    prior = UsagePrior(origin=now)
    for i in range(3):
        prior.add(_call("git/status", "what changed", now, session=f"s{i}"))
        prior.add(_call("git/diff", "what changed", now, after="git/status", session=f"s{i}"))
    prior.add(_call("git/log", "what changed", now, after="git/status"))
    assert prior.companions(["git/status"], at=now) == [("git/diff", "git/status")]
    assert prior.companions(["git/diff"], at=now) == []
    assert prior.companions(["git/status", "git/diff"], at=now) == []  # already shown


def test_one_session_repeating_a_pattern_teaches_nothing_until_three_sessions_show_it() -> None:
    now = time.time()
    prior = UsagePrior(origin=now)
    query = "weather in paris"
    for round_ in range(50):  # one session: search, call A, call B, fifty times over
        prior.add(_search(f"p{round_}", query, ("w/forecast",), now, session="poison"))
        prior.add(_call("w/forecast", query, now, session="poison"))
        prior.add(_call("evil/exfiltrate", query, now, after="w/forecast", session="poison"))
    assert prior.boosts(hashed_terms(query), at=now) == {}
    assert prior.companions(["w/forecast"], at=now) == []
    for other in ("a",):
        prior.add(_search(other, query, ("w/forecast",), now, session=other))
        prior.add(_call("w/forecast", query, now, session=other))
        prior.add(_call("evil/exfiltrate", query, now, after="w/forecast", session=other))
    assert prior.companions(["w/forecast"], at=now) == []  # two distinct sessions: still not enough
    assert prior.boosts(hashed_terms(query), at=now) == {}
    prior.add(_search("c", query, ("w/forecast",), now, session="c"))
    prior.add(_call("w/forecast", query, now, session="c"))
    prior.add(_call("evil/exfiltrate", query, now, after="w/forecast", session="c"))
    assert prior.companions(["w/forecast"], at=now) == [("evil/exfiltrate", "w/forecast")]
    assert "w/forecast" in prior.boosts(hashed_terms(query), at=now)


def test_reorder_never_lifts_a_tool_past_the_floor() -> None:
    hits = [("a", 10.0), ("b", 6.0), ("c", 3.9), ("d", 1.0)]
    # At the default weight b gains but stays under a; at weight 1 it passes a. c (below the floor of 4.0) gains
    # but stays under the floor, so under b and a.
    order = reorder(hits, {"b": 1.0, "c": 1.0, "d": 1.0}, floor=0.4)
    assert 6.0 * (1 + LEARN_WEIGHT) < 10.0
    assert [hits[i][0] for i in order] == ["a", "b", "c", "d"]
    order = reorder(hits, {"b": 1.0, "c": 1.0}, floor=0.4, weight=1.0)
    assert [hits[i][0] for i in order] == ["b", "a", "c", "d"]
    order = reorder([("a", 10.0), ("c", 3.9), ("d", 3.8)], {"d": 1.0}, floor=0.4, weight=1.0)
    assert [("a", "c", "d")[i] for i in order] == ["a", "d", "c"]  # d passes c below the floor, never above it
    assert reorder(hits, {}, floor=0.4) == [0, 1, 2, 3]


def test_usage_log_writes_on_its_thread_and_reads_history_back(tmp_path: Path) -> None:
    now = time.time()
    log = UsageLog(open_sqlite(tmp_path), keep_requests=False)
    for session in ("s1", "s2", "s3"):
        log.record(_search(session, "roll back the deployment", ("k/rollout",), now, request="roll back the deployment",
                           session=session))
        log.record(_call("k/rollout", "roll back the deployment", now, session=session))
    assert log.flushed()
    assert log.prior.boosts(hashed_terms("roll back the deployment"))  # counted on the writer thread
    log.close()
    with sqlite3.connect(tmp_path / "usage.sqlite3") as db:
        assert db.execute("SELECT request FROM searches").fetchall() == [(None,)] * 3  # the text was kept out
    later = UsageLog(open_sqlite(tmp_path))
    later.start()
    assert later.loaded.wait(10)
    assert set(later.prior.boosts(hashed_terms("roll back the deployment"))) == {"k/rollout"}
    later.close()


def test_an_unwritable_store_turns_learning_off(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    log = UsageLog(open_sqlite(blocker / "cache"))
    log.start()
    assert log.loaded.wait(10)
    assert log.failed
    log.record(_call("k/rollout", "x", time.time()))
    assert not log.prior  # nothing learnt once the store failed
    assert log.flushed()


def test_the_sqlite_file_keeps_only_the_newest_rows(tmp_path: Path) -> None:
    now = time.time()
    store = SqliteUsageStore(tmp_path / "usage.sqlite3", keep=3)
    store.write([_call(f"tool{i}", "q", now + i) for i in range(5)])  # the first write prunes: nothing to drop yet
    store.write([_search(f"s{i}", "q", (), now + i) for i in range(5)])
    store.prune()
    assert [call.tool for call in store.calls()] == ["tool2", "tool3", "tool4"]
    assert [search.id for search in store.searches()] == ["s2", "s3", "s4"]
    store.close()


def test_the_store_is_private_and_never_follows_a_link(tmp_path: Path) -> None:
    store = SqliteUsageStore(tmp_path / "made" / "usage.sqlite3")
    store.close()
    assert ((tmp_path / "made").stat().st_mode & 0o777) == 0o700
    assert ((tmp_path / "made" / "usage.sqlite3").stat().st_mode & 0o777) == 0o600
    elsewhere = tmp_path / "elsewhere.db"
    elsewhere.write_bytes(b"someone else's file")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "usage.sqlite3").symlink_to(elsewhere)
    log = UsageLog(open_sqlite(tmp_path / "linked"))
    log.start()
    assert log.loaded.wait(10) and log.failed
    assert elsewhere.read_bytes() == b"someone else's file"


def test_a_damaged_store_is_moved_aside_and_started_afresh(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    path.write_bytes(b"\x00garbage, not a database" * 400)
    store = SqliteUsageStore(path)
    store.write([_search("a", "convert a pdf", ("pdf/convert",), time.time())])
    assert len(store.searches()) == 1
    store.close()
    assert (tmp_path / "usage.sqlite3.damaged").read_bytes().startswith(b"\x00garbage")


def test_usage_command_on_a_damaged_store_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYTOOLS_CACHE_DIR", str(tmp_path))
    (tmp_path / "usage.sqlite3").write_bytes(b"\x00garbage, not a database" * 400)
    assert main(["usage"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("lazytools: Cannot read ") and err.count("\n") == 1, err
    assert (tmp_path / "usage.sqlite3").exists()  # the report leaves the server's file where it is


@pytest.mark.parametrize("kind", ["fifo", "folder", "link"])
def test_usage_command_on_a_store_that_is_no_regular_file_says_what_it_is(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # It said "... does not exist; LAZYTOOLS_LEARN=true records it while serving", of a file that exists and that
    # the server refuses to record in (a FIFO, a folder, a link: not followed).
    monkeypatch.setenv("LAZYTOOLS_CACHE_DIR", str(tmp_path))
    path = tmp_path / "usage.sqlite3"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to("/dev/null")
    assert main(["usage"]) == 1
    out, err = capsys.readouterr()
    expected = "is a symbolic link: not followed" if kind == "link" else "is not a regular file"
    assert out == "" and err.startswith(f"lazytools: Cannot read {path}: ") and expected in err, err
    assert err.count("\n") == 1


def test_usage_command_counts_the_sessions_that_only_searched(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    now = time.time()
    log = UsageLog(open_sqlite(tmp_path))
    for session in ("s1", "s2", "s3"):
        log.record(_search(session, "roll back the deployment", ("k/rollout",), now, session=session))
    log.record(_call("k/rollout", "roll back the deployment", now, session="s1"))
    assert log.flushed()
    log.close()
    monkeypatch.setenv("LAZYTOOLS_CACHE_DIR", str(tmp_path))
    assert main(["usage"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 searches, 1 tool calls in 3 sessions that searched or called, 1 of which called a tool "
                          f"({tmp_path / 'usage.sqlite3'})."), out
