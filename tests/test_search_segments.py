"""A live index reads again only the groups whose tools changed: the index it builds so is the one a fresh build
gives, part for part."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from lazytools import Catalog, Group, ToolEntry
from lazytools.search import LiveIndex, SearchIndex
from lazytools.search.segments import assemble, catalog_segments

from .fixtures.catalogs import realistic, tool


def _parts(index: SearchIndex) -> list[Any]:
    postings = index._bm25
    return [postings._keys.tolist(), postings._weights.tolist(), postings._starts.tolist(), postings._ends.tolist(),
            postings.idf, postings.vocabulary, sorted(postings.rendered_only), [sorted(k) for k in index._name_keys],
            index._copy_of.tolist(), index._producers, index._writes, index.vocabulary._sorted,
            sorted(index._names._lower.items()), sorted(index._names._compact.items())]


def _changed(entries: list[ToolEntry], group: str) -> list[ToolEntry]:
    """`entries` with `group`'s tools described anew and one more of them, moved to the end (as
    `Catalog.set_group` orders them)."""
    others = [entry for entry in entries if entry.group != group]
    mine = [replace(entry, description=f"{entry.description} Needs a channel_id from list_channels.")
            for entry in entries if entry.group == group]
    extra = tool(f"{group}__list_channels", "List every channel of the workspace.", group)
    need = tool(f"{group}__post_message", "Post a message.", group, channel_id="Channel id")
    need = replace(need, input_schema={**need.input_schema, "required": ["channel_id"]})
    return [*others, *mine, extra, need]


def test_an_index_built_from_kept_segments_is_a_fresh_build_part_for_part() -> None:
    entries = realistic()
    previous = {segment.group: segment for segment in catalog_segments(entries)}
    changed = _changed(entries, "github")
    segments = catalog_segments(changed, previous)
    kept = [segment for segment in segments if segment is previous.get(segment.group)]
    assert {segment.group for segment in kept} == set(previous) - {"github"}
    rebuilt = SearchIndex(changed, segments=segments)
    fresh = SearchIndex(changed)
    assert _parts(rebuilt) == _parts(fresh)
    assert rebuilt._producers[-1] == (len(changed) - 2,)  # the new tool's producer, found in its own segment
    query = "post a message to the channel and list the github issues"
    assert [hit.entry.name for hit in rebuilt.search(query)] == [hit.entry.name for hit in fresh.search(query)]


def test_equal_tools_listed_again_keep_their_reading_with_the_new_objects() -> None:
    entries = realistic()
    previous = {segment.group: segment for segment in catalog_segments(entries)}
    again = [replace(entry) if entry.group == "github" else entry for entry in entries]
    segments = {segment.group: segment for segment in catalog_segments(again, previous)}
    github = segments["github"]
    assert github is not previous["github"] and github.rows is previous["github"].rows
    assert all(new is listed for new, listed in zip(github.entries, (e for e in again if e.group == "github"),
                                                     strict=True))


def test_segments_of_other_tools_are_refused() -> None:
    entries = realistic()
    segments = catalog_segments(entries)
    with pytest.raises(ValueError, match="groups"):
        assemble(entries, segments[1:])
    with pytest.raises(ValueError, match="holds"):
        assemble(entries[1:], segments)


async def test_a_live_index_reads_again_only_the_group_that_changed() -> None:
    catalog = Catalog()
    entries = realistic()
    for group in dict.fromkeys(entry.group for entry in entries):
        catalog.set_group(Group(group), [entry for entry in entries if entry.group == group])
    live = LiveIndex(catalog)
    first = await live.ready()
    before = dict(live._segments)
    catalog.set_group(Group("github"), [e for e in _changed(list(catalog), "github") if e.group == "github"])
    rebuilt = await live.ready()
    assert rebuilt is not first
    same = {group for group, segment in live._segments.items() if segment is before.get(group)}
    assert same == set(before) - {"github"}
    assert _parts(rebuilt) == _parts(SearchIndex(list(catalog)))
    assert np.array_equal(rebuilt.group_positions["github"], SearchIndex(list(catalog)).group_positions["github"])


def test_a_segments_rows_hold_the_fields_in_their_order() -> None:
    from lazytools.search.documents import FIELDS, field_words

    entries = realistic()
    assert all(tuple(field_words(entry)) == FIELDS for entry in entries)
    rows = [row for segment in catalog_segments(entries) for row in segment.rows]
    assert sorted(rows) == sorted(tuple(field_words(entry).values()) for entry in entries)


async def test_a_search_waits_for_one_build_while_the_catalog_keeps_changing() -> None:
    """Upstreams relisting while the index is built: the caller gets the build that began after it asked, not a
    wait for the catalog to stop changing."""
    catalog = Catalog()
    catalog.set_group(Group("misc"), [tool("alpha", "First tool.")])
    live = LiveIndex(catalog)
    await live.ready()
    build = live._build
    builds: list[int] = []

    def changing(entries: list[ToolEntry]) -> SearchIndex:
        builds.append(len(entries))
        if len(builds) < 5:  # each build sees the catalog change under it
            catalog.set_group(Group("misc"), [tool("alpha", "First tool."),
                                              *(tool(f"t{n}", "Another tool.") for n in range(len(builds)))])
        return build(entries)

    live._build = changing  # type: ignore[method-assign]
    catalog.set_group(Group("misc"), [tool("alpha", "First tool."), tool("zebra", "Second tool.")])
    index = await live.ready()
    assert builds == [2] and "zebra" in {entry.name for entry in index.entries}
    again = await live.ready()  # the change made during that build: the next search has it
    assert builds == [2, 2] and {entry.name for entry in again.entries} == {"alpha", "t0"}
