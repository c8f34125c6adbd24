"""Tool arguments checked against the tool's input schema (JSON Schema, via jsonschema)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import SchemaError, UnknownType
from referencing.exceptions import Unresolvable

from .errors import ToolArgumentsError

__all__ = ["compact_json", "validate_arguments"]

_MAX_REPORTED = 5


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def validate_arguments(tool: str, schema: Mapping[str, Any], arguments: Any) -> dict[str, Any]:
    """Return `arguments` as a dict if they satisfy `schema`; otherwise raise with every problem named."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolArgumentsError(
            f"Invalid arguments for {tool}: expected a JSON object, got {type(arguments).__name__}. "
            f"Input schema: {compact_json(schema)}"
        )
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        errors = sorted(cls(schema).iter_errors(arguments), key=lambda e: list(map(str, e.absolute_path)))
    except (SchemaError, UnknownType, Unresolvable):  # an upstream's broken schema must not block the call; the upstream will judge
        return arguments
    if not errors:
        return arguments
    problems = []
    for error in errors[:_MAX_REPORTED]:
        where = "/".join(str(part) for part in error.absolute_path)
        message = _shorten(error.message)
        problems.append(f"{where}: {message}" if where else message)
    more = f" (and {len(errors) - _MAX_REPORTED} more)" if len(errors) > _MAX_REPORTED else ""
    raise ToolArgumentsError(
        f"Invalid arguments for {tool}: " + "; ".join(problems) + more + f". Input schema: {compact_json(schema)}"
    )


def _shorten(message: str, limit: int = 300) -> str:
    # jsonschema quotes the offending value: a huge value must not become a huge error for the model.
    return message if len(message) <= limit else message[: limit - 20] + f"… ({len(message)} chars)"
