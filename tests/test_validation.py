"""Argument validation names every problem and shows the schema."""

from __future__ import annotations

import pytest

from lazytools import ToolArgumentsError
from lazytools.validation import validate_arguments

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 1}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["n"],
}


def test_valid_arguments_pass_through() -> None:
    assert validate_arguments("t", SCHEMA, {"n": 2}) == {"n": 2}
    assert validate_arguments("t", {"type": "object"}, None) == {}


@pytest.mark.parametrize(("arguments", "expected"), [
    ({}, "'n' is a required property"),
    ({"n": 0}, "n: 0 is less than the minimum of 1"),
    ({"n": 1, "tags": ["a", 2]}, "tags/1: 2 is not of type 'string'"),
    ([1, 2], "expected a JSON object, got list"),
])
def test_invalid_arguments_are_named(arguments: object, expected: str) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        validate_arguments("t", SCHEMA, arguments)
    assert expected in str(info.value) and "Input schema:" in str(info.value)


def test_a_broken_schema_does_not_block_the_call() -> None:
    assert validate_arguments("t", {"type": "nonsense-type"}, {"a": 1}) == {"a": 1}
