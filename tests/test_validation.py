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


async def test_only_small_arguments_against_a_trusted_schema_are_checked_inline() -> None:
    import threading

    from lazytools.validation import INLINE_BYTES, validate_call

    seen: list[bool] = []
    main = threading.current_thread()

    class Spy(dict[str, object]):
        """An argument object that notes which thread looks at it."""

        def __getitem__(self, key: str) -> object:  # the schema's check reads each property
            seen.append(threading.current_thread() is main)
            return super().__getitem__(key)

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    for trusted, text, inline in ((True, "x", True), (False, "x", False), (True, "x" * (INLINE_BYTES * 2), False)):
        seen.clear()
        assert await validate_call("t", schema, Spy(text=text), trusted=trusted) == {"text": text}
        assert seen and all(flag == inline for flag in seen), (trusted, len(text))
