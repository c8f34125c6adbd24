"""In-process tools: schemas from type hints, descriptions from docstrings, results and errors."""

from __future__ import annotations

import datetime
import decimal
import threading
import uuid
from typing import Annotated, Any, Literal

import mcp_types as types
import pytest
from pydantic import Field

from lazytools import FunctionGroup, ToolArgumentsError, ToolExecutionError, function_tool
from lazytools.sources.functions import INLINE_ATTRIBUTE, to_result
from lazytools.validation import INLINE_BYTES, schema_text


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


def _thread_of_call(text: str = "") -> int:
    """Report the thread the tool ran in."""
    return threading.get_ident()


async def test_sync_tools_run_in_a_worker_thread_unless_marked_inline() -> None:
    loop_thread = threading.get_ident()
    threaded = await function_tool(_thread_of_call, group="t").call({})
    assert threaded.content[0].text != str(loop_thread)  # type: ignore[union-attr]

    inline = await function_tool(_thread_of_call, group="t", inline=True).call({"text": "small"})
    assert inline.content[0].text == str(loop_thread)  # type: ignore[union-attr]
    # Large arguments go to a thread even for an inline tool: handling them may take a while.
    large = await function_tool(_thread_of_call, group="t", inline=True).call({"text": "x" * (INLINE_BYTES + 1)})
    assert large.content[0].text != str(loop_thread)  # type: ignore[union-attr]


async def test_a_module_marks_quick_functions_with_an_attribute_and_a_group_with_options() -> None:
    loop_thread = str(threading.get_ident())

    def marked() -> int:
        """Report the thread."""
        return threading.get_ident()

    setattr(marked, INLINE_ATTRIBUTE, True)
    assert (await function_tool(marked, group="t").call({})).content[0].text == loop_thread  # type: ignore[union-attr]
    # An explicit choice wins over the attribute.
    assert (await function_tool(marked, group="t", inline=False).call({})).content[0].text != loop_thread  # type: ignore[union-attr]

    group = FunctionGroup("g")

    @group.tool(inline=True, name="where")
    def where_inline() -> int:
        """Report the thread."""
        return threading.get_ident()

    @group.tool
    def where_threaded() -> int:
        """Report the thread."""
        return threading.get_ident()

    by_name = {entry.name: entry for entry in group.entries}
    assert set(by_name) == {"where", "where_threaded"}
    assert where_inline() == int(loop_thread)  # the decorator returns the function itself
    assert (await by_name["where"].call({})).content[0].text == loop_thread  # type: ignore[union-attr]
    assert (await by_name["where_threaded"].call({})).content[0].text != loop_thread  # type: ignore[union-attr]


def count(times: int, label: str = "x") -> dict[str, Any]:
    """Repeat a label."""
    return {"times": times, "label": label}


def on_day(day: datetime.date, ident: uuid.UUID, amount: decimal.Decimal) -> str:
    """Book something."""
    return f"{day} {ident} {amount}"


@pytest.mark.parametrize(("arguments", "problem"), [
    ({"day": "2024-13-01"}, "day: Input should be a valid date"),
    ({"ident": "not-a-uuid"}, "ident: Input should be a valid UUID"),
    ({"amount": "abc"}, "amount: Input should be a valid decimal"),
])
async def test_a_value_only_its_format_refuses_is_refused_with_the_schema(arguments: dict[str, Any],
                                                                         problem: str) -> None:
    """The JSON schema says `format: date` (not checked: formats are annotations), so only the model refuses month
    13; its refusal reads like every other one, the input schema included."""
    entry = function_tool(on_day, group="g")
    valid = {"day": "2024-01-01", "ident": "12345678-1234-5678-1234-567812345678", "amount": "1.5"}
    with pytest.raises(ToolArgumentsError) as refused:
        await entry.call({**valid, **arguments})
    message = str(refused.value)
    assert message.startswith("Invalid arguments for on_day: ") and problem in message
    assert message.endswith(f"Input schema: {schema_text(entry.input_schema)}")


async def test_a_function_checks_its_arguments_once_with_the_schemas_messages() -> None:
    entry = function_tool(count, group="g")
    assert entry.checks_arguments  # the server leaves small arguments to the call
    # What the schema refuses is refused with its message, even where the lax model would have converted it.
    with pytest.raises(ToolArgumentsError, match=r"times: '5' is not of type 'integer'.*Input schema:"):
        await entry.call({"times": "5"})
    with pytest.raises(ToolArgumentsError, match=r"Additional properties are not allowed \('colour'"):
        await entry.call({"times": 1, "colour": "red"})
    with pytest.raises(ToolArgumentsError, match="'times' is a required property"):
        await entry.call({})
    # What the schema accepts and strict mode does not take is converted as before: 2.0 is an integer to JSON Schema.
    assert (await entry.call({"times": 2.0})).structured_content == {"times": 2, "label": "x"}
    assert (await entry.call({"times": 3, "label": "y"})).structured_content == {"times": 3, "label": "y"}


def test_a_schema_with_keywords_the_model_does_not_enforce_is_checked_by_the_server() -> None:
    def tagged(tags: Annotated[list[str], Field(json_schema_extra={"maxItems": 2})]) -> str:
        """Tag."""
        return ",".join(tags)

    assert not function_tool(tagged, group="g").checks_arguments
    assert function_tool(convert, group="g").checks_arguments


def half(x: float) -> float:
    """Halve a number."""
    return x / 2


async def test_a_function_refuses_nan_though_its_model_takes_it() -> None:
    entry = function_tool(half, group="g")
    with pytest.raises(ToolArgumentsError, match=r"^Invalid arguments for half: x: NaN and Infinity"):
        await entry.call({"x": float("nan")})
    assert (await entry.call({"x": 3.0})).content[0].text == "1.5"  # type: ignore[union-attr]


async def test_a_function_answering_with_many_blocks_reaches_the_client_joined() -> None:
    from lazytools import Catalog, build_server

    from .conftest import client, make_settings

    group = FunctionGroup("many")

    @group.tool
    def lines(count: int) -> types.CallToolResult:
        """Answer with one text block per line."""
        return types.CallToolResult(content=[types.TextContent(text=f"line {n}") for n in range(count)])

    catalog = Catalog()
    catalog.add(group)
    async with client(build_server(catalog, make_settings()), "claude-ai") as c:
        result = await c.call_tool("invoke_tool", {"tool_name": "lines", "arguments": {"count": 3_000}})
    text, note = result.content
    assert isinstance(text, types.TextContent) and text.text.split("\n") == [f"line {n}" for n in range(3_000)]
    assert isinstance(note, types.TextContent) and "3,000 parts were more than 1,000" in note.text
