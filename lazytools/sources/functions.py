"""In-process tools: typed Python functions become catalog entries (schema from type hints via pydantic)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, get_args, get_type_hints, overload

import anyio
import mcp_types as types
from pydantic import BaseModel, ConfigDict, ValidationError, WithJsonSchema, create_model
from pydantic.fields import FieldInfo

from ..entry import ToolEntry
from ..errors import ToolArgumentsError, ToolExecutionError
from ..safetext import clip
from ..threads import call_time_limit, in_tool_thread
from ..validation import INLINE_BYTES, refuse_non_finite, schema_text, validate_arguments, within

__all__ = ["INLINE_ATTRIBUTE", "FunctionGroup", "function_tool", "to_result"]

F = TypeVar("F", bound=Callable[..., Any])

INLINE_ATTRIBUTE = "lazytools_inline"
"""A function with this attribute set to True runs as if registered with `inline=True`: a module can mark its
quick functions without importing lazytools (the bundled examples do)."""


def _failure(exc: Exception) -> ToolExecutionError:
    """The tool's own failure as its call reports it: its message kept, our frames hidden."""
    return ToolExecutionError(f"{type(exc).__name__}: {exc}")


def function_tool(
    fn: Callable[..., Any],
    *,
    group: str,
    name: str | None = None,
    description: str | None = None,
    annotations: types.ToolAnnotations | None = None,
    inline: bool | None = None,
) -> ToolEntry:
    """Describe `fn` as a tool: its parameters' type hints give the input schema, its docstring the description.

    A synchronous `fn` runs in a worker thread, so that a slow one stalls no other session. Called by a server, it
    has `call_timeout` seconds (what a timeout does to a thread: `lazytools/threads.py`). `inline=True` (or the
    function's `lazytools_inline` attribute) runs it on the event loop instead when its arguments are small: for
    functions that return in microseconds whatever they are given (arithmetic, a table lookup), where the thread
    hand-off costs more than the work (docs/benchmarks.md). Large arguments still go to a thread.
    """
    model = _arguments_model(fn)
    schema = _clean_schema(model.model_json_schema())
    is_async = inspect.iscoroutinefunction(fn)
    quick = bool(getattr(fn, INLINE_ATTRIBUTE, False)) if inline is None else inline

    tool_name = name or fn.__name__
    exact = _schema_is_the_models(model)
    fields = tuple(model.model_fields)

    async def call(arguments: dict[str, Any]) -> types.CallToolResult:
        refuse_non_finite(tool_name, schema, arguments)  # the model's float takes NaN; JSON has none
        parsed = _parsed(model, tool_name, schema, arguments, exact)
        kwargs = {key: getattr(parsed, key) for key in fields}
        if quick and not is_async and within(arguments, INLINE_BYTES):
            try:
                # Microseconds by the author's word, and on the loop: a time limit could not stop it anyway.
                value = fn(**kwargs)
            except Exception as exc:
                raise _failure(exc) from exc
            return to_result(value)
        limit = call_time_limit()
        try:
            with anyio.move_on_after(limit) as clock:
                if is_async:
                    value = await fn(**kwargs)
                else:
                    # A thread keeps one slow function from stalling every other session on the event loop.
                    value = await in_tool_thread(lambda: fn(**kwargs))
        except Exception as exc:
            raise _failure(exc) from exc
        if clock.cancelled_caught:
            raise ToolExecutionError(f"timed out: the tool did not return within {limit:g} s "
                                     "(LAZYTOOLS_CALL_TIMEOUT)")
        return to_result(value)

    doc = inspect.getdoc(fn) or ""
    return ToolEntry(
        name=tool_name,
        group=group,
        description=description or doc or fn.__name__.replace("_", " "),
        input_schema=schema,
        call=call,
        annotations=annotations,
        trusted_schema=True,
        checks_arguments=exact,
        at_once=quick and not is_async,
    )


class FunctionGroup:
    """Collects functions registered with the `tool` decorator; `entries` feeds them to a catalog."""

    def __init__(self, group: str, *, summary: str = "", annotations: types.ToolAnnotations | None = None) -> None:
        self.group = group
        self.summary = summary
        self._annotations = annotations
        self.entries: list[ToolEntry] = []

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(self, /, **options: Any) -> Callable[[F], F]: ...

    def tool(self, fn: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
        """Register `fn` (`@group.tool`), or with options (`@group.tool(inline=True, name=...)`)."""

        def register(fn: F) -> F:
            self.add(fn, **options)
            return fn

        return register if fn is None else register(fn)

    def add(self, fn: Callable[..., Any], **options: Any) -> ToolEntry:
        options.setdefault("annotations", self._annotations)
        entry = function_tool(fn, group=self.group, **options)
        self.entries.append(entry)
        return entry


def to_result(value: Any) -> types.CallToolResult:
    """A function's return value as an MCP result: text always, structured content for objects."""
    if isinstance(value, types.CallToolResult):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, str):
        return types.CallToolResult(content=[types.TextContent(text=value)])
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:
        # NaN and Infinity are not JSON: null, as JavaScript's JSON.stringify writes them.
        value = _finite(value)
        try:
            text = json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
        except (ValueError, RecursionError) as exc:  # e.g. an integer past Python's 4300-digit conversion limit
            raise ToolExecutionError(f"the tool's result cannot be written as JSON: {exc}") from None
    except RecursionError:
        raise ToolExecutionError("the tool's result cannot be written as JSON: it is nested too deeply") from None
    structured = value if isinstance(value, dict) else None
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _arguments_model(fn: Callable[..., Any]) -> type[BaseModel]:
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{fn.__name__}: *args and **kwargs cannot become tool parameters")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)
    return create_model(f"{fn.__name__}_arguments", __config__=config, **fields)


def _clean_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated titles: they repeat the names and cost tokens on every listing."""

    def strip(node: Any, in_properties: bool = False) -> Any:
        if isinstance(node, dict):
            return {
                key: strip(value, key == "properties")
                for key, value in node.items()
                if not (key == "title" and not in_properties and isinstance(value, str))
            }
        if isinstance(node, list):
            return [strip(item) for item in node]
        return node

    cleaned: dict[str, Any] = strip(dict(schema))
    cleaned.setdefault("properties", {})
    return cleaned


def _parsed(model: type[BaseModel], tool: str, schema: Mapping[str, Any], arguments: dict[str, Any],
            exact: bool) -> BaseModel:
    """`arguments` as the function's argument model. Where the model enforces all its input schema says (`exact`),
    its strict mode, which takes only what the schema accepts, is the one check of small arguments (the server
    leaves them to it: `ToolEntry.checks_arguments`). Anything it refuses gets the schema's check, for the schema's
    clear messages, and then the model's lax mode, which converts what the schema allows and strict mode does not
    take (a string for a date, a list for a tuple, 5.0 for an integer)."""
    if exact:
        try:
            return model.model_validate(arguments, strict=True)
        except ValidationError:
            validate_arguments(tool, schema, arguments, trusted=True)
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        raise ToolArgumentsError(_describe_validation(exc, tool, schema)) from exc


def _schema_is_the_models(model: type[BaseModel]) -> bool:
    """Whether `model` enforces everything its JSON schema says: no keyword was added to the schema beside the
    model's own (`json_schema_extra`, `WithJsonSchema`), in it or in a model it nests."""
    seen: set[type[BaseModel]] = set()

    def plain(tp: Any) -> bool:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp in seen:
                return True
            seen.add(tp)
            if tp.model_config.get("json_schema_extra") is not None:
                return False
            return all(field.json_schema_extra is None
                       and not any(isinstance(item, WithJsonSchema) for item in field.metadata)
                       and plain(field.annotation) for field in tp.model_fields.values())
        if isinstance(tp, WithJsonSchema) or (isinstance(tp, FieldInfo) and tp.json_schema_extra is not None):
            return False
        return all(plain(arg) for arg in get_args(tp))

    return plain(model)


def _describe_validation(exc: ValidationError, tool: str, schema: Mapping[str, Any]) -> str:
    """What the model refused (a value the schema's `format` allows but the type does not: month 13 in a date),
    worded as the schema's own refusals are, with the input schema, so that a model can correct its call."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return f"Invalid arguments for {clip(tool)}: " + "; ".join(parts) + f". Input schema: {schema_text(schema)}"
