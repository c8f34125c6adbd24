"""The MCP server through a real in-memory client: surfaces, sessions, meta-tools and every bad input."""

from __future__ import annotations

import json

import anyio
import mcp_types as types
import pytest

from lazytools import ConfigError, Group, ToolArgumentsError, build_server
from lazytools.app import bundled_catalog
from lazytools.entry import ToolEntry

from .conftest import Recorder, client, make_settings, small_catalog, text_of
from .helpers import eventually, tool_names


async def test_first_list_is_search_plus_bridge(server_factory) -> None:
    async with client(server_factory()) as c:
        assert await tool_names(c) == ["search_tools", "invoke_tool"]
        assert c.server_capabilities.tools is not None and c.server_capabilities.tools.list_changed is True
        assert c.instructions and "search_tools" in c.instructions


async def test_search_enables_notifies_before_result_and_relist_shows(server_factory) -> None:
    recorder = Recorder()
    async with client(server_factory(), recorder=recorder) as c:
        result = await c.call_tool("search_tools", {"query": "weather forecast for a city"})
        recorder.mark("result")
        assert not result.is_error
        assert "get_forecast" in text_of(result)
        assert recorder.events[:2] == ["list_changed", "result"]
        listed = await tool_names(c)
        assert "get_forecast" in listed and listed[:2] == ["search_tools", "invoke_tool"]
        called = await c.call_tool("get_forecast", {"city": "Oslo", "days": 2})
        assert not called.is_error
        assert called.structured_content == {"city": "Oslo", "days": 2, "forecast": ["sunny", "sunny"]}


async def test_enabled_tools_accumulate_and_repeat_search_sends_no_notification(server_factory) -> None:
    recorder = Recorder()
    async with client(server_factory(), recorder=recorder) as c:
        await c.call_tool("search_tools", {"tool_names": ["word_count"]})
        await c.call_tool("search_tools", {"tool_names": ["create_issue"]})
        assert recorder.events == ["list_changed", "list_changed"]
        await c.call_tool("search_tools", {"tool_names": ["word_count"]})
        assert recorder.events == ["list_changed", "list_changed"]
        assert set(await tool_names(c)) >= {"word_count", "create_issue"}


async def test_sessions_are_isolated_even_concurrently(server_factory) -> None:
    server = server_factory()
    first, second = Recorder(), Recorder()
    async with client(server, recorder=first) as a, client(server, recorder=second) as b:
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.call_tool, "search_tools", {"tool_names": ["word_count"]})
            tg.start_soon(b.call_tool, "search_tools", {"tool_names": ["create_issue"]})
        assert "word_count" in await tool_names(a) and "create_issue" not in await tool_names(a)
        assert "create_issue" in await tool_names(b) and "word_count" not in await tool_names(b)
        assert first.events == ["list_changed"] and second.events == ["list_changed"]
        refused = await b.call_tool("word_count", {"text": "a b"})
        assert refused.is_error and "search_tools" in text_of(refused)
    assert len(server.store) == 0  # state is freed when the sessions end


async def test_proxy_client_gets_static_list_schemas_and_invoke(server_factory) -> None:
    recorder = Recorder()
    async with client(server_factory(), "claude-ai", recorder=recorder) as c:
        before = await tool_names(c)
        assert before == ["search_tools", "invoke_tool"]
        result = await c.call_tool("search_tools", {"query": "count words"})
        text = text_of(result)
        assert "word_count" in text and "input_schema:" in text and '"required":["text"]' in text
        assert await tool_names(c) == before and recorder.events == []
        called = await c.call_tool("invoke_tool", {"tool_name": "word_count", "arguments": {"text": "a b c"}})
        assert not called.is_error and text_of(called) == "3"


async def test_stateless_era_client_gets_proxy_surface(server_factory) -> None:
    async with client(server_factory(), "Visual Studio Code", mode="2026-07-28") as c:
        assert await tool_names(c) == ["search_tools", "invoke_tool"]
        result = await c.call_tool("search_tools", {"query": "reverse text"})
        assert "input_schema:" in text_of(result)
        assert await tool_names(c) == ["search_tools", "invoke_tool"]
        called = await c.call_tool("invoke_tool", {"tool_name": "reverse_text", "arguments": {"text": "abc"}})
        assert text_of(called) == "cba"


@pytest.mark.parametrize(("mode", "client_name", "expected"), [
    ("proxy", "Visual Studio Code", ["search_tools", "invoke_tool"]),
    ("dynamic", "claude-ai", ["search_tools", "invoke_tool", "word_count"]),
])
async def test_mode_overrides_client_table(server_factory, mode: str, client_name: str, expected: list[str]) -> None:
    async with client(server_factory(mode=mode), client_name) as c:
        await c.call_tool("search_tools", {"tool_names": ["word_count"]})
        assert await tool_names(c) == expected


async def test_client_table_is_overridable(server_factory) -> None:
    async with client(server_factory(client_surfaces={"claude-ai": "dynamic"}), "claude-ai") as c:
        await c.call_tool("search_tools", {"tool_names": ["word_count"]})
        assert "word_count" in await tool_names(c)


async def test_dynamic_without_bridge_lists_exactly_search_and_enabled(server_factory) -> None:
    async with client(server_factory(dynamic_bridge=False)) as c:
        assert await tool_names(c) == ["search_tools"]
        # No message sends the model to a tool its list does not hold.
        hidden = await c.call_tool("word_count", {"text": "a"})
        assert hidden.is_error and "Call search_tools first" in text_of(hidden)
        assert "invoke_tool" not in text_of(hidden)
        result = await c.call_tool("search_tools", {"tool_names": ["reverse_text"]})
        assert "invoke_tool" not in text_of(result)
        assert await tool_names(c) == ["search_tools", "reverse_text"]
        refused = await c.call_tool("invoke_tool", {"tool_name": "reverse_text", "arguments": {"text": "x"}})
        assert refused.is_error and "Unknown tool 'invoke_tool'" in text_of(refused)
        assert text_of(refused).count("invoke_tool") == 1, text_of(refused)  # not offered as its own correction
        near = await c.call_tool("invoke_tol", {})
        assert near.is_error and "invoke_tool" not in text_of(near), text_of(near)


async def test_always_available_tools_are_listed_and_callable(server_factory) -> None:
    async with client(server_factory(always_available_tools=["word_count"]), "claude-ai") as c:
        assert await tool_names(c) == ["word_count", "search_tools", "invoke_tool"]
        assert text_of(await c.call_tool("word_count", {"text": "one two"})) == "2"


def test_unknown_always_available_tool_is_a_startup_error_with_close_names() -> None:
    with pytest.raises(ConfigError, match="word_cont.*Closest: word_count"):
        build_server(small_catalog(), make_settings(always_available_tools=["word_cont"]))


async def test_bad_inputs_get_clear_answers(server_factory) -> None:
    async with client(server_factory()) as c:
        unknown = await c.call_tool("invoke_tool", {"tool_name": "word_cnt", "arguments": {"text": "a"}})
        assert unknown.is_error and "Did you mean: word_count" in text_of(unknown)
        direct_unknown = await c.call_tool("reverse_txt", {"text": "a"})
        assert direct_unknown.is_error and "reverse_text" in text_of(direct_unknown)
        bad = await c.call_tool("invoke_tool", {"tool_name": "get_forecast", "arguments": {"days": "many"}})
        message = text_of(bad)
        assert bad.is_error and "'city' is a required property" in message and "days: 'many' is not of type" in message
        assert "Input schema:" in message
        not_enabled = await c.call_tool("word_count", {"text": "a"})
        assert not_enabled.is_error and "Call search_tools first" in text_of(not_enabled)
        assert "or call it through invoke_tool" in text_of(not_enabled)  # the bridge is listed here
        raised = await c.call_tool("invoke_tool", {"tool_name": "explode", "arguments": {"message": "x"}})
        assert raised.is_error and "RuntimeError: boom: x" in text_of(raised)
        empty = await c.call_tool("search_tools", {})
        assert empty.is_error and "needs a query, a group or tool_names" in text_of(empty)
        extra = await c.call_tool("search_tools", {"query": "x", "colour": "red"})
        assert extra.is_error and "colour" in text_of(extra)
        limit = await c.call_tool("search_tools", {"query": "text", "limit": 0})
        assert limit.is_error and "limit" in text_of(limit)
        group = await c.call_tool("search_tools", {"group": "wether"})
        assert group.is_error and "Unknown group 'wether'" in text_of(group) and "weather" in text_of(group)
        meta = await c.call_tool("invoke_tool", {"tool_name": "search_tools", "arguments": {}})
        assert meta.is_error and "meta-tool" in text_of(meta)
        missing = await c.call_tool("search_tools", {"tool_names": ["get_forecst"]})
        assert "Unknown tool 'get_forecst'. Did you mean: get_forecast" in text_of(missing)
        # ...and the server still serves after all of that.
        ok = await c.call_tool("invoke_tool", {"tool_name": "word_count", "arguments": {"text": "a b"}})
        assert text_of(ok) == "2"


async def test_search_combinations(server_factory) -> None:
    async with client(server_factory(), "claude-ai") as c:
        by_group = text_of(await c.call_tool("search_tools", {"group": "weather"}))
        assert "get_forecast" in by_group and "get_alerts" in by_group and "word_count" not in by_group
        filtered = text_of(await c.call_tool("search_tools", {"query": "list issues", "group": "tracker"}))
        assert "list_issues" in filtered and "get_forecast" not in filtered
        outside = text_of(await c.call_tool("search_tools", {"query": "issues", "group": "weather"}))
        assert outside.startswith("No tool here fits 'issues'; no tool was enabled for it.") and "in: weather." in outside
        both = text_of(await c.call_tool("search_tools", {"query": "weather", "tool_names": ["word_count"]}))
        assert both.index("word_count") < both.index("get_forecast")
        limited = text_of(await c.call_tool("search_tools", {"group": "text", "limit": 1}))
        assert "has 3 tools; showing 1" in limited
        nothing = text_of(await c.call_tool("search_tools", {"query": "zzzz qqqq"}))
        assert nothing.startswith("No tool here fits 'zzzz qqqq'; no tool was enabled for it. The tools here are in:")


async def test_search_description_holds_a_compact_manifest(server_factory) -> None:
    async with client(server_factory()) as c:
        search = (await c.list_tools()).tools[0]
        assert search.description is not None
        assert "weather (2): Forecasts and conditions for a city." in search.description
        assert "text (3): Text utilities." in search.description
        assert search.annotations is not None and search.annotations.read_only_hint is True
        invoke = (await c.list_tools()).tools[1]
        assert invoke.annotations is not None and invoke.annotations.read_only_hint is False


async def test_upstream_style_results_pass_through(server_factory) -> None:
    async with client(server_factory(), "claude-ai") as c:
        result = await c.call_tool("invoke_tool", {"tool_name": "create_issue", "arguments": {"title": "T"}})
        assert result.structured_content == {"created": "T", "body": ""}
        assert json.loads(text_of(result)) == {"created": "T", "body": ""}


def test_meta_tool_names_are_reserved() -> None:
    from lazytools import FunctionGroup, Group

    catalog = small_catalog()
    bad = FunctionGroup("bad")

    def search_tools(query: str) -> str:
        """Shadow."""
        return query

    bad.add(search_tools)
    catalog.set_group(Group("bad"), bad.entries)
    with pytest.raises(ConfigError, match="reserved"):
        build_server(catalog, make_settings())


async def test_unexpected_errors_become_error_results(server_factory) -> None:
    server = server_factory()

    def broken(*args: object, **kwargs: object) -> object:
        raise ZeroDivisionError("bug")

    server.index.ready = broken  # type: ignore[method-assign]  # a fault inside lazytools
    async with client(server) as c:
        result = await c.call_tool("search_tools", {"query": "x"})
        assert result.is_error and "Internal error" in text_of(result) and "ZeroDivisionError" in text_of(result)
        assert isinstance((await c.list_tools()).tools[0], types.Tool)


def test_input_schema_lookup_gives_only_schemas_that_declare_headers() -> None:
    """The transport checks `Mcp-Param-*` headers against the schema this gives: none for a schema that declares no
    header (nothing to compare), the meta-tools' included; the schema itself for one that declares one."""
    declared = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}

    async def regional(arguments: dict[str, object]) -> types.CallToolResult:
        raise AssertionError("not called")

    catalog = small_catalog()
    catalog.set_group(Group("geo", "Regional tools."), [ToolEntry(name="regional", group="geo",
                                                                  description="Regional.", input_schema=declared,
                                                                  call=regional)])
    server = build_server(catalog, make_settings())
    for name in ("search_tools", "invoke_tool", "word_count", "no_such_tool"):
        assert server.input_schema_of(name) is None
    assert server.input_schema_of("regional") is declared
    assert server.input_schema_of("regional") is declared  # read again from what it remembered


async def test_unrelated_searches_do_not_accumulate_tools(tmp_path) -> None:
    # The bundled catalog, a pinned tool and a cap of 6: ten searches for unrelated things.
    server = build_server(bundled_catalog(tmp_path), make_settings(max_enabled=6, always_available_tools=["current_time_in_zone"]))
    recorder = Recorder()
    searches = ["weather forecast in Oslo", "count the words in this text", "convert 10 miles to km",
                "hash a password with sha256", "what time is it in Tokyo", "encode this as base64",
                "order a pizza", "add two numbers", "generate a uuid", "roll a dice"]
    async with client(server, recorder=recorder) as c:
        sizes = []
        for query in searches:
            result = await c.call_tool("search_tools", {"query": query})
            assert not result.is_error
            listed = await tool_names(c)
            assert "current_time_in_zone" in listed  # pinned: never counted, never disabled
            sizes.append(len(listed) - 3)  # less search_tools, invoke_tool and the pinned tool
        assert max(sizes) == 6 and sizes[-1] == 6
        assert recorder.events.count("list_changed") >= len(searches) - 1
        state = next(iter(server.store))
        assert len(state.enabled) == 6 and "current_time_in_zone" not in state.enabled


async def test_a_called_tool_stays_while_others_leave(tmp_path) -> None:
    server = build_server(bundled_catalog(tmp_path), make_settings(max_enabled=3))
    async with client(server) as c:
        await c.call_tool("search_tools", {"tool_names": ["count_text_stats"]})
        await c.call_tool("search_tools", {"tool_names": ["reverse_text", "generate_uuid"]})
        called = await c.call_tool("count_text_stats", {"text": "a b"})
        assert not called.is_error  # used: now the most recent, so reverse_text is the oldest
        answer = text_of(await c.call_tool("search_tools", {"tool_names": ["slugify_text"]}))
        listed = await tool_names(c)
        assert {"count_text_stats", "generate_uuid", "slugify_text"} <= set(listed) and "reverse_text" not in listed
        # The answer names what left, so the model does not call it as if it were still there.
        assert "Left your tool list to keep at most 3 enabled (the least recently used): reverse_text;" in answer
        refused = await c.call_tool("reverse_text", {"text": "ab"})
        assert refused.is_error and "search_tools" in text_of(refused)


async def test_weak_matches_are_suggested_not_enabled(server_factory) -> None:
    recorder = Recorder()
    async with client(server_factory(), recorder=recorder) as c:
        # get_forecast scores 12.1; get_alerts 3.3 and list_issues 0.6 are under 40% of it.
        text = text_of(await c.call_tool("search_tools", {"query": "weather forecast for a city"}))
        assert text.startswith("Enabled: get_forecast. ")
        suggestions = text.split("Also possibly relevant, not enabled", 1)[1].splitlines()[1:]
        assert [line.split(" ")[1] for line in suggestions] == ["get_alerts", "list_issues"]
        listed = await tool_names(c)
        assert "get_forecast" in listed and "get_alerts" not in listed and "list_issues" not in listed
        # A suggestion is one search away: asking for it by name enables it.
        await c.call_tool("search_tools", {"tool_names": ["get_alerts"]})
        assert "get_alerts" in await tool_names(c)
        assert recorder.events == ["list_changed", "list_changed"]


def test_the_default_relevance_floor_is_the_documented_one() -> None:
    from lazytools.server.metatools import RELEVANCE_FLOOR
    from lazytools.settings import Settings

    assert make_settings().relevance_floor == RELEVANCE_FLOOR == Settings.model_fields["relevance_floor"].default


async def test_a_match_brings_the_tool_that_produces_its_required_id_as_a_suggestion() -> None:
    from lazytools import Catalog, Group, ToolEntry

    from .fixtures.catalogs import realistic

    call = realistic()[0].call

    def entry(name: str, description: str, *required: str) -> ToolEntry:
        schema = {"type": "object", "properties": {p: {"type": "string"} for p in required}, "required": [*required]}
        return ToolEntry(name=name, group="chat", description=description, input_schema=schema, call=call)

    catalog = Catalog()
    catalog.set_group(Group("chat", ""), [
        entry("chat_post_message", "Post a message to a channel.", "channel_id", "text"),
        entry("chat_list_channels", "List the workspace's public rooms."),
        entry("chat_add_reaction", "Add an emoji reaction.", "channel_id", "timestamp"),
    ])
    async with client(build_server(catalog, make_settings())) as c:
        text = text_of(await c.call_tool("search_tools", {"query": "post a message", "limit": 1}))
        assert text.startswith("Enabled: chat_post_message.")
        assert "- chat_list_channels [chat]:" in text.split("Also possibly relevant, not enabled", 1)[1]
        assert "chat_list_channels" not in await tool_names(c)


def test_search_refuses_a_huge_tool_names_list_before_checking_each_name() -> None:
    from lazytools.search import SearchIndex
    from lazytools.server.metatools import MAX_TOOL_NAMES, search_tools

    catalog = small_catalog()
    with pytest.raises(ToolArgumentsError, match=f"at most {MAX_TOOL_NAMES} names \\(300000 given\\)"):
        search_tools(catalog, SearchIndex(list(catalog)), {"tool_names": ["x"] * 300_000}, surface="proxy",
                     default_limit=5, max_limit=20, bridge=True)


async def test_one_sessions_blocking_calls_hold_only_its_share_of_the_tool_threads() -> None:
    import threading

    from lazytools import Catalog, FunctionGroup

    release = threading.Event()
    group = FunctionGroup("slow", summary="Tools that block.")

    entered: list[int] = []

    @group.tool
    def wait_for_release() -> str:
        """Block until the test releases it."""
        entered.append(1)
        release.wait(30)
        return "released"

    @group.tool
    def quick_echo(text: str) -> str:
        """Echo the text back."""
        return text

    catalog = Catalog()
    catalog.add(group)
    settings = make_settings(max_session_tool_threads=2, always_available_tools=["wait_for_release", "quick_echo"])
    server = build_server(catalog, settings)
    finished: list[str] = []
    async with client(server, "claude-ai") as hog, client(server, "claude-ai") as other:

        async def blocked() -> None:
            finished.append(text_of(await hog.call_tool("wait_for_release", {})))

        async with anyio.create_task_group() as tg:
            for _ in range(45):  # more than every thread of the pool
                tg.start_soon(blocked)
            await eventually(lambda: len(entered) >= 2)
            await anyio.sleep(0.5)  # the hog's other calls arrive meanwhile: they wait for its share, not a thread
            assert len(entered) == 2
            # Without a per-session share, the other session's call would wait for the hog's to end (30 s).
            assert text_of(await other.call_tool("quick_echo", {"text": "hi"})) == "hi"
            assert finished == []
            release.set()
    assert finished == ["released"] * 45  # the hog's calls beyond its share waited their turn, none failed


def test_only_the_features_turned_on_sit_in_the_middleware_chain(tmp_path) -> None:
    from lazytools.audit import open_audit
    from lazytools.server.middleware.access import AccessMiddleware
    from lazytools.server.middleware.audit import AuditMiddleware
    from lazytools.server.middleware.metrics import MetricsMiddleware
    from lazytools.server.middleware.params import ParamsMiddleware
    from lazytools.server.middleware.principal import PrincipalMiddleware
    from lazytools.server.middleware.rate_limit import RateLimitMiddleware

    def layers(**settings: object) -> list[str]:
        audit = open_audit(str(tmp_path / "audit.log"), values=False) if settings.pop("audit", False) else None
        server = build_server(small_catalog(), make_settings(**settings), audit=audit)
        if audit is not None:
            audit.close()
        return [type(layer).__name__ for layer in server.middleware]

    plain = layers()
    assert plain == [ParamsMiddleware.__name__, "OpenTelemetryMiddleware", PrincipalMiddleware.__name__]
    assert layers(transport="http")[-1] == MetricsMiddleware.__name__  # metrics are read over HTTP only
    assert layers(transport="http", metrics=False) == plain
    assert layers(rate_limit=5)[-1] == RateLimitMiddleware.__name__
    assert layers(audit=True)[-1] == AuditMiddleware.__name__
    policy = tmp_path / "policy.toml"
    policy.write_text('default = "allow"\n')
    assert AccessMiddleware.__name__ in layers(policy=policy)

