"""Steps a request implies take a place among its results: a tool that writes where the result goes, and the tool
that produces what one of the best results requires."""

from __future__ import annotations

from lazytools import ToolEntry
from lazytools.search import SearchIndex
from lazytools.search.steps import deliverable

from .fixtures.catalogs import _never


def _tool(name: str, description: str) -> ToolEntry:
    return ToolEntry(name=name, group="g", description=description, call=_never,
                     input_schema={"type": "object", "properties": {}})


def _catalog() -> list[ToolEntry]:
    searches = [_tool(f"web_search_{i}", f"Search the web for news and pages, engine {i}.") for i in range(6)]
    return [*searches, _tool("write_file", "Create a new file or overwrite a file with new content."),
            _tool("create_page", "Create a page in the wiki."), _tool("read_file", "Read a file's contents.")]


def test_a_named_output_file_brings_the_file_writer_into_the_results() -> None:
    index = SearchIndex(_catalog())
    plain = [hit.entry.name for hit in index.search("search the web for news about the AI Act", limit=5)]
    exported = [hit.entry.name for hit in index.search("search the web for news about the AI Act and export the "
                                                       "headlines to a CSV", limit=5)]
    assert "write_file" not in plain
    # After the five places, never in place of the fifth: the ranking's places stay the ranking's.
    assert exported[5] == "write_file" and exported[:5] == plain[:5] and len(exported) == 6


def test_what_is_not_an_output_takes_no_place() -> None:
    assert deliverable("add a comment to the notion page") is None
    assert deliverable("search the web for news about the AI Act") is None
    assert deliverable("export the orders to a CSV") is not None
    assert deliverable("write the findings to report.md") is not None
    index = SearchIndex(_catalog())
    query = "search the web for news about the AI Act and export the headlines to a CSV"
    few = [hit.entry.name for hit in index.search(query, limit=2)]
    assert "write_file" not in few  # one or two results are the request's main tools



def test_the_producer_of_a_top_result_comes_after_the_places() -> None:
    def chat(name: str, description: str, *required: str) -> ToolEntry:
        return ToolEntry(name=name, group="chat", description=description, call=_never,
                         input_schema={"type": "object", "properties": {p: {"type": "string"} for p in required},
                                       "required": list(required)})

    index = SearchIndex([
        chat("post_message", "Post a message to a channel.", "channel_id", "text"),
        *[chat(f"post_note_{i}", f"Post a message as a note, variant {i}.") for i in range(6)],
        chat("list_channels", "List the rooms a message can go to."),
        *[chat(f"other_{i}", f"Resize an image to a width, variant {i}.") for i in range(20)],
    ])
    ranked = [hit.entry.name for hit in index.search("post a message", limit=9)]
    five = [hit.entry.name for hit in index.search("post a message", limit=5)]
    assert ranked.index("list_channels") > 4  # on its own words it ranks last
    assert five[0] == "post_message" and five[5] == "list_channels" and five[:5] == ranked[:5]
    two = [hit.entry.name for hit in index.search("post a message", limit=2)]
    assert "list_channels" not in two


def test_no_producer_for_an_action_a_better_result_already_does_without_one() -> None:
    def maps(name: str, group: str, description: str, *required: str) -> ToolEntry:
        return ToolEntry(name=name, group=group, description=description, call=_never,
                         input_schema={"type": "object", "properties": {p: {"type": "string"} for p in required},
                                       "required": list(required)})

    fillers = [maps(f"walk_log_{i}", "diary", f"Two places to visit, list {i}.") for i in range(6)]
    plain = maps("maps_directions", "roads", "Walking directions between two places.", "origin")
    needing = maps("maps_directions_trail", "trails", "Trail directions.", "latitude",
                   "longitude")
    geocoder = maps("geocode", "trails", "Coordinates of an address.", "address")
    # The trails server's directions need its geocoder; ranked second under the roads server's directions, which
    # need nothing, it brings none: the fifth place stays with what the request's words found.
    index = SearchIndex([plain, needing, geocoder, *fillers])
    five = [hit.entry.name for hit in index.search("directions between two places", limit=5)]
    assert five[:2] == ["maps_directions", "maps_directions_trail"] and "geocode" not in five
    # Alone at the top, it brings its geocoder into the last place.
    alone = SearchIndex([needing, geocoder, *fillers])
    assert [hit.entry.name for hit in alone.search("directions between two places", limit=5)][-1] == "geocode"
