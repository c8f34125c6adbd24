"""Property tests: any JSON for any meta-tool argument gives a well-formed result, and touches no other session."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazytools import build_server
from lazytools.state.sessions import SessionState

from .conftest import client, make_settings, small_catalog, text_of

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
NAMES = st.sampled_from(["word_count", "get_forecast", "explode", "search_tools", "invoke_tool", "nope"]) | st.text(
    max_size=30)
SEARCH_ARGS = st.fixed_dictionaries({}, optional={"query": JSON, "group": JSON, "tool_names": JSON, "limit": JSON,
                                                  "extra": JSON})
INVOKE_ARGS = st.fixed_dictionaries({}, optional={"tool_name": NAMES | JSON, "arguments": JSON})

SERVER = build_server(small_catalog(), make_settings())


def _check(result: types.CallToolResult) -> None:
    assert isinstance(result, types.CallToolResult)
    assert result.content and all(isinstance(c, types.TextContent) for c in result.content)
    if result.is_error:
        message = text_of(result)
        assert message and "Internal error" not in message


def _run(name: str, arguments: Any, surface: str) -> None:
    # Both sessions are registered with the server, as a transport would: the call could reach `other` only
    # through the server's store, so that is where `other` must be, and where it is read back from.
    mine = SessionState(key="fuzz", surface=surface)  # type: ignore[arg-type]
    SERVER.store.put(mine)
    SERVER.store.put(SessionState(key="other", surface="dynamic", enabled={"reverse_text": None}))
    try:
        _check(anyio.run(SERVER.handle_call, mine, name, arguments))
        other = SERVER.store.get("other")
        assert other is not None and list(other.enabled) == ["reverse_text"]
        assert {state.key for state in SERVER.store} == {"fuzz", "other"}
        assert set(mine.enabled) <= set(SERVER.catalog.names())
    finally:
        SERVER.store.drop("fuzz")
        SERVER.store.drop("other")


def test_the_other_session_check_sees_a_change() -> None:
    # The isolation check above can fail: a search in the registered "other" session does change what it reads.
    SERVER.store.put(SessionState(key="other", surface="dynamic", enabled={"reverse_text": None}))
    try:
        other = SERVER.store.get("other")
        assert other is not None
        _check(anyio.run(SERVER.handle_call, other, "search_tools", {"tool_names": ["word_count"]}))
        assert list(SERVER.store.get("other").enabled) != ["reverse_text"]  # type: ignore[union-attr]
    finally:
        SERVER.store.drop("other")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments=SEARCH_ARGS, surface=st.sampled_from(["dynamic", "proxy"]))
def test_search_tools_accepts_any_json(arguments: dict[str, Any], surface: str) -> None:
    _run("search_tools", arguments, surface)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments=INVOKE_ARGS | JSON, surface=st.sampled_from(["dynamic", "proxy"]))
def test_invoke_tool_accepts_any_json(arguments: Any, surface: str) -> None:
    _run("invoke_tool", arguments, surface)


@settings(max_examples=200, deadline=None)
@given(name=NAMES, arguments=JSON)
def test_any_tool_name_with_any_arguments(name: str, arguments: Any) -> None:
    _run(name, arguments, "dynamic")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arguments=st.dictionaries(st.sampled_from(["query", "group", "tool_names", "limit"]), JSON, max_size=4))
def test_through_a_real_client_the_session_survives(arguments: dict[str, Any]) -> None:
    async def go() -> None:
        server = build_server(small_catalog(), make_settings())
        async with client(server) as a, client(server) as b:
            await b.call_tool("search_tools", {"tool_names": ["word_count"]})
            _check(await a.call_tool("search_tools", arguments))
            assert text_of(await a.call_tool("invoke_tool", {"tool_name": "reverse_text",
                                                              "arguments": {"text": "ab"}})) == "ba"
            assert "word_count" in [t.name for t in (await b.list_tools(cache_mode="bypass")).tools]

    anyio.run(go)
