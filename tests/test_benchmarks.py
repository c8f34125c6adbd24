"""The benchmarks/ scripts, run small so they cannot rot. The only test module that imports benchmarks/.

The soak runs for a few seconds: every kind of session, no errors, a clean stop. The synthetic search catalogs are
valid. The percentile summary is `statistics.quantiles`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import mcp_types as types
import pytest

from benchmarks.http_throughput import throughput_benchmarks
from benchmarks.search import learned_prior, served_cpu, synthetic_catalog, synthetic_queries
from benchmarks.soak import ROUNDS, SIGTERM_EXIT, SoakPlan, SoakReport, _Load, main, run_soak
from benchmarks.stats import percentile, percentiles
from lazytools import cli
from lazytools.search import SearchIndex
from lazytools.toolnames import check_tool_name


@pytest.mark.process
async def test_a_short_soak_serves_every_kind_of_session_without_errors() -> None:
    report = await run_soak(SoakPlan(sessions=3, seconds=4, sample_every=0.5, churn=2))
    assert report.errors == 0, report.error_samples
    assert set(report.sessions_opened) == {"dynamic", "proxy", "stateless"}
    assert sum(report.sessions_opened.values()) > 3  # churn 2: sessions were closed and replaced
    assert {"open", "search", "list", "call", "invoke"} <= set(report.latencies)
    assert report.server_exit == SIGTERM_EXIT == 143  # SIGTERM: the exit status shells give a process it ended
    assert len(report.rss) >= 2 and all(rss > 0 for _, rss in report.rss)
    summary = report.summary()
    assert f"requests served: {report.requests} " in summary and "errors: 0" in summary


async def test_a_wrong_answer_counts_as_an_error() -> None:
    # The checker is what makes "0 errors" mean something: a round whose expectation cannot hold must fail.
    broken = SoakPlan(sessions=1, seconds=30, max_requests=3)
    report = SoakReport(broken)
    load = _Load(broken, "http://127.0.0.1:9/mcp", report)
    load.check("proxy", "invoke_tool x", types.CallToolResult(content=[types.TextContent(text="212")]), "999")
    load.check("proxy", "invoke_tool x", types.CallToolResult(content=[types.TextContent(text="999")],
                                                              is_error=True), "999")
    load.check("proxy", "invoke_tool x", types.CallToolResult(content=[types.TextContent(text="999")]), "999")
    assert report.errors == 2 and "expected '999'" in report.error_samples[0]


def test_memory_trend_is_the_least_squares_slope_after_warm_up() -> None:
    report = SoakReport(SoakPlan(seconds=120, warmup=30))
    mib = 2**20
    report.rss = [(0.0, 50 * mib), (10.0, 80 * mib)]  # warm-up: left out
    report.rss += [(30.0 + 10 * i, 100 * mib + i * mib // 6) for i in range(10)]  # +1 MiB per minute
    slope = report.growth_per_minute()
    assert slope is not None and abs(slope / mib - 1.0) < 1e-6
    assert report.rss_after_warmup() == (100 * mib, 100 * mib + 9 * mib // 6)
    report.rss = [(40.0, 100 * mib), (40.0, 101 * mib), (40.0, 102 * mib)]  # no time between samples: no trend
    assert report.growth_per_minute() is None


@pytest.mark.parametrize("bad", [{"sessions": 0}, {"sessions": 501}, {"seconds": 0}, {"seconds": 3601},
                                 {"churn": 0}, {"sample_every": 0}])
def test_the_plan_is_bounded(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        SoakPlan(**bad)  # type: ignore[arg-type]


@pytest.mark.process
def test_the_command_line_runs_a_tiny_soak(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sessions", "2", "--seconds", "1", "--sample-every", "0.5", "--churn", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("soak: 2 concurrent sessions") and "errors: 0" in out
    assert len(ROUNDS) == len({r.tool for r in ROUNDS})  # each round exercises a different tool


def test_benchmark_catalogs_are_valid_and_searchable() -> None:
    entries = synthetic_catalog(500)
    assert len({entry.name for entry in entries}) == 500
    for entry in entries:
        check_tool_name(entry.name)
    queries = synthetic_queries(entries, 8)
    index = SearchIndex(entries)
    assert index.search(queries[1])[0].entry.name == queries[1]  # every 4th query, from 1, is an exact name
    assert all(index.search(query) for query in queries)


def test_the_served_search_figures_come_with_and_without_a_learned_prior() -> None:
    entries = synthetic_catalog(300)
    index = SearchIndex(entries)
    queries = synthetic_queries(entries, 12)
    prior = learned_prior(index, entries, searches=300)
    assert sum(bool(prior.boosts(prior.terms(query))) for query in queries) >= 6  # the prior moves most searches
    assert prior.companions([entries[0].name]) or any(prior.followed_by.values())
    index_only, served, learned = served_cpu(entries, index, queries)
    assert all(0 < figure < 1_000 for figure in (index_only, served, learned))  # ms: measured, not inf


def test_percentiles_are_the_median_and_the_99th() -> None:
    samples = [float(n) for n in range(1, 102)]  # 1..101: inclusive quantiles fall on samples
    assert percentiles(samples) == (51.0, 100.0)
    assert percentiles([3.0]) == (3.0, 3.0)
    assert percentile(samples, 95) == 96.0 and percentile([2.0, 4.0], 50) == 3.0


async def test_the_enabled_tools_benchmark_counts_what_a_session_lists() -> None:
    from benchmarks.enabled import SEQUENCE, enabled_counts
    from lazytools.settings import Settings

    capped = await enabled_counts(Settings(_env_file=None, max_enabled=6), SEQUENCE[:4])  # type: ignore[call-arg]
    assert len(capped) == 4 and capped[0] > 0 and max(capped) == capped[-1] == 6
    every_match = Settings(_env_file=None, relevance_floor=0.0)  # type: ignore[call-arg]
    uncapped = await enabled_counts(every_match, SEQUENCE[:2])
    assert uncapped == [5, 10]  # every match of the first two searches, none shared


def test_no_benchmark_module_shadows_the_standard_library() -> None:
    """benchmarks/gateway.py runs its upstreams by path, which puts benchmarks/ first on their import path: a
    benchmarks/http.py there hid the standard library's `http`, and every upstream died on start."""
    folder = Path(__file__).resolve().parent.parent / "benchmarks"
    modules = {path.stem for path in folder.glob("*.py")}
    assert len(modules) > 5
    assert not modules & set(sys.stdlib_module_names)


@pytest.mark.process
def test_the_throughput_comparison_runs_both_servers_with_no_failed_request() -> None:
    report = throughput_benchmarks(seconds=1, connections=2, rounds=2, threads=1)
    rates = dict(re.findall(r"^\s*(bare SDK|lazytools|lazytools, tool in a thread): ([\d,]+), [\d,]+ req/s",
                            report, flags=re.M))  # each round's rate, two rounds
    assert set(rates) == {"bare SDK", "lazytools", "lazytools, tool in a thread"}
    assert all(int(rate.replace(",", "")) > 0 for rate in rates.values())
    assert "failed requests: 0" in report
    assert re.search(r"^lazytools / bare, per round: \d+\.\d\dx", report, flags=re.M)
    assert re.search(r"^tool in a thread / bare, per round: \d+\.\d\dx", report, flags=re.M)
    assert re.search(r"^search_tools / bare, per round: \d+\.\d\dx.*min / median / max [\d.]+ / [\d.]+ / [\d.]+x\)$",
                     report, flags=re.M)
    assert re.search(r"^lazytools / bare SDK, median of 2 rounds: \d+\.\d\dx$", report, flags=re.M)
    assert "tool called: convert_temperature" in report and "lazytools: its defaults (learning on)" in report
    assert "stateless_http=True, json_response=True" in report and "load average at the end" in report


def test_the_throughput_benchmark_asks_search_tools_fresh_requests_with_learning_on() -> None:
    """Every search_tools request of a round is ranked afresh: more distinct requests than an index keeps answers
    for, asked in turn; and lazytools runs as shipped, learning on (into the benchmark's own cache directory)."""
    from benchmarks.http_throughput import FRESH_QUERIES, SEARCH_CALLS, _lazytools_command
    from lazytools.search.index import RECENT_QUERIES

    assert len(set(FRESH_QUERIES)) == len(FRESH_QUERIES) > 2 * RECENT_QUERIES
    assert [call["params"]["arguments"]["query"] for call in SEARCH_CALLS] == list(FRESH_QUERIES)
    shipped = _lazytools_command(1, Path("/tmp/x"))
    assert "--no-learn" not in shipped and shipped[shipped.index("--cache-dir") + 1] == "/tmp/x"
    assert "--no-learn" in _lazytools_command(1, Path("/tmp/x"), learn=False)


@pytest.mark.process
async def test_the_per_call_benchmark_times_every_path_against_the_bare_sdk_proxy() -> None:
    from benchmarks.percall import BARE, DIRECT, INVOKE, NATIVE, per_call, report

    medians, cpu = await per_call(rounds=1, calls=5)
    # Each path's calls answered (a failed call raises) and were timed; the floor and both lazytools surfaces ran.
    assert list(medians)[:4] == [DIRECT, BARE, INVOKE, NATIVE]
    assert all(len(values) == 1 and values[0] > 0 for values in medians.values())
    text = report(medians, cpu)
    floor = medians[BARE][0]
    for label in (INVOKE, NATIVE):
        assert f"{label:<24} {(medians[label][0] - floor) * 1000:+6.2f} ms\n" in text + "\n", text
    assert f"{DIRECT:<24} " in text.split("CPU per call")[1]  # the upstream's CPU was read from /proc


def test_the_bare_server_serves_the_bundled_tool_with_the_schema_lazytools_lists() -> None:
    """The bare SDK server does the same work as lazytools' tool: the same function, the same enum schema."""
    from benchmarks.http_throughput import BARE_CALL, bundled_temperature_tool

    description, schema, convert = bundled_temperature_tool()
    assert schema["properties"]["from_unit"]["enum"] == ["C", "F", "K", "R"] and "Kelvin" in description
    assert convert(**BARE_CALL["params"]["arguments"])["result"] == 212


def test_lazytools_runs_on_uvloop_where_installed() -> None:
    """uvicorn[standard] brings uvloop; the CLI's event loop is uvloop's then (docs/benchmarks.md: HTTP throughput)."""
    assert cli._loop_options() == {"use_uvloop": True}


def test_the_follow_ups_benchmark_replays_the_line_on_the_dev_set(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.followups import main as followups

    assert followups(["--splits", "multi", "--half", "even", "--sweep"]) == 0
    out = capsys.readouterr().out
    assert "16 requests" in out and re.search(r"^multi\s+16\s", out, re.MULTILINE)
    # BM25 names nothing as served; the sweep replays the rule without the step test, and following every
    # named clause up can only add recall.
    rows = re.findall(r"^\d\.\d 0\.00\s+16\s+\S+\s+\S+\s+\S+\s+(\S+)\s+(\S+)\s+(\S+)$", out, re.MULTILINE)
    assert len(rows) == 6 and all(float(r5) <= float(after) <= float(every) for r5, after, every in rows)


async def test_the_identity_benchmark_runs() -> None:
    from benchmarks.auth import auth_benchmarks

    report = await auth_benchmarks(rounds=20)
    assert "added per request by the edge" in report and "(20 runs)" in report


def test_the_scaling_benchmark_reads_wrk_latencies_in_any_unit() -> None:
    from benchmarks.scaling import _ms

    out = "Latency Distribution\n     50%  812.00us\n     75%    2.31ms\n     90%    1.20s\n     99%   14.50ms\n"
    assert (_ms(out, "50%"), _ms(out, "75%"), _ms(out, "90%"), _ms(out, "99%")) == (0.812, 2.31, 1200.0, 14.5)


def test_the_policy_benchmark_runs() -> None:
    from benchmarks.policy import policy_benchmarks

    report = policy_benchmarks(quick=True, rounds=20)
    assert report.count("per call p50") == 2 and report.count("search_tools p50") == 2 and "(20 runs)" in report


def test_the_search_sets_command_prints_one_table_of_every_half(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.searchsets import main as searchsets

    metatool = tmp_path / "metatool"
    metatool.mkdir()
    (metatool / "tools.jsonl").write_text(
        '{"id": "WeatherTool", "name": "WeatherTool", "description": "Forecasts the weather for a city."}\n'
        '{"id": "NewsTool", "name": "NewsTool", "description": "Reads the latest news headlines."}\n')
    (metatool / "queries.jsonl").write_text(
        '{"id": "s0", "query": "will it rain in Paris", "relevant_tool_ids": ["WeatherTool"], "split": "single"}\n'
        '{"id": "s1", "query": "today\'s headlines", "relevant_tool_ids": ["NewsTool"], "split": "single"}\n')
    assert searchsets(["--sets", "everyday,metatool", "--metatool", str(metatool)]) == 0
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0].strip("| "): line.strip("|").split(" | ")[1:] for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| set")}
    assert set(rows) == {"everyday", "metatool"}
    assert rows["everyday"][0].strip() == "8 / 8"  # 16 requests, one split: each half holds 8
    # every 7th single-tool query: of two, only the first is kept, on the even half; it is found
    assert rows["metatool"][0].strip() == "1 / -" and rows["metatool"][1].strip() == "1.000"
    assert float(rows["everyday"][1]) >= 0.0 and "semantic" not in out


def test_the_unseen_metatool_set_keeps_only_queries_wanting_a_held_out_tool(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.searchsets import main as searchsets
    from benchmarks.searchsets import unseen_tools

    assert "BookTool" in unseen_tools() and "NewsTool" not in unseen_tools()
    metatool = tmp_path / "metatool"
    metatool.mkdir()
    (metatool / "tools.jsonl").write_text(
        '{"id": "BookTool", "name": "BookTool", "description": "Finds books by title or author."}\n'
        '{"id": "NewsTool", "name": "NewsTool", "description": "Reads the latest news headlines."}\n')
    queries = [("find a novel by Tolstoy", "BookTool"), ("books about gardening", "BookTool"),
               ("today's headlines", "NewsTool"), ("news from Lagos", "NewsTool")]
    (metatool / "queries.jsonl").write_text("".join(
        f'{{"id": "s{n}", "query": "{text}", "relevant_tool_ids": ["{tool}"], "split": "single"}}\n'
        for n, (text, tool) in enumerate(queries)))
    assert searchsets(["--sets", "metatool-unseen", "--metatool", str(metatool)]) == 0
    rows = [line.strip("|").split(" | ") for line in capsys.readouterr().out.splitlines()
            if line.startswith("| metatool-unseen |")]
    assert rows and rows[0][1].strip() == "1 / 1"  # of four queries, the two that want BookTool, one per half


def test_the_search_sets_command_measures_the_embedder_it_is_given(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`--embedder` reaches the index (an A/B of encoders as served, in one command): a name that is not an embedder
    is refused by the loader, and a real one runs the semantic mode."""
    from benchmarks.searchsets import main as searchsets
    from lazytools.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown embedder 'no-such-model'"):
        searchsets(["--only-semantic", "--sets", "phrasing", "--embedder", "no-such-model"])
    assert searchsets(["--only-semantic", "--sets", "phrasing", "--embedder", "wordllama"]) == 0
    out = capsys.readouterr().out
    assert "semantic even" in out and "BM25" not in out


def test_restbench_is_a_set_of_the_search_sets_command(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.searchsets import RESTBENCH
    from benchmarks.searchsets import main as searchsets

    tools = {json.loads(line)["id"] for line in (RESTBENCH / "tools.jsonl").read_text().splitlines()}
    queries = [json.loads(line) for line in (RESTBENCH / "queries.jsonl").read_text().splitlines()]
    assert len(tools) == 94 and len(queries) == 157
    assert all(q["relevant_tool_ids"] and set(q["relevant_tool_ids"]) <= tools for q in queries)
    assert searchsets(["--sets", "restbench"]) == 0
    rows = {line.split(" | ")[0].strip("| "): line.strip("|").split(" | ")[1:]
            for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and not line.startswith("| set")}
    assert rows["restbench, tmdb"][0].strip() == "50 / 50" and rows["restbench, spotify"][0].strip() == "29 / 28"
    assert all(0.3 < float(rows["restbench, all"][i]) <= 1.0 for i in (1, 2))  # BM25 finds most endpoints


@pytest.mark.process
@pytest.mark.parametrize("learns", [False, True])
async def test_a_benchmarks_lazytools_leaves_the_learning_store_alone(tmp_path: Path, learns: bool) -> None:
    """Benchmarks start lazytools by `benchmarks.LAZYTOOLS`: their searches and calls must not land in the learning
    store of whoever runs them. The same session without the flag does record (so the check is not vacuous)."""
    from mcp import Client, StdioServerParameters

    from benchmarks import LAZYTOOLS

    command = [arg for arg in LAZYTOOLS if arg != "--no-learn"] if learns else LAZYTOOLS
    assert learns or "--no-learn" in command
    cache = tmp_path / "cache"
    params = StdioServerParameters(command=command[0], args=[*command[1:], "--cache-dir", str(cache)],
                                   cwd=str(tmp_path), env={"LAZYTOOLS_FILES_ROOT": str(tmp_path)})
    async with Client(params, mode="legacy", client_info=types.Implementation(name="Visual Studio Code",
                                                                               version="1")) as client:
        await client.call_tool("search_tools", {"query": "convert celsius to fahrenheit temperature"})
        (tmp_path / "notes.txt").write_text("alpha\n")
        await client.call_tool("search_tools", {"tool_names": ["read_text_file"]})
        assert not (await client.call_tool("read_text_file", {"path": "notes.txt"})).is_error
    assert (cache / "usage.sqlite3").exists() == learns


def test_every_benchmark_starts_lazytools_with_learning_off() -> None:
    """A new benchmark that spells the command out itself would learn into the user's store again."""
    root = Path(__file__).resolve().parent.parent / "benchmarks"
    spelled = [path.name for path in root.glob("*.py")
               if path.name != "__init__.py" and re.search(r'"-m",\s*"lazytools"', path.read_text())]
    assert spelled == []


@pytest.mark.process
def test_the_served_search_command_measures_both_trees_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.search import main as search_main

    tree = Path(__file__).resolve().parent.parent  # this tree again, as the tree compared
    assert search_main(["--sizes", "120", "--queries", "257", "--rounds", "1", "--compare-with", str(tree)]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^(this tree|\S+)\s+(120)\s+([\d.]+) \(.*?\)\s+([\d.]+) \(.*?\)\s+([\d.]+) \(", out, flags=re.M)
    assert [(name == "this tree", size) for name, size, *_ in rows] == [(True, "120"), (False, "120")]
    assert all(0 < float(figure) < 1_000 for *_, a, b, c in rows for figure in (a, b, c))


@pytest.mark.process
def test_the_real_search_command_measures_the_sizes_given(capsys: pytest.CaptureFixture[str]) -> None:
    """`--sizes 1000,10000` spelled out once measured 100,000 tools too: the default was told apart by its text."""
    from benchmarks.search import main as search_main

    assert search_main(["--real", "--sizes", "1000,10000", "--rounds", "1", "--naive", "2"]) == 0
    sizes = re.findall(r"^this tree\s+(\d+)\s", capsys.readouterr().out, flags=re.M)
    assert sizes == ["1000", "10000"]


def test_long_requests_are_distinct_and_measured_as_served(tmp_path: Path) -> None:
    from benchmarks.longrequests import long_requests, measure

    requests = long_requests(5, 1000)
    assert len(set(requests)) == 5 and all(900 < len(r) <= 1000 for r in requests)
    samples = measure(False, 50, long_requests(2, 300), tmp_path)
    assert len(samples) == 2 and all(s > 0 for s in samples)


def test_long_requests_rounds_alternate_the_trees_and_pool_their_samples(monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str],
                                                                          tmp_path: Path) -> None:
    import benchmarks.longrequests as longrequests

    order: list[tuple[str, str]] = []

    def measured(tree: Path, mode: str, args: object, cache: Path) -> list[float]:
        order.append((tree.name, mode))
        return [1.0] if tree == tmp_path else [3.0, 5.0]

    monkeypatch.setattr(longrequests, "_measured_in", measured)
    assert longrequests.main(["--compare-with", str(tmp_path), "--rounds", "3", "--modes", "bm25"]) == 0
    here = Path(longrequests.__file__).resolve().parent.parent.name
    assert order == [(here, "bm25"), (tmp_path.name, "bm25"), (tmp_path.name, "bm25"), (here, "bm25"),
                     (here, "bm25"), (tmp_path.name, "bm25")]
    out = capsys.readouterr().out
    assert "in each of 3 rounds" in out
    assert re.search(r"^this tree\s+bm25\s+4.00\s+5.00$", out, flags=re.M)  # 3, 5 three times: p50 4, p95 5
    assert re.search(r"bm25\s+1.00\s+1.00$", out, flags=re.M)


def test_nothing_fits_thresholds_are_chosen_on_even_halves_within_the_loss() -> None:
    from benchmarks.nothingfits import HELD_OUT, OUTSIDE, Row, choose, table

    rows = [Row(catalog, "s", half, f"{catalog}{n}", 1.0, 0.2 + n / 100, None)
            for catalog in ("dev", "metatool", "toolalpaca") for half in ("even", "odd") for n in range(50)]
    rows += [Row("dev", "outofscope", half, f"o{n}", None, 0.05 + n / 100, None)
             for half in ("even", "odd") for n in range(20)]
    held_out = [Row(catalog, name, half, f"h{catalog}{n}", None, 0.9, None) for catalog, name in HELD_OUT
                for half in ("even", "odd") for n in range(4)]
    chosen = choose(rows + held_out, semantic=False)
    # Refusing requests at 0.2 or above would cost every in-scope set 1/50 (.02) of R@5: more than .01.
    assert chosen.min_lexical == 0.2 and chosen.enabled
    assert choose(rows, semantic=False) == chosen  # the held-out requests (all refused by nothing) never choose
    text = table(rows + held_out, {"chosen": chosen})
    assert "| chosen | even | 0.75 (20) / - / 0.00 (8) | 1.000 → 1.000 |" in text
    assert {path.stem for paths in OUTSIDE.values() for path in paths} >= {name for _, name in HELD_OUT}
    assert all(path.is_file() for paths in OUTSIDE.values() for path in paths)


def test_the_semantic_rule_is_chosen_on_even_halves_and_weighs_what_separates() -> None:
    from benchmarks.nothingfits import Row, _weights, choose
    from lazytools.search.embedders import DEFAULT_EMBEDDER
    from lazytools.search.fit import Evidence

    # In scope: a gap of at least .3 whatever the cosine; out of scope: a smaller gap, some with high cosines.
    rows = [Row(catalog, "s", half, f"{catalog}{n}", 1.0, 0.1, 0.1 + n / 100, gap=0.3 + n / 1000)
            for catalog in ("dev", "metatool", "toolalpaca") for half in ("even", "odd") for n in range(50)]
    rows += [Row("dev", "outofscope", half, f"o{n}", None, 0.1, 0.2 + n / 100, gap=0.05 + n / 100)
             for half in ("even", "odd") for n in range(20)]
    chosen = choose(rows, semantic=True)
    assert dict(chosen.semantic_weights) == {"gap": 1.0} and chosen.min_semantic == 0.3
    assert chosen.fits(Evidence(0.1, 0.1, embedder=DEFAULT_EMBEDDER, gap=0.3))
    assert not chosen.fits(Evidence(0.1, 0.9, embedder=DEFAULT_EMBEDDER, gap=0.29))
    # Weights given (--weights): only the threshold is chosen, the highest that refuses no in-scope request here.
    given = choose(rows, semantic=True, weighed=_weights("cosine=1"))
    assert given.semantic_weights == (("cosine", 1.0),) and given.min_semantic == 0.1


def test_the_context_benchmark_prints_both_surfaces_and_fastmcp_or_says_why_not(
        capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    from benchmarks.context import main as context_main

    assert context_main(["--tools", "40", "--tasks", "3", "--forms", "manifest 1,200"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| manifest 1,200")]
    assert [row.split(" | ")[1] for row in rows] == ["dynamic", "proxy"], out
    for row in rows:
        initial, after = (int(cell) for cell in row.split(" | ")[2:5:2])
        assert 0 < initial < after, row  # a search adds its result (and, dynamic, what it enabled)
    if importlib.util.find_spec("fastmcp") is not None:
        assert re.search(r"\| FastMCP BM25SearchTransform \(defaults\) \| static \| \d+ \|", out), out
    else:
        assert "not run: fastmcp is not installed" in out


def test_the_context_benchmarks_cuts_rewrite_what_the_default_served_and_change_no_recall(
        capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.context import main as context_main
    from benchmarks.context_cuts import CUTS

    assert context_main(["--tools", "40", "--tasks", "4", "--no-fastmcp", "--forms", "manifest 1,200;cut: "]) == 0
    # a row's cells: form, surface, initial, its share, the mean after one search, its share, largest, the recalls
    rows = {(cells[0].removeprefix("| "), cells[1]): cells for line in capsys.readouterr().out.splitlines()
            if len(cells := line.split(" | ")) > 3 and cells[1] in ("dynamic", "proxy")}
    default = "manifest 1,200 chars (default)"
    assert {form for form, _ in rows} == {default, *(f"cut: {cut}" for cut in CUTS)}
    names = "cut: (a) names alone in the dynamic result"
    assert int(rows[names, "dynamic"][4]) < int(rows[default, "dynamic"][4])  # the result is shorter
    assert rows[names, "dynamic"][2] == rows[default, "dynamic"][2]  # and the first list the same
    assert rows[names, "proxy"][2:] == rows[default, "proxy"][2:]  # a cut of dynamic results leaves the proxy's
    hints = "cut: (c) hints at the spec's defaults left out"
    assert int(rows[hints, "proxy"][2]) < int(rows[default, "proxy"][2])  # the meta-tools' hints, on both
    assert all(cells[7:] == rows[default, surface][7:] for (_, surface), cells in rows.items())  # no recall moves


def test_the_search_sets_command_ranks_with_the_config_it_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    """`--config` reaches the index: the same set ranked with every stage on and with BM25F's fields weighed
    otherwise gives other figures, and a config that is not one is refused."""
    from benchmarks.searchsets import main as searchsets
    from lazytools.errors import ConfigError

    def figures(config: str) -> list[str]:
        assert searchsets(["--sets", "misses,queries", "--config", config]) == 0
        return [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]

    assert figures("") != figures('{"field_weights": {"name": 0.1, "title": 0.1, "description": 0.1, '
                                  '"parameters": 5.0, "group": 0.1, "english": 0.1}}')
    with pytest.raises(ConfigError, match="LAZYTOOLS_SEARCH_RANKING"):
        searchsets(["--sets", "misses", "--config", '{"no_such_weight": 1}'])
