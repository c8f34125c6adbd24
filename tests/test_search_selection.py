"""search.selection decides what a search returns: the floor, the cap, producers and unmatched needs, in one object."""

from __future__ import annotations

from lazytools import Catalog, Group, ToolEntry
from lazytools.search import SearchIndex, select

from .conftest import small_catalog
from .fixtures.catalogs import realistic


def _entry(name: str, description: str, *required: str) -> ToolEntry:
    properties = {param: {"type": "string"} for param in required}
    return ToolEntry(name=name, description=description, group="chat", call=realistic()[0].call,
                     input_schema={"type": "object", "properties": properties, "required": list(required)})


def _chat() -> Catalog:
    catalog = Catalog()
    catalog.set_group(Group("chat", ""), [
        _entry("chat_post_message", "Post a message to a channel.", "channel_id", "text"),
        _entry("chat_list_channels", "List the workspace's public rooms."),
        _entry("chat_add_reaction", "Add an emoji reaction.", "channel_id", "timestamp"),
    ])
    return catalog


def test_weaker_matches_are_suggested_and_producers_follow() -> None:
    catalog = _chat()
    index = SearchIndex(list(catalog))
    selection = select(catalog, index, query="post a message", limit=1)
    assert [e.name for e in selection.enabled] == ["chat_post_message"]
    assert "chat_list_channels" in [e.name for e in selection.producers]
    assert selection.returned[: len(selection.enabled)] == selection.enabled
    assert len({e.name for e in selection.returned}) == len(selection.returned)


def test_the_cap_moves_matches_to_suggestions_but_never_pinned_tools() -> None:
    catalog = small_catalog()
    index = SearchIndex(list(catalog))
    free = select(catalog, index, query="weather forecast alerts", limit=5, floor=0.0)
    assert len(free.enabled) >= 2 and not free.over_cap
    first, second = free.enabled[0].name, free.enabled[1].name
    capped = select(catalog, index, query="weather forecast alerts", limit=5, floor=0.0, enable_at_most=1,
                    pinned={second})
    assert [e.name for e in capped.enabled][:2] == [first, second]
    assert [e.name for e in capped.over_cap] == [e.name for e in free.enabled[2:]]
    assert capped.suggested[: len(capped.over_cap)] == capped.over_cap


def test_a_group_without_a_query_is_listed_up_to_the_limit() -> None:
    catalog = small_catalog()
    index = SearchIndex(list(catalog))
    members = catalog.in_group("weather")
    selection = select(catalog, index, query="", group="weather", limit=1)
    assert selection.enabled == members[:1]
    assert selection.group_size == (len(members) if len(members) > 1 else None)


def test_one_result_carries_the_ranking_the_selection_and_the_text_sent() -> None:
    from lazytools.server.metatools import search_tools

    catalog = _chat()
    index = SearchIndex(list(catalog))
    ranked = index.find("post a message", limit=3)
    selected = select(catalog, index, query="post a message", limit=3)
    # The selection is filled into the ranking's own result: its scores and evidence are the index's.
    assert [(h.entry.name, h.score) for h in selected.hits] == [(h.entry.name, h.score) for h in ranked.hits]
    assert selected.evidence == ranked.evidence and selected.text == ""
    served = search_tools(catalog, index, {"query": "post a message", "tool_names": ["chat_post_mesage"]},
                          surface="proxy", default_limit=3, max_limit=5, bridge=True)
    assert served.hits == selected.hits and served.enabled[0].name == "chat_post_message"
    assert len(served.unknown) == 1 and "chat_post_message" in served.unknown[0]
    # The text is rendered from this same object: every tool it returns and the unknown name's error are in it.
    assert served.unknown[0] in served.text
    assert all(entry.name in served.text for entry in served.returned)
