"""The catalog: unique valid names, groups replaced whole, close-match suggestions, change listeners."""

from __future__ import annotations

import pytest

from lazytools import Catalog, ConfigError, FunctionGroup, Group, UnknownToolError
from lazytools.catalog import suggest


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
