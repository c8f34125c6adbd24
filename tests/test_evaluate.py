"""`lazytools eval` and JSONL catalogs: metrics, query selection, the report, loading errors, and serving one."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from lazytools import ConfigError
from lazytools.app import open_server
from lazytools.cli import main
from lazytools.evaluate import (
    LabelledQuery,
    QueryResult,
    cutoffs_for,
    evaluate,
    latency_line,
    read_queries,
    run_eval,
    served_search,
)
from lazytools.search import build_index
from lazytools.search.fit import MIN_CATALOG
from lazytools.server.metatools import search_tools
from lazytools.sources import jsonl
from lazytools.sources.jsonl import load_jsonl_catalog

from .conftest import client, make_settings, text_of

FIXTURES = Path(__file__).parent / "fixtures"
TOOLS = FIXTURES / "eval_tools.jsonl"
QUERIES = FIXTURES / "eval_queries.jsonl"


def labelled(relevant: set[str], split: str = "single") -> LabelledQuery:
    return LabelledQuery("q", "text", tuple(frozenset({tool_id}) for tool_id in sorted(relevant)), split)


def test_recall_and_reciprocal_rank_by_definition() -> None:
    result = QueryResult(labelled({"b", "z"}), ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "z"])
    assert result.recall(1) == 0.0
    assert result.recall(5) == 0.5
    assert result.recall(10) == 0.5  # "z" is 11th
    assert result.reciprocal_rank() == 0.5
    assert QueryResult(labelled({"x"}), ["a"] * 10 + ["x"]).reciprocal_rank() == 0.0


def test_evaluate_averages_per_split_and_overall() -> None:
    queries = [labelled({"a"}), labelled({"b"}), labelled({"a", "b"}, "multi")]
    scores = evaluate(queries, lambda text: ["a", "c"])
    assert scores["single"].recall(1) == 0.5
    assert scores["multi"].recall(5) == 0.5
    assert scores["all"].recall(1) == pytest.approx(1.5 / 3)
    assert scores["all"].mrr == pytest.approx(2 / 3)  # the multi query's first relevant tool is first
    assert "all" not in evaluate(queries[:2], lambda text: ["a"])


def test_a_list_of_equivalent_ids_counts_once_when_any_of_them_is_returned(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_text(json.dumps({"id": "e", "query": "read a file", "relevant_tool_ids": [["fs/read", "dc/read"], "x"]}))
    [query] = read_queries(path)
    assert query.relevant == (frozenset({"fs/read", "dc/read"}), frozenset({"x"})) and query.split == "multi"
    assert QueryResult(query, ["dc/read", "a"]).recall(5) == 0.5  # one need of two, by its second id
    assert QueryResult(query, ["dc/read", "fs/read"]).recall(5) == 0.5  # both equivalents are still one need
    assert QueryResult(query, ["a", "fs/read", "x"]).recall(5) == 1.0
    assert QueryResult(query, ["a", "fs/read", "x"]).reciprocal_rank() == 0.5


@pytest.mark.parametrize("labels", [[], [[]], [["a", 3.5]], [True], [{"id": "a"}], "a"])
def test_bad_labels_name_the_line(tmp_path: Path, labels: object) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_text(json.dumps({"id": "e", "query": "q", "relevant_tool_ids": labels}))
    with pytest.raises(ConfigError, match=r"queries\.jsonl:1: .*lists of equivalent ids"):
        read_queries(path)


@pytest.mark.parametrize(("query", "message"), [
    ("", "'query' is empty"), ("   ", "'query' is empty"),
    ("weather " * 1001, "'query' has 8,008 characters; search_tools takes at most 8,000"),
])
def test_a_query_search_tools_would_refuse_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          query: str, message: str) -> None:
    """Refused before any search runs, with file:line, as a malformed line is; not a bare error after the rest."""
    path = tmp_path / "queries.jsonl"
    path.write_text(QUERIES.read_text() + json.dumps({"id": "bad", "query": query, "relevant_tool_ids": ["x"]}) + "\n")
    line = len(path.read_text().splitlines())
    assert main(["eval", "--tools", str(TOOLS), "--queries", str(path), "--split", "multi"]) == 2
    assert capsys.readouterr().err == f"lazytools: {path}:{line}: {message}\n"


def test_labels_naming_no_tool_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            caplog: pytest.LogCaptureFixture) -> None:
    """A typo'd label warns with the first few ids and a count; labels of another catalog (or an empty tools
    file) are refused: every figure would be 0."""
    queries = tmp_path / "queries.jsonl"
    typos = [json.dumps({"id": f"t{n}", "query": "weather", "relevant_tool_ids": [f"wether{n}", n]}) for n in range(4)]
    queries.write_text(QUERIES.read_text() + "\n".join(typos) + "\n")
    args = ["eval", "--tools", str(TOOLS), "--queries", str(queries), "--misses", "0"]
    assert main(args) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and warnings[0].startswith(f"labelled tool ids not in {TOOLS}: 8 ")
    assert "('wether0', '0', 'wether1', '1', 'wether2', ...)" in warnings[0]  # in file order
    capsys.readouterr()
    for tools_text in ("", '{"id": "other"}\n'):
        (tmp_path / "tools.jsonl").write_text(tools_text)
        assert main(["eval", "--tools", str(tmp_path / "tools.jsonl"), "--queries", str(QUERIES)]) == 2
        assert "no labelled tool is in" in capsys.readouterr().err


def test_cutoffs_stop_at_the_limit() -> None:
    assert cutoffs_for(5) == (1, 5)
    assert cutoffs_for(10) == (1, 5, 10)
    assert cutoffs_for(3) == (1, 3)
    assert cutoffs_for(1) == (1,)


def test_the_served_search_returns_exactly_what_search_tools_returns() -> None:
    loaded = load_jsonl_catalog(TOOLS)
    index = build_index(loaded.catalog)
    for query in read_queries(QUERIES):
        for limit, places in ((1, False), (2, False), (5, False), (2, True), (5, True)):
            arguments = {"query": query.query} if places else {"query": query.query, "limit": limit}
            outcome = search_tools(loaded.catalog, index, arguments, surface="dynamic",
                                   default_limit=limit if places else 5, max_limit=20, bridge=True)
            served = served_search(loaded.catalog, index, limit=limit, ids=loaded.ids, places=places)(query.query)
            assert served.returned == [loaded.ids[entry.name] for entry in outcome.returned]
            # This catalog has no id producers to suggest beyond the places: the model's limit, or the needs'.
            assert len(served.returned) <= (index.places(query.query, limit, 20) if places else limit)
            assert served.enabled == [loaded.ids[entry.name] for entry in outcome.enabled]
            assert served.returned[: len(served.enabled)] == served.enabled


def test_eval_limit_and_rankings_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rankings = tmp_path / "rankings.jsonl"
    args = ["eval", "--tools", str(TOOLS), "--queries", str(QUERIES), "--misses", "0"]
    assert main([*args, "--limit", "1", "--rankings", str(rankings)]) == 0
    out = capsys.readouterr().out
    assert "as served at limit 1" in out and out.splitlines()[1].split() == ["split", "n", "R@1", "MRR@1"]
    lines = [json.loads(line) for line in rankings.read_text().splitlines()]
    assert [line["id"] for line in lines] == [q.id for q in read_queries(QUERIES)]
    assert all(len(line["returned"]) <= 1 for line in lines)
    assert lines[0] == {"id": "q1", "returned": ["gh-create"], "enabled": ["gh-create"]}
    mean_enabled = sum(len(line["enabled"]) for line in lines) / len(lines)
    assert f"Enabled alone (mean {mean_enabled:.2f} tools): R@1 " in out
    # The default is the server's limit, 5: the multi query's two tools are both returned.
    assert main([*args, "--rankings", str(rankings)]) == 0
    assert "as served at limit 5" in capsys.readouterr().out
    returned = {line["id"]: line["returned"] for line in map(json.loads, rankings.read_text().splitlines())}
    assert {"stocks", "news"} <= set(returned["m1"]) and all(len(r) <= 5 for r in returned.values())
    assert main([*args, "--limit", "0"]) == 2
    # Above what the server accepts is refused as the server would, naming the setting that allows more.
    assert main([*args, "--limit", "21"]) == 2
    assert "--limit 21 is above what search_tools accepts, 20 (--search-max-limit" in capsys.readouterr().err
    assert main([*args, "--limit", "21", "--search-max-limit", "21", "--rankings", str(rankings)]) == 0
    assert "as served at limit 21" in capsys.readouterr().out


def test_rankings_never_overwrite_an_input_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    tools, queries = tmp_path / "tools.jsonl", tmp_path / "queries.jsonl"
    tools.write_bytes(TOOLS.read_bytes())
    queries.write_bytes(QUERIES.read_bytes())
    (tmp_path / "link.jsonl").symlink_to(tools)
    monkeypatch.chdir(tmp_path)
    for rankings in ("queries.jsonl", str(queries), "./sub/../tools.jsonl", "link.jsonl"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        assert main(["eval", "--tools", str(tools), "--queries", "queries.jsonl", "--rankings", rankings]) == 2
        assert "would be overwritten" in capsys.readouterr().err
    assert tools.read_bytes() == TOOLS.read_bytes() and queries.read_bytes() == QUERIES.read_bytes()


def test_every_nth_single_query_and_all_multi_queries() -> None:
    assert [q.id for q in read_queries(QUERIES)] == ["q1", "q2", "q3", "q4", "q5", "m1"]
    assert [q.id for q in read_queries(QUERIES, every=2)] == ["q1", "q3", "q5", "m1"]
    assert [q.id for q in read_queries(QUERIES, every=2, split="multi")] == ["m1"]
    with pytest.raises(ConfigError):
        read_queries(QUERIES, every=0)


def test_halves_take_every_other_query_of_each_split() -> None:
    assert [q.id for q in read_queries(QUERIES, half="even")] == ["q1", "q3", "q5", "m1"]
    assert [q.id for q in read_queries(QUERIES, half="odd")] == ["q2", "q4"]
    # Numbered after sampling: every=2 keeps q1, q3, q5, whose halves are q1, q5 and q3.
    assert [q.id for q in read_queries(QUERIES, every=2, half="even")] == ["q1", "q5", "m1"]
    assert [q.id for q in read_queries(QUERIES, every=2, half="odd")] == ["q3"]
    with pytest.raises(ConfigError, match="--half"):
        read_queries(QUERIES, half="third")


def test_eval_command_on_one_half(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["eval", "--tools", str(TOOLS), "--queries", str(QUERIES), "--misses", "0", "--every", "2"]
    assert main([*args, "--half", "odd"]) == 0
    out = capsys.readouterr().out
    assert "odd half" in out.splitlines()[0]
    assert out.splitlines()[2].split() == ["single", "1", "1.000", "1.000", "1.000"]  # q3, the typo


def test_run_eval_reports_figures_and_worst_misses() -> None:
    report = run_eval(TOOLS, QUERIES, every=2, misses=5)
    lines = report.splitlines()
    assert lines[0].startswith("Search quality (BM25) as served at limit 5 on 8 tools")
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:5]}
    # q1 and q3 (a typo) are found first; q5 has nothing to match; m1's two tools are both in the top 5.
    assert rows["single"] == ["3", "0.667", "0.667", "0.667"]
    assert rows["multi"] == ["1", "0.500", "1.000", "1.000"]
    assert rows["all"] == ["4", "0.625", "0.750", "0.750"]
    assert "Worst 1" in report and "[q5] 'sing me a lullaby'" in report and "news → nothing" in report


def test_run_eval_scores_by_tool_id_not_name() -> None:
    # Both "list_issues" tools share a name; their ids tell them apart (and their public names get a prefix).
    loaded = load_jsonl_catalog(TOOLS)
    assert loaded.ids["github__list_issues"] == "gh-list" and loaded.ids["jira__list_issues"] == "jira-list"
    assert loaded.ids["create_issue"] == "gh-create"


def test_eval_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--tools", str(TOOLS), "--queries", str(QUERIES), "--split", "multi", "--misses", "0"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2].split() == ["multi", "1", "0.500", "1.000", "1.000"]
    assert "single" not in out and "Worst" not in out


def test_eval_command_with_the_semantic_extra(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--tools", str(TOOLS), "--queries", str(QUERIES), "--every", "2", "--semantic"]) == 0
    out = capsys.readouterr().out
    assert "(BM25 + semantic)" in out
    # q5 ("sing me a lullaby") is the worst with embeddings too; on these 8 tools `search.fit` refuses nothing (under
    # MIN_CATALOG tools IDF cannot tell a chance match), so it is ranked, its labelled tool not first.
    assert MIN_CATALOG > 8
    assert "[q5] 'sing me a lullaby'" in out and "news → " in out and "news → nothing" not in out


def test_eval_command_reports_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "queries.jsonl"
    bad.write_text('{"id": "1", "query": "x"}\n')
    assert main(["eval", "--tools", str(TOOLS), "--queries", str(bad)]) == 2
    assert "queries.jsonl:1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "name": "x"}\nnot json\n', r"tools\.jsonl:2: not valid JSON"),
        ('[1, 2]\n', r"tools\.jsonl:1: expected a JSON object"),
        ('{"name": "x"}\n', r"tools\.jsonl:1: 'id' must be"),
        ('{"id": "a"}\n{"id": "a"}\n', r"tools\.jsonl:2: tool id 'a' appears twice"),
        ('{"id": "a", "input_schema": []}\n', r"'input_schema' must be a JSON object"),
        ('{"id": "a", "description": 3}\n', r"'description' must be"),
    ],
)
def test_broken_tools_file_names_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "tools.jsonl"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        load_jsonl_catalog(path)


def test_a_file_that_is_not_utf8_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes('{"id": "q1", "query": "café", "relevant_tool_ids": ["weather"]}\n'.encode("latin-1"))
    for args in (["eval", "--tools", str(TOOLS), "--queries", str(latin1)],
                 ["eval", "--tools", str(latin1), "--queries", str(QUERIES)],
                 ["--tools-jsonl", str(latin1), "search", "weather"]):
        assert main(args) == 2
        assert capsys.readouterr().err == f"lazytools: {latin1}: not UTF-8 text (byte 26: invalid continuation " \
                                          "byte); save it as UTF-8\n"


def test_only_a_regular_file_of_bounded_size_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # A FIFO nobody writes waited for ever, /dev/zero grew until a MemoryError traceback: these files are named
    # in a client's config or on the command line, like a config file, and are read within the same bounds.
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    # Hang guard: if the FIFO is opened and read, a writer arriving late ends that read with an empty file.
    guard = threading.Timer(60, lambda: os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)))
    guard.daemon = True
    guard.start()
    try:
        for odd, why in ((fifo, "not a regular file"), (Path("/dev/null"), "not a regular file")):
            for args in (["eval", "--tools", str(TOOLS), "--queries", str(odd)],
                         ["eval", "--tools", str(odd), "--queries", str(QUERIES)],
                         ["--tools-jsonl", str(odd), "search", "weather"]):
                assert main(args) == 2
                assert capsys.readouterr().err == f"lazytools: {odd}: {why}\n"
    finally:
        guard.cancel()
    monkeypatch.setattr(jsonl, "MAX_JSONL_BYTES", TOOLS.stat().st_size - 1)
    with pytest.raises(ConfigError, match=rf"eval_tools\.jsonl: over {TOOLS.stat().st_size - 1:,} bytes"):
        load_jsonl_catalog(TOOLS)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot read"):
        load_jsonl_catalog(tmp_path / "absent.jsonl")


def test_names_are_made_valid_and_unique(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    records = [{"id": "1", "name": "Weather Tool!"}, {"id": "2", "name": "PDF&URL"}, {"id": "3", "name": "x" * 80},
               {"id": "4", "name": "PDF&URL"}, {"id": 5}]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n")
    loaded = load_jsonl_catalog(path)
    assert list(loaded.ids) == ["Weather_Tool", "PDF_URL", "x" * 64, "PDF_URL_2", "5"]
    assert {entry.group for entry in loaded.catalog} == {"odd"}
    assert loaded.catalog.get("Weather_Tool").upstream_name == "Weather Tool!"


async def test_jsonl_catalog_is_served_and_its_tools_say_they_have_no_implementation() -> None:
    settings = make_settings(tools_jsonl=TOOLS)
    async with open_server(settings) as server:
        assert len(server.catalog) == 8 and {g.name for g in server.catalog.groups} >= {"github", "jira"}
        async with client(server, "claude-ai") as c:
            found = await c.call_tool("search_tools", {"query": "weather forecast"})
            assert "get_forecast" in text_of(found)
            called = await c.call_tool("invoke_tool", {"tool_name": "get_forecast", "arguments": {}})
            assert called.is_error
            assert "no implementation" in text_of(called) and "eval_tools.jsonl" in text_of(called)


def test_tools_jsonl_flag_serves_that_catalog_to_search(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--tools-jsonl", str(TOOLS), "search", "stock price", "--limit", "1"]) == 0
    assert "stock_quote" in capsys.readouterr().out


def test_eval_takes_the_servers_relevance_floor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rankings = tmp_path / "rankings.jsonl"
    args = ["eval", "--tools", str(TOOLS), "--queries", str(QUERIES), "--misses", "0", "--rankings", str(rankings)]

    def served() -> dict[str, dict[str, list[str]]]:
        assert main(args) == 0
        return {line["id"]: line for line in map(json.loads, rankings.read_text().splitlines())}

    default = served()
    monkeypatch.setenv("LAZYTOOLS_RELEVANCE_FLOOR", "1.0")  # only the best match of each search is enabled
    strict = served()
    assert {q: r["returned"] for q, r in strict.items()} == {q: r["returned"] for q, r in default.items()}
    assert all(len(r["enabled"]) <= 1 for r in strict.values())
    assert any(len(r["enabled"]) > 1 for r in default.values())


def test_the_report_gives_latency_per_query_as_served(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--tools", str(TOOLS), "--queries", str(QUERIES), "--misses", "0"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("latency per query")]
    assert len(lines) == 1
    words = lines[0].split()
    assert words[:6] == ["latency", "per", "query", "as", "served:", "p50"] and words[7:9] == ["ms,", "p95"]
    p50, p95 = float(words[6]), float(words[9])
    assert 0 < p50 <= p95 and words[10] == "ms"


def test_latency_percentiles_are_values_some_query_took() -> None:
    assert latency_line([5.0, 1.0, 3.0, 2.0, 4.0]) == "latency per query as served: p50 3.00 ms, p95 5.00 ms"
    assert latency_line([7.0]) == "latency per query as served: p50 7.00 ms, p95 7.00 ms"
