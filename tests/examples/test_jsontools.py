"""Tests for lazytools_examples.jsontools."""

import pytest
from lazytools_examples import jsontools as j


def test_validate_json() -> None:
    assert j.validate_json('{"a": [1, 2]}') == {"valid": True, "error": None, "line": None, "column": None, "top_level_type": "object"}
    bad = j.validate_json('{\n  "a": }')
    assert bad["valid"] is False and (bad["line"], bad["column"]) == (2, 8)
    assert j.validate_json("3.5")["top_level_type"] == "number"


def test_format_json() -> None:
    assert j.format_json('{"b":1, "a":[1, 2]}', sort_keys=True, minify=True) == '{"a":[1,2],"b":1}'
    assert j.format_json('{"a":{"b":"é"}}', indent=2) == '{\n  "a": {\n    "b": "é"\n  }\n}'
    with pytest.raises(ValueError, match="invalid JSON at line 1"):
        j.format_json("{'single': 'quotes'}")


def test_json_get_path() -> None:
    data = {"user": {"addresses": [{"city": "Paris"}, {"city": "Rome"}]}}
    assert j.json_get_path(data, "user.addresses[0].city")["value"] == "Paris"
    assert j.json_get_path(data, "$.user.addresses.-1.city")["value"] == "Rome"
    assert j.json_get_path(data, "user")["type"] == "object"
    assert j.json_get_path([10, 20], "[1]")["value"] == 20
    with pytest.raises(ValueError, match="key 'zip' not found"):
        j.json_get_path(data, "user.zip")
    with pytest.raises(ValueError, match="out of range"):
        j.json_get_path(data, "user.addresses[5]")
    with pytest.raises(ValueError, match="numeric index"):
        j.json_get_path(data, "user.addresses.first")


def test_flatten_json() -> None:
    flat = j.flatten_json({"a": {"b": 1, "c": [1, {"d": None}]}, "e": {}})
    assert flat == {"a.b": 1, "a.c.0": 1, "a.c.1.d": None, "e": {}}
    assert j.flatten_json({"a": {"b": 1}}, separator="/") == {"a/b": 1}
    deep: dict = {}
    node = deep
    for _ in range(150):
        node["x"] = {}
        node = node["x"]
    node["x"] = 1
    with pytest.raises(ValueError, match="nested too deeply"):
        j.flatten_json(deep)


def test_unflatten_json_round_trips() -> None:
    original = {"a": {"b": 1, "c": [1, {"d": None}]}, "e": "x"}
    assert j.unflatten_json(j.flatten_json(original)) == original
    with pytest.raises(ValueError, match="conflicts"):
        j.unflatten_json({"a": 1, "a.b": 2})


def test_diff_json() -> None:
    result = j.diff_json({"a": 1, "b": 2, "c": [1], "x": 1}, {"a": 1, "b": 3, "c": [1, 2], "d": 0, "x": 1.0})
    assert result["equal"] is False
    assert result["changes"] == [
        {"path": "b", "change": "changed", "old": 2, "new": 3},
        {"path": "c[1]", "change": "added", "new": 2},
        {"path": "d", "change": "added", "new": 0},
        {"path": "x", "change": "changed", "old": 1, "new": 1.0},
    ]
    assert j.diff_json({"a": [1]}, {"a": [1]})["equal"] is True
    assert j.diff_json({"gone": True}, {})["changes"][0]["change"] == "removed"
