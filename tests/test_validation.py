"""Argument validation names every problem and shows the schema."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest

from lazytools import ToolArgumentsError
from lazytools.validation import Limits, validate_arguments

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
@pytest.mark.parametrize("trusted", [False, True])
def test_invalid_arguments_are_named(arguments: object, expected: str, trusted: bool) -> None:
    # A trusted schema (the author's own) is checked without the per-keyword guards, to the same verdict.
    with pytest.raises(ToolArgumentsError) as info:
        validate_arguments("t", SCHEMA, arguments, trusted=trusted)
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
        assert await validate_call("t", schema, Spy(text=text), Limits.defaults(), trusted=trusted) == {"text": text}
        assert seen and all(flag == inline for flag in seen), (trusted, len(text))


async def test_nan_and_infinity_are_refused_once_an_upstream_schema_is_checked_inline() -> None:
    """A "number" keyword takes Python's NaN; the inline check of an upstream's schema (after the first call built
    its validator) must refuse it as the full check does, not pass it on for the SDK to send as null."""
    from lazytools import validation

    schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}
    limits = Limits.defaults()
    assert await validation.validate_call("sum", schema, {"a": 1, "b": 2}, limits, trusted=False) == {"a": 1, "b": 2}
    for odd in ({"a": float("nan"), "b": 1}, {"a": 1, "b": float("inf")}, {"a": 1, "b": [float("-inf")]}):
        with pytest.raises(ToolArgumentsError, match="NaN and Infinity are not JSON numbers"):
            await validation.validate_call("sum", schema, odd, limits, trusted=False)


async def test_small_arguments_against_an_upstream_schema_are_checked_inline_once_it_is_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An upstream's schema is not trusted: its first check (which builds the validator) runs in a worker thread;
    then small arguments that pass quickly are checked on the event loop; a failure, or a check that outlasts
    INLINE_SECONDS, is checked again in a worker thread and reported as always."""
    from lazytools import validation

    off_loop: list[object] = []
    real = validation.validate_off_loop

    async def counted(tool: str, schema: Any, arguments: Any, limits: Limits) -> dict[str, Any]:
        off_loop.append(arguments)
        return await real(tool, schema, arguments, limits)

    monkeypatch.setattr(validation, "validate_off_loop", counted)
    # The inline budget is 2 ms of wall time: on a busy machine a check that passes in microseconds can be paused
    # for longer. What is tested is which checks go off the loop, so the budget here cannot run out.
    monkeypatch.setattr(validation, "INLINE_SECONDS", 60.0)
    schema = {"type": "object", "properties": {"text": {"type": "string", "pattern": "^(a|aa)+$"}}}
    # The pattern's own limit (1 s of CPU) must end the slow check, not the whole check's wall-clock one.
    limits = Limits(timeout=120.0, max_bytes=Limits.defaults().max_bytes)
    first, second, wrong, slow = {"text": "aaa"}, {"text": "aaaa"}, {"text": "b"}, {"text": "a" * 40 + "!"}
    assert await validation.validate_call("t", schema, first, limits, trusted=False) == first
    assert await validation.validate_call("t", schema, second, limits, trusted=False) == second
    assert off_loop == [first]
    with pytest.raises(ToolArgumentsError, match="does not match"):
        await validation.validate_call("t", schema, wrong, limits, trusted=False)
    with pytest.raises(ToolArgumentsError, match="it backtracks"):
        await validation.validate_call("t", schema, slow, limits, trusted=False)
    assert off_loop == [first, wrong, slow]


def test_each_schema_object_is_checked_by_its_own_validator() -> None:
    # Validators are cached by schema object: a schema of the same id but another content (a re-listed tool, a
    # replaced entry) must never be judged by the old one's validator.
    first = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert validate_arguments("t", first, {"n": 1}) == {"n": 1}
    with pytest.raises(ToolArgumentsError, match="'x' is not of type 'integer'"):
        validate_arguments("t", first, {"n": "x"})
    second = {"type": "object", "properties": {"n": {"type": "string"}}}
    assert validate_arguments("t", second, {"n": "x"}) == {"n": "x"}
    with pytest.raises(ToolArgumentsError, match="1 is not of type 'string'"):
        validate_arguments("t", second, {"n": 1})
    for _ in range(3):  # many short-lived schemas, ids reused by the allocator: each judged by its own content
        kind = {"type": "object", "properties": {"n": {"type": "boolean"}}, "required": ["n"]}
        with pytest.raises(ToolArgumentsError, match="'n' is a required property"):
            validate_arguments("t", kind, {})
        del kind


@pytest.mark.parametrize("arguments", [
    {"tool_name": "t"}, {"tool_name": "t", "arguments": {}}, {"tool_name": "t", "arguments": {"a": [1]}},
    {}, {"tool_name": 5}, {"tool_name": None}, {"tool_name": "t", "arguments": None},
    {"tool_name": "t", "arguments": []}, {"tool_name": "t", "arguments": "{}"}, {"tool_name": "t", "extra": 1},
    {"arguments": {}}, ["t"], None, "t", {"tool_name": True},
])
def test_invoke_tools_own_arguments_are_judged_as_its_schema_judges_them(arguments: object) -> None:
    from lazytools.catalog import Catalog
    from lazytools.server.metatools import INVOKE_TOOL, invoke_tool_definition, resolve_invocation

    def outcome(check: Any) -> str:
        try:
            check()
        except ToolArgumentsError as exc:
            return str(exc)
        except LookupError:
            return "valid"  # resolved past the check: the catalog is empty
        return "valid"

    by_schema = outcome(lambda: validate_arguments(INVOKE_TOOL, invoke_tool_definition().input_schema, arguments))
    served = outcome(lambda: resolve_invocation(Catalog(), arguments))  # type: ignore[arg-type]
    assert served == by_schema


@pytest.mark.parametrize(("arguments", "where"), [
    ({"f": float("nan")}, "f"), ({"items": [1.0, float("inf")]}, "items.1"), ({"p": {"x": float("-inf")}}, "p.x"),
])
def test_nan_and_infinity_are_refused_as_not_json(arguments: dict[str, object], where: str) -> None:
    """Python's JSON parser reads NaN and Infinity; JSON has neither, and no schema keyword refuses them."""
    schema = {"type": "object"}
    with pytest.raises(ToolArgumentsError, match=rf"^Invalid arguments for t: {re.escape(where)}: NaN and Infinity "
                                                 r"are not JSON numbers.*Input schema: \{"):
        validate_arguments("t", schema, arguments)
    assert validate_arguments("t", schema, {"f": 1e308, "items": [0.5]}) == {"f": 1e308, "items": [0.5]}


_ENDLESS_CALLS = """
import json
from lazytools.validation import validate_arguments
schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "$ref": "#"}
print(json.dumps(validate_arguments("t", schema, {"a": 1})))
print(json.dumps(validate_arguments("t", schema, {"a": 1})))
print(json.dumps(validate_arguments("t", schema, {"a": 1})))
try:
    validate_arguments("t", schema, {"n": "x"})
except Exception as exc:
    print(json.dumps(str(exc)))
"""
# Each call at the top of the script: where the recursion limit is reached (in Python, or inside the Rust maps,
# which panic) depends on how deep the stack already is, and a comprehension's frame was enough to move it.


@pytest.mark.process
def test_a_schema_that_recurses_without_end_is_tried_once() -> None:
    """Before: every call with `$ref: "#"` reached the recursion limit again, inside jsonschema's Rust maps (in a
    process of its own: under pytest's deeper stack Python's limit comes first), whose panic printed itself to
    stderr each time, with RUST_BACKTRACE=1 some 350 lines a call."""
    done = subprocess.run([sys.executable, "-c", _ENDLESS_CALLS], capture_output=True, text=True, check=True,
                          timeout=300, env={**os.environ, "RUST_BACKTRACE": "1"})
    *accepted, refused = [json.loads(line) for line in done.stdout.splitlines()]
    assert accepted == [{"a": 1}] * 3
    assert "n: 'x' is not of type 'integer'" in refused  # what can be checked still is
    assert done.stderr.count("panicked") <= 1, done.stderr[:2000]


def test_a_type_error_says_null_true_and_false_as_json_does() -> None:
    """The model wrote JSON: Python's `None is not of type 'number'` read as if it had sent a word "None"; a null
    number is also what a client's encoder makes of NaN and Infinity, which the error now says."""
    schema = {"type": "object", "properties": {"x": {"type": "number"}, "flag": {"type": ["string", "integer"]}}}
    with pytest.raises(ToolArgumentsError) as refused:
        validate_arguments("t", schema, {"x": None, "flag": True})
    message = str(refused.value)
    assert "x: null is not of type 'number' (JSON has no NaN or Infinity" in message
    assert "flag: true is not of type 'string' or 'integer'" in message and "None" not in message.split("Input")[0]
