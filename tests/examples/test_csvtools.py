"""Tests for lazytools_examples.csvtools."""

import pytest
from lazytools_examples import csvtools as c


def test_csv_to_json() -> None:
    result = c.csv_to_json("name,age,score\nAnn,30,1.5\nBob,007,\n")
    assert result["columns"] == ["name", "age", "score"]
    assert result["records"] == [{"name": "Ann", "age": 30, "score": 1.5}, {"name": "Bob", "age": "007", "score": ""}]
    semicolons = c.csv_to_json("a;b\n1;2\n3;4\n", convert_numbers=False)
    assert semicolons["records"] == [{"a": "1", "b": "2"}, {"a": "3", "b": "4"}]
    with pytest.raises(ValueError, match="row 2 has 3 fields"):
        c.csv_to_json("a,b\n1,2,3\n", delimiter=",")
    with pytest.raises(ValueError, match="duplicate column"):
        c.csv_to_json("a,a\n1,2\n", delimiter=",")
    with pytest.raises(ValueError, match="empty"):
        c.csv_to_json("  ")


def test_json_to_csv() -> None:
    text = c.json_to_csv([{"a": 1, "b": {"x": 1}}, {"a": 2, "c": True}])
    assert text == 'a,b,c\n1,"{""x"": 1}",\n2,,true\n'
    assert c.json_to_csv([{"a": 1, "b": 2}], columns=["b"], delimiter=";") == "b\n2\n"
    with pytest.raises(ValueError, match="at least one"):
        c.json_to_csv([])


def test_csv_column_stats() -> None:
    stats = c.csv_column_stats("x,y\n1,a\n2,b\n3,a\n,c\n")
    assert stats["row_count"] == 4
    x, y = stats["columns"]["x"], stats["columns"]["y"]
    assert x["numeric"] is True and x["mean"] == 2 and x["empty"] == 1 and x["max"] == 3
    assert y["numeric"] is False and y["most_common"][0] == {"value": "a", "count": 2} and y["distinct"] == 3


def test_records_to_markdown_table() -> None:
    table = c.records_to_markdown_table([{"name": "a|b", "n": 1}, {"name": "c", "n": 22}])
    lines = table.splitlines()
    assert lines[0] == "| name | n   |"
    assert lines[1] == "| ---- | --: |"
    assert lines[2] == "| a\\|b |   1 |"
    assert len(lines) == 4
    with pytest.raises(ValueError, match="at least one"):
        c.records_to_markdown_table([])
