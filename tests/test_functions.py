"""In-process tools: schemas from type hints, descriptions from docstrings, results and errors."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from lazytools import ToolArgumentsError, ToolExecutionError, function_tool
from lazytools.sources.functions import to_result


def convert(value: Annotated[float, Field(description="Number to convert")],
            unit: Literal["c", "f"] = "c", precise: bool = False) -> dict[str, Any]:
    """Convert a temperature.

    More details that are not the summary."""
    return {"value": value, "unit": unit, "precise": precise}


async def async_tool(name: str) -> str:
    """Greet asynchronously."""
    return f"hi {name}"


def test_schema_comes_from_type_hints_without_titles() -> None:
    entry = function_tool(convert, group="units")
    schema = dict(entry.input_schema)
    assert schema["required"] == ["value"]
    assert schema["properties"]["value"] == {"description": "Number to convert", "type": "number"}
    assert schema["properties"]["unit"]["enum"] == ["c", "f"]
    assert schema["additionalProperties"] is False
    assert "title" not in schema and "title" not in schema["properties"]["unit"]
    assert entry.description.startswith("Convert a temperature.") and entry.summary == "Convert a temperature."


async def test_calls_sync_and_async_functions() -> None:
    result = await function_tool(convert, group="u").call({"value": 3})
    assert result.structured_content == {"value": 3.0, "unit": "c", "precise": False}
    greeting = await function_tool(async_tool, group="g").call({"name": "Ada"})
    assert greeting.content[0].text == "hi Ada"  # type: ignore[union-attr]


async def test_bad_arguments_and_failures_raise_library_errors() -> None:
    entry = function_tool(convert, group="u")
    with pytest.raises(ToolArgumentsError, match="value"):
        await entry.call({"value": "warm"})

    def fails() -> None:
        """Fail."""
        raise ValueError("no such unit")

    with pytest.raises(ToolExecutionError, match="ValueError: no such unit"):
        await function_tool(fails, group="u").call({})


def test_results_keep_text_and_structure() -> None:
    assert to_result([1, 2]).content[0].text == "[1, 2]"  # type: ignore[union-attr]
    assert to_result([1, 2]).structured_content is None
    assert to_result({"a": 1}).structured_content == {"a": 1}
    assert to_result("plain").content[0].text == "plain"  # type: ignore[union-attr]


def test_variadic_functions_are_refused() -> None:
    def variadic(*args: int) -> int:
        """Nope."""
        return 0

    with pytest.raises(TypeError, match="args"):
        function_tool(variadic, group="g")
