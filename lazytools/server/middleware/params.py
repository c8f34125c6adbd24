"""Request params of the wrong shape answered with the parameter at fault: the SDK's own answer says only
"Invalid request parameters", which leaves a client (or a model) guessing which one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ...safetext import clip
from ...sdk import CallNext, HandlerResult

__all__ = ["ParamsMiddleware", "invalid_params"]

_NAMED = 3
"""Parameters an answer names at most (a hostile request can be wrong in thousands of places)."""

_NAME_CHARS = 64
"""Characters of one parameter's path kept: a key the client chose can be of any length."""

_EXPECTED = {
    "missing": "is required", "extra_forbidden": "is not allowed",
    "dict_type": "must be an object", "model_type": "must be an object", "model_attributes_type": "must be an object",
    "string_type": "must be a string", "int_type": "must be an integer", "int_parsing": "must be an integer",
    "int_from_float": "must be an integer", "float_type": "must be a number", "float_parsing": "must be a number",
    "bool_type": "must be a boolean", "bool_parsing": "must be a boolean", "list_type": "must be an array",
    "tuple_type": "must be an array", "literal_error": "has a value that is not allowed",
    "enum": "has a value that is not allowed",
}


class ParamsMiddleware:
    """`ServerMiddleware`, outermost: a request's params that fail the SDK's validation become -32602 naming each
    parameter at fault and what it must be, never its value (which can hold a secret, or megabytes)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # the SDK drops a malformed notification itself
            return await call_next(ctx)
        try:
            return await call_next(ctx)
        except ValidationError as exc:
            if not _of_request(exc):
                raise  # not the params (a model of ours, a result): the SDK's answer stands
            raise invalid_params(exc, ctx.params) from None


def invalid_params(exc: ValidationError, params: Mapping[str, Any] | None) -> MCPError:
    """The -32602 error for `exc`, a validation of `params`: each parameter's dotted path, what it must be."""
    faults: dict[str, list[str]] = {}
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        location = list(error["loc"])
        if exc.title.endswith("Request") and location[:1] == ["params"]:
            location = location[1:]  # the whole request was validated: its params are one level down
        path, inside = _path_in(params, location, missing=error["type"] == "missing")
        path = path or "params"  # the whole of them
        # A fault deeper inside than the path reaches (a union member's field) is not what the value must be.
        expected = "is not valid" if inside else _EXPECTED.get(error["type"], "is not valid")
        if expected not in faults.setdefault(path, []):
            faults[path].append(expected)
    named = [f"'{path}' {_merged(expected)}" for path, expected in list(faults.items())[:_NAMED]]
    more = f" (and {len(faults) - _NAMED} more)" if len(faults) > _NAMED else ""
    return MCPError(code=types.INVALID_PARAMS, message=f"Invalid request parameters: {'; '.join(named)}{more}",
                    data={"parameters": list(faults)[:_NAMED]})


def _of_request(exc: ValidationError) -> bool:
    """Whether `exc` is the SDK's validation of a request or its params (by the model's name, "CallToolRequest",
    "CallToolRequestParams"), not of something a handler made."""
    return exc.title.endswith(("Request", "RequestParams", "Params"))


def _path_in(params: Mapping[str, Any] | None, location: Sequence[int | str], *, missing: bool) -> tuple[str, bool]:
    """The part of `location` that is in `params` (a missing key included), dotted, and whether the fault lies
    deeper than that part: pydantic adds the names of union members it tried ("progressToken.str"), which are not
    parameters."""
    found: list[str] = []
    value: Any = params if params is not None else {}
    for step, key in enumerate(location):
        last = step == len(location) - 1
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        elif isinstance(value, list) and isinstance(key, int) and 0 <= key < len(value):
            value = value[key]
        elif not (missing and last and isinstance(value, Mapping)):
            return ".".join(found), not last
        found.append(clip(str(key), _NAME_CHARS))
    return ".".join(found), False


def _merged(expected: list[str]) -> str:
    """What one parameter must be, in one phrase: "must be a string or an integer" (a union's members)."""
    musts = [e.removeprefix("must be ") for e in expected if e.startswith("must be ")]
    rest = [e for e in expected if not e.startswith("must be ")]
    return " or ".join(([f"must be {' or '.join(musts)}"] if musts else []) + rest)
