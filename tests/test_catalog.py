"""The catalog: unique valid names, groups replaced whole, close-match suggestions, change listeners."""

from __future__ import annotations

from typing import Any

import pytest

from lazytools import Catalog, ConfigError, FunctionGroup, Group, ToolEntry, UnknownToolError
from lazytools.catalog import suggest

from .fixtures.catalogs import _never


def _group(name: str, *tools: str) -> FunctionGroup:
    group = FunctionGroup(name)
    for tool in tools:
        def fn(x: int) -> int:
            return x
        fn.__name__ = tool
        fn.__doc__ = f"Tool {tool}."
        group.add(fn)
    return group


def test_groups_are_replaced_whole_and_listeners_hear_it() -> None:
    catalog = Catalog()
    seen: list[int] = []
    catalog.on_change(lambda c: seen.append(c.version))
    catalog.set_group(Group("a"), _group("a", "one", "two").entries)
    catalog.set_group(Group("b"), _group("b", "three").entries)
    catalog.set_group(Group("a"), _group("a", "four").entries)
    assert sorted(catalog.names()) == ["four", "three"]
    assert [e.name for e in catalog.in_group("a")] == ["four"]
    assert seen == [1, 2, 3]
    catalog.set_group(Group("b"), [])  # an upstream that stopped serving: its group stays, empty
    assert catalog.names() == ["four"] and [g.name for g in catalog.groups] == ["a", "b"] and seen[-1] == 4


def test_duplicate_names_across_groups_are_refused() -> None:
    catalog = Catalog()
    catalog.set_group(Group("a"), _group("a", "same").entries)
    with pytest.raises(ConfigError, match="'same' is used twice"):
        catalog.set_group(Group("b"), _group("b", "same").entries)
    with pytest.raises(ConfigError, match="used twice"):
        catalog.set_group(Group("c"), _group("c", "x", "x").entries)


@pytest.mark.parametrize("name", ["", "has space", "a/b", "x" * 65, "é"])
def test_invalid_names_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="invalid"):
        Catalog().set_group(Group("g"), _group("g", name).entries)


def test_unknown_names_get_close_matches() -> None:
    catalog = Catalog()
    catalog.set_group(Group("fs"), _group("fs", "fs__read_file", "fs__write_file").entries)
    with pytest.raises(UnknownToolError) as info:
        catalog.get("read_file")
    assert info.value.suggestions[0] == "fs__read_file"
    assert "Did you mean: fs__read_file" in str(info.value)
    assert suggest("FS__READ_FILE", catalog.names())[0] == "fs__read_file"
    with pytest.raises(KeyError):  # UnknownToolError is a KeyError, as a lookup failure should be
        catalog.get("nothing_like_it")


def test_unique_name_cuts_to_fit_its_suffix() -> None:
    from lazytools.toolnames import MAX_NAME_LENGTH, unique_name

    assert unique_name("a", set(), "-") == "a"
    assert unique_name("a", {"a", "a-2"}, "-") == "a-3"
    long = "x" * MAX_NAME_LENGTH
    made = unique_name(long, {long}, "_")
    assert made == "x" * (MAX_NAME_LENGTH - 2) + "_2" and len(made) == MAX_NAME_LENGTH


def test_names_with_the_same_words_in_another_order_or_form_are_suggested() -> None:
    tools = ["word_count", "reverse_text", "get_forecast", "fs__list_files", "list_issues"]
    assert suggest("count_words", tools) == ["word_count"]  # no spelling match: the same words, swapped
    assert suggest("listFile", tools)[0] == "fs__list_files"  # camelCase, singular
    assert suggest("counting.words", tools) == ["word_count"]  # dots, and an -ing form
    # Spelling first; then by words in common, ties by spelling (both share "list" with "listing_things").
    assert suggest("word_cont", tools)[0] == "word_count"
    assert suggest("listing_things", tools, limit=2) == ["list_issues", "fs__list_files"]
    assert suggest("nothing_alike", tools) == []


def test_only_the_first_200_characters_of_a_name_are_read() -> None:
    assert suggest("x" * 200 + "_word_count", ["word_count"]) == []  # its words past the cut are not read
    assert suggest("x" * 190 + "_word_count", ["word_count"]) == ["word_count"]


async def test_a_call_by_swapped_words_suggests_the_tool_over_the_wire() -> None:
    from lazytools import build_server

    from .conftest import client, make_settings, small_catalog, text_of

    async with client(build_server(small_catalog(), make_settings())) as c:
        direct = await c.call_tool("count_words", {"text": "a"})
        assert direct.is_error and "Did you mean: word_count" in text_of(direct)
        bridged = await c.call_tool("invoke_tool", {"tool_name": "text_reverse", "arguments": {"text": "a"}})
        assert bridged.is_error and "Did you mean: reverse_text" in text_of(bridged)


async def test_a_tool_the_session_lists_is_suggested_once() -> None:
    from lazytools import build_server

    from .conftest import client, make_settings, small_catalog, text_of

    async with client(build_server(small_catalog(), make_settings())) as c:
        await c.call_tool("search_tools", {"tool_names": ["reverse_text", "word_count"]})
        # Listed and in the catalog: found by words in both lists, and named once.
        swapped = await c.call_tool("count_words", {"text": "a"})
        assert swapped.is_error and text_of(swapped) == "Unknown tool 'count_words'. Did you mean: word_count?"
        alone = await c.call_tool("text", {"text": "a"})
        assert alone.is_error and text_of(alone) == "Unknown tool 'text'. Did you mean: reverse_text?"


def test_names_given_twice_are_suggested_once() -> None:
    tools = ["reverse_text", "word_count", "reverse_text", "list_issues", "word_count"]
    assert suggest("text_reverse", tools) == ["reverse_text"]
    assert suggest("Reverse_Text", tools) == ["reverse_text"]
    assert suggest("count", tools) == ["word_count"]


def test_a_name_is_never_suggested_for_itself() -> None:
    assert suggest("invoke_tool", ["search_tools", "invoke_tool"]) == ["search_tools"]


def test_a_name_sharing_words_with_every_tool_costs_a_bounded_number_of_spelling_ratios(monkeypatch) -> None:
    import difflib

    calls: list[int] = []
    ratio = difflib.SequenceMatcher.ratio

    def counted(self: difflib.SequenceMatcher[str]) -> float:
        calls.append(1)
        return ratio(self)

    monkeypatch.setattr(difflib.SequenceMatcher, "ratio", counted)
    found = suggest("get_item_" * 30, [f"get_item_{i}" for i in range(2_000)])  # every tool shares both words
    assert len(found) == 3 and all(name.startswith("get_item_") for name in found)
    assert len(calls) <= 64, len(calls)  # not one per tool: each full ratio costs the product of the lengths


def test_an_unknown_group_is_refused_with_the_close_ones_and_all_of_them() -> None:
    from lazytools.catalog import GROUPS_CHARS
    from lazytools.errors import ToolArgumentsError, UnknownGroupError

    catalog = Catalog()
    catalog.add(_group("weather", "forecast"))
    catalog.add(_group("weather_alerts", "alerts"))
    catalog.add(_group("files", "read_file"))
    catalog.check_group("files")  # a group it has: nothing raised
    with pytest.raises(UnknownGroupError) as refused:
        catalog.check_group("Weather")
    message = str(refused.value)
    assert isinstance(refused.value, ToolArgumentsError)  # a client's bad argument, answered as one
    assert "Did you mean: weather, weather_alerts?" in message and message.endswith("Groups: weather, weather_alerts, files")
    hostile = "x" * 100_000
    with pytest.raises(UnknownGroupError) as long_name:
        catalog.check_group(hostile)
    assert len(str(long_name.value)) < GROUPS_CHARS  # the client's own text is echoed cut, not whole


def test_among_many_names_alike_only_a_shortlist_is_spelled_out_and_the_closest_is_still_found() -> None:
    import difflib

    from lazytools import catalog as catalog_module

    names = [f"srv{i % 40}__{verb}_{thing}_{i}" for i, (verb, thing) in
             enumerate((v, t) for v in ("get", "list", "create", "delete") for t in ("issue", "file", "page", "user")
                       for _ in range(625))]
    assert len(names) == 10_000
    near = catalog_module._comparable("Srv3__Create_Issue_8", names)
    assert len(near) == catalog_module._SPELLED < len(names)
    # The shortlist holds what difflib would pick from every name.
    assert set(difflib.get_close_matches("Srv3__Create_Issue_8", names, n=3)) <= set(near)
    assert "srv3__create_issue_5083" in names
    assert suggest("srv3__create_isue_5083", names)[0] == "srv3__create_issue_5083"
    # A long name is compared with none of them: no name is near its length.
    assert catalog_module._comparable("get_issue_" + "a" * 190, names) == []


async def test_unknown_names_in_a_large_catalog_are_spelled_in_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from lazytools import build_server
    from lazytools.server import core

    from .conftest import client, make_settings, text_of

    catalog = Catalog()
    names = [f"tool_{number}_report" for number in range(core.SUGGESTED_ON_LOOP)] + ["word_count", "reverse_text"]
    catalog.set_group(Group("many"), [ToolEntry(name=name, group="many", description="A tool.",
                                                input_schema={"type": "object"}, call=_never) for name in names])
    spelled_in: list[threading.Thread] = []

    def spelling(name: str, candidates: Any, limit: int = 3) -> list[str]:
        spelled_in.append(threading.current_thread())
        return suggest(name, candidates, limit)

    monkeypatch.setattr(core, "suggest", spelling)
    async with client(build_server(catalog, make_settings())) as c:
        direct = await c.call_tool("count_words", {"text": "a"})
        bridged = await c.call_tool("invoke_tool", {"tool_name": "text_reverse", "arguments": {}})
    assert direct.is_error and "Did you mean: word_count" in text_of(direct)
    assert bridged.is_error and "Did you mean: reverse_text" in text_of(bridged)
    assert len(spelled_in) == 2 and threading.main_thread() not in spelled_in
