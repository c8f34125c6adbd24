"""Which tool of a server produces what another of its tools requires: `channel_id` ← `list_channels`.

A tool that requires `connectionId`, `channel_id` or `libraryId` cannot be called until some other tool of the
same server has given that id: MongoDB's `connect`, Slack's `list_channels`, Context7's `resolve-library-id`.
Search finds the tool a request names ("post in #general") and misses the one it silently needs, so each found
tool brings its producers as suggestions. A producer is read from names alone: a required parameter `<thing>_id`
(or `<thing>Id`), and a tool of the same group, not itself requiring that parameter, whose name holds the thing
and a verb that finds or makes one (list, search, get, find, resolve, connect).

Coordinates are produced the same way: a tool that requires latitude and longitude (or `coordinates`), such as
every Open-Meteo forecast, or a parameter its description says is coordinates and not an address (in English or
Chinese: AMap's routes take "经纬度"), needs a geocoder of its server first (`geocoding`, `ForwardGeocodeTool`,
`maps_geo`): a tool of the group whose name holds "geo"/"geocode" and that does not itself require coordinates (a
reverse geocoder does).

Producers are appended after the results (at most two per search); and when one of the two best results needs a
producer and no result is one, its first producer takes the last of the results (`SearchIndex.find`): replacing
the last place for any result's producer did not gain, for the best results' it did (docs/search-log.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from ..entry import ToolEntry
from .analysis import split_words, stem

__all__ = ["DISCOVERY_VERBS", "MAX_PRODUCERS", "ProducerMemo", "input_producers"]

DISCOVERY_VERBS = frozenset(stem(word) for word in "list search find get resolve connect lookup query".split())
"""A producer's name holds one of these: it finds or makes the thing whose id another tool requires."""

MAX_PRODUCERS = 2
"""At most this many producers are suggested per search."""

_ID_WORDS = frozenset({"id", "ids"})
_LATITUDE = frozenset({"latitude", "lat"})
_LONGITUDE = frozenset({"longitude", "lon", "lng", "long"})
_GEOCODERS = frozenset({stem("geocode"), "geo"})
"""A coordinates producer's name holds one of these stems (geocode, geocoding, maps_geo)."""


_COORDINATE_WORDS = ("coordinates", "latitude", "longitude", "经纬度", "经度", "纬度", "坐标")
"""A required parameter whose description says one of these (and no address) takes coordinates: AMap's
`maps_direction_driving` takes `origin`, "出发点经纬度" (the starting point's longitude and latitude)."""
_ADDRESS_WORDS = ("address", "地址", "名称", "name")
"""...unless it also says it takes an address or a name: Google's `maps_directions` takes "address or
coordinates"."""


def _needs_coordinates(required: Sequence[str], properties: Mapping[str, Any] | None = None,
                       says_coordinates: Callable[[str], bool] | None = None) -> bool:
    """Whether a tool with these required parameters (and these `properties` of its schema) takes coordinates;
    `says_coordinates` reads a parameter's description (`_says_coordinates`, or one build's memo of it)."""
    says = _says_coordinates if says_coordinates is None else says_coordinates
    names = {name.lower() for name in required}
    if names & _LATITUDE and names & _LONGITUDE or "coordinates" in names:
        return True
    if not properties:
        return False
    for name in required:
        described = properties.get(name)
        if isinstance(described, Mapping) and says(str(described.get("description", ""))):
            return True
    return False


def _says_coordinates(description: str) -> bool:
    text = description.lower()
    return any(word in text for word in _COORDINATE_WORDS) and not any(word in text for word in _ADDRESS_WORDS)


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, Mapping) else {}


def _required(schema: Mapping[str, Any]) -> list[str]:
    required = schema.get("required")
    return [name for name in required if isinstance(name, str)] if isinstance(required, list) else []


def _thing(parameter: str) -> frozenset[str]:
    """The stems of what an id parameter names ("data_source_id" → data, sourc), empty for anything else."""
    words = split_words(parameter)
    if len(words) < 2 or words[-1] not in _ID_WORDS:
        return frozenset()
    return frozenset(stem(word) for word in words[:-1])


class ProducerMemo:
    """One build's memos: a catalog's tools share their parameters' names (owner, repo, channel_id) and
    descriptions ("Latitude of the location"); kept for the build only, not holding an old catalog's texts."""

    __slots__ = ("says_coordinates", "thing_of")

    def __init__(self) -> None:
        self.thing_of = lru_cache(maxsize=None)(_thing)
        self.says_coordinates = lru_cache(maxsize=None)(_says_coordinates)


def input_producers(entries: Sequence[ToolEntry], names: Sequence[Sequence[str]] | None = None,
                    memo: ProducerMemo | None = None) -> list[tuple[int, ...]]:
    """For each entry, the positions of the tools of its group that produce the ids it requires, in catalog
    order (none for most tools). `names`: each tool's name words (`split_words` of its upstream name), which the
    index has split already; `memo`: this build's, when its servers' tools are read server by server."""
    memo = ProducerMemo() if memo is None else memo
    thing_of, says_coordinates = memo.thing_of, memo.says_coordinates
    by_group: dict[str, list[int]] = {}
    for position, entry in enumerate(entries):
        by_group.setdefault(entry.group, []).append(position)
    required = [_required(entry.input_schema) for entry in entries]
    if names is None:
        names = [split_words(entry.upstream_name or entry.name) for entry in entries]
    stems = [[stem(word) for word in words] for words in names]
    # Whether each tool takes coordinates, asked once per tool (a tool that does is checked against its group).
    coordinates = [_needs_coordinates(required[position], _properties(entry.input_schema), says_coordinates)
                   for position, entry in enumerate(entries)]
    # Per group: stem of a name word -> the discovery tools whose names hold it.
    finders: dict[str, dict[str, list[int]]] = {}
    for group, positions in by_group.items():
        index: dict[str, list[int]] = {}
        for position in positions:
            words = stems[position]
            if not DISCOVERY_VERBS.isdisjoint(words):
                # A discovery verb names what a tool finds only as its last word ("get_lists" finds lists,
                # "list_boards" boards).
                named = {word for number, word in enumerate(words)
                         if word not in DISCOVERY_VERBS or number == len(words) - 1}
                for word in named:
                    index.setdefault(word, []).append(position)
        finders[group] = index
    producers: list[tuple[int, ...]] = []
    for position, entry in enumerate(entries):
        found: list[int] = []
        index = finders[entry.group]
        for parameter in required[position]:
            thing = thing_of(parameter)
            if not thing:
                continue
            candidates = set.intersection(*(set(index.get(word, ())) for word in thing))
            found += [other for other in sorted(candidates)
                      if other != position and parameter not in required[other] and other not in found]
        if coordinates[position]:
            found += [other for other in by_group[entry.group]
                      if other != position and other not in found and not coordinates[other]
                      and not _GEOCODERS.isdisjoint(stems[other])]
        producers.append(tuple(found))
    return producers
