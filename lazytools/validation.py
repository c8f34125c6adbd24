"""Tool arguments checked against the tool's input schema (JSON Schema, via jsonschema), safely for hostile input.

Schemas come from upstream servers and arguments from clients, so neither is trusted:

- `$ref` resolves only inside the schema itself (and the JSON Schema meta-schemas): nothing is fetched, no URL,
  no file. A reference that points elsewhere accepts anything there, with a warning naming the tool (once).
- A broken part of a schema (`pattern: "("`, `properties: 5`, `$ref: "#"` looping forever) accepts anything
  there, with a warning (once); the rest of the schema is still checked, and the upstream judges the call.
- `pattern` and `patternProperties` run on the `regex` package, which releases the GIL while matching and takes a
  timeout, instead of `re`, which holds the GIL through catastrophic backtracking.
- `uniqueItems` hashes canonical forms (linear) instead of jsonschema's pairwise comparison (quadratic for objects).
- Arguments larger than a byte budget are refused before any keyword runs, and every keyword checks a deadline.

`validate_arguments` is the synchronous core; `validate_off_loop` runs it in a worker thread so that a slow check
never holds the event loop (other sessions keep being served).
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache, partial
from itertools import islice
from typing import Any

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar
from jsonschema import validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import NoSuchResource, Unresolvable

from .entry import SCHEMA_CHARS, compact_json
from .errors import ToolArgumentsError
from .safetext import clip
from .settings import Settings
from .threads import loop_limiter

__all__ = [
    "INLINE_BYTES", "SCHEMA_CHARS", "Limits", "compact_json", "non_finite_at", "refuse_non_finite", "schema_text",
    "validate_arguments", "validate_call", "validate_off_loop", "within",
]

logger = logging.getLogger(__name__)


def _regex_package() -> Any:
    """The `regex` package, or None when a script's own folder shadows it (`python examples/my_server.py` puts
    examples/, which holds a regex.py, first on sys.path): then patterns fall back to `re`, without a timeout."""
    try:
        import regex
    except ImportError:
        regex = None
    if regex is None or not hasattr(regex, "VERSION1"):
        logger.warning("the regex package is shadowed by another module named regex (a regex.py beside the script?): "
                       "schema patterns are matched with re, without a timeout")
        return None
    return regex


_REGEX = _regex_package()

_MAX_REPORTED = 5
_MAX_COLLECTED = 50
"""Errors gathered before sorting: an array of a million wrong items does not make a million error objects."""
_LIMITER: RunVar[anyio.CapacityLimiter] = RunVar("lazytools_validation_limiter")
"""Validations in worker threads at once, per event loop: hostile ones cannot take every thread the in-process
tools need."""
_WORKERS = 4


@dataclass(frozen=True, slots=True)
class Limits:
    """How far checking one call's arguments may go: seconds of checking, and bytes of arguments (about)."""

    timeout: float
    """LAZYTOOLS_VALIDATION_TIMEOUT"""
    max_bytes: int
    """LAZYTOOLS_MAX_ARGUMENT_BYTES"""

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        return cls(timeout=settings.validation_timeout, max_bytes=settings.max_argument_bytes)

    @classmethod
    def defaults(cls) -> Limits:
        """The settings' defaults (for callers without settings: a library user checking arguments, tests)."""
        fields = Settings.model_fields
        return cls(timeout=fields["validation_timeout"].default, max_bytes=fields["max_argument_bytes"].default)


_DEFAULTS = Limits.defaults()


def schema_text(schema: Mapping[str, Any]) -> str:
    """`schema` as compact JSON, or, past SCHEMA_CHARS, a note of its size in its place."""
    text = compact_json(dict(schema))
    if len(text) <= SCHEMA_CHARS:
        return text
    return f"(not shown: {len(text):,} characters, over {SCHEMA_CHARS:,}; the parameters are in the tool's signature)"


class _OutOfTime(Exception):
    """The deadline passed in the middle of a check."""


class _PatternTooSlow(Exception):
    """One `pattern` took longer than `_PATTERN_TIMEOUT` on one value: it backtracks."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        super().__init__(pattern)


_PATTERN_TIMEOUT = 1.0
"""Seconds one pattern may take on one value (the regex package counts CPU time). A sane pattern takes
microseconds; one that backtracks catastrophically is stopped here instead of at the whole check's deadline."""


def _refuse_retrieval(uri: str) -> Any:
    raise NoSuchResource(uri)


_LOCAL_ONLY: Registry[Any] = Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]
"""References resolve inside the schema (and the meta-schemas jsonschema ships); anything else is not fetched."""


# -- one check's state (a check runs in one thread) -----------------------------------------------------------------


class _Check:
    def __init__(self, tool: str, deadline: float) -> None:
        self.tool = tool
        self.deadline = deadline
        self.problems: set[str] = set()
        self.calls = 0

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise _OutOfTime

    def tick_sometimes(self) -> None:
        # Every keyword call passes here: reading the clock on one call in 64 keeps the check cheap.
        self.calls += 1
        if not self.calls & 63:
            self.tick()

    def remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.001)


_current = threading.local()


def _check() -> _Check:
    check: _Check | None = getattr(_current, "check", None)
    if check is None:  # a validator used outside validate_arguments: no deadline, nobody to warn
        check = _Check("?", math.inf)
    return check


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()
_MAX_WARNED = 10_000


def _warn_once(tool: str, problem: str) -> None:
    with _warned_lock:
        if (tool, problem) in _warned or len(_warned) >= _MAX_WARNED:
            return
        _warned.add((tool, problem))
    logger.warning("tool %s: input schema %s; that part accepts any value (the upstream still judges the call)",
                   clip(tool), problem)


# -- keywords that replace jsonschema's ------------------------------------------------------------------------------


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    return _REGEX.compile(pattern) if _REGEX is not None else re.compile(pattern)


def _search(pattern: str, text: str) -> bool:
    check = _check()
    try:
        compiled = _compiled(pattern)
    except Exception as exc:  # noqa: BLE001 - regex.error, re.error, a pattern that is not a string: all broken
        raise _BrokenSchema(f"has a pattern that does not compile ({clip(pattern, 60)}: {exc})") from None
    budget = min(check.remaining(), _PATTERN_TIMEOUT)
    if _REGEX is None:
        return compiled.search(text) is not None
    try:
        return compiled.search(text, timeout=budget) is not None
    except TimeoutError:
        if budget < _PATTERN_TIMEOUT:
            raise _OutOfTime from None
        raise _PatternTooSlow(pattern) from None


class _BrokenSchema(Exception):
    """A part of the schema that cannot be applied; the message says why, for the warning."""


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{clip(instance, 100)!r} does not match {clip(pattern, 100)!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [key for key in instance
              if key not in known and not any(_search(pattern, key) for pattern in patterns)]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        shown = ", ".join(repr(clip(key, 60)) for key in sorted(extras)[:_MAX_REPORTED])
        more = f" and {len(extras) - _MAX_REPORTED} more" if len(extras) > _MAX_REPORTED else ""
        yield ValidationError(f"Additional properties are not allowed ({shown}{more} unexpected)")


def _canonical(value: Any) -> Any:
    """A hashable form under which two JSON values are equal exactly when JSON Schema says so (1 == 1.0, true != 1)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, list):
        return ("a", tuple(_canonical(item) for item in value))
    if isinstance(value, dict):
        return ("o", frozenset((key, _canonical(item)) for key, item in value.items()))
    return ("z", None) if value is None else ("?", repr(value))


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Any] = set()
    for index, item in enumerate(instance):
        if index % 1024 == 0:
            _check().tick()
        key = _canonical(item)
        if key in seen:
            yield ValidationError(f"has non-unique elements (item {index} repeats an earlier one)")
            return
        seen.add(key)


_REPLACED: dict[str, Callable[..., Iterator[ValidationError]]] = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}


_ENDLESS_NOTE = "recurses without end (a $ref cycle, or too deep to check)"
"""The problem noted for a schema whose check reaches the recursion limit: it is unbounded."""


def _guarded(keyword: str, apply: Callable[..., Iterator[ValidationError]]) -> Callable[..., Iterator[ValidationError]]:
    """`apply` with the deadline checked first and a broken schema part turned into "accept anything" (noted)."""

    def run(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        check = _check()
        check.tick_sometimes()
        try:
            yield from apply(validator, value, instance, schema)
        except (_OutOfTime, _PatternTooSlow, ValidationError):
            raise
        except _BrokenSchema as exc:
            check.problems.add(str(exc))
        except RecursionError:
            # A reference cycle that consumes nothing ($ref: "#") or a schema deeper than the stack: unbounded.
            check.problems.add(_ENDLESS_NOTE)
        except Exception as exc:  # noqa: BLE001 - any failure here is the schema's, not the arguments'
            check.problems.add(_describe_broken(keyword, value, exc))

    return run


def _describe_broken(keyword: str, value: Any, exc: Exception) -> str:
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, Unresolvable):
        cause = cause.__cause__
    if cause is not None:
        return f"refers to {clip(value, 120)!r}, which is not inside the schema (lazytools fetches nothing)"
    return f"has a {keyword!r} that cannot be applied ({type(exc).__name__}: {clip(str(exc), 120)})"


@lru_cache(maxsize=16)
def _safe_class(base: type[Validator]) -> type[Validator]:
    keywords = {**base.VALIDATORS, **{k: v for k, v in _REPLACED.items() if k in base.VALIDATORS}}
    guarded = {keyword: _guarded(keyword, apply) for keyword, apply in keywords.items()}
    return validators.extend(base, guarded)  # type: ignore[no-any-return]


@lru_cache(maxsize=16)
def _trusted_class(base: type[Validator]) -> type[Validator]:
    """`base` with the safe keywords (patterns with a timeout, linear uniqueItems) but no per-keyword guard."""
    return validators.extend(base, {k: v for k, v in _REPLACED.items() if k in base.VALIDATORS})  # type: ignore[no-any-return]


# -- size -----------------------------------------------------------------------------------------------------------


def within(value: Any, budget: int) -> bool:
    """Whether `value` serialises to about `budget` bytes or fewer; stops counting as soon as it is over."""
    stack = [value]
    used = 0
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            used += len(item) + 3
        elif isinstance(item, bool) or item is None:
            used += 5
        elif isinstance(item, int):
            used += item.bit_length() * 3 // 10 + 2
        elif isinstance(item, dict):
            used += 2 + sum(len(key) + 4 for key in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            used += 2
            stack.extend(item)
        else:
            used += 12
        if used > budget:
            return False
    return True


def non_finite_at(value: Any) -> str | None:
    """Where `value` holds NaN or an infinity (`a.2.b`; `arguments` for the whole), or None. JSON has no such
    numbers; Python's parser reads them anyway, and a tool would compute with them."""
    if not _has_non_finite(value):
        return None  # most arguments: found without making a path for each of their items
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return where or "arguments"
        if isinstance(item, dict):
            stack.extend((child, f"{where}.{key}" if where else str(key)) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, f"{where}.{i}" if where else str(i)) for i, child in enumerate(item))
    return None


def _has_non_finite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            return True
    return False


def refuse_non_finite(tool: str, schema: Mapping[str, Any], arguments: Any) -> None:
    """Raise ToolArgumentsError when `arguments` hold NaN or an infinity: not JSON, whatever the schema says."""
    where = non_finite_at(arguments)
    if where is not None:
        raise ToolArgumentsError(f"Invalid arguments for {clip(tool)}: {clip(where)}: NaN and Infinity are not "
                                 f"JSON numbers; send a finite number. Input schema: {schema_text(schema)}")


# -- entry points ---------------------------------------------------------------------------------------------------


def _object_within(tool: str, schema: Mapping[str, Any], arguments: Any, max_bytes: int | None) -> dict[str, Any]:
    """`arguments` as a JSON object (none: an empty one) of at most about `max_bytes` (None: measured already), or
    the error that says why not: what every check does before the schema's keywords."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolArgumentsError(
            f"Invalid arguments for {clip(tool)}: expected a JSON object, got {type(arguments).__name__}. "
            f"Input schema: {schema_text(schema)}"
        )
    if max_bytes is not None and not within(arguments, max_bytes):
        raise ToolArgumentsError(f"Invalid arguments for {clip(tool)}: larger than {max_bytes:,} bytes "
                                 "(LAZYTOOLS_MAX_ARGUMENT_BYTES); not checked, not sent.")
    refuse_non_finite(tool, schema, arguments)
    return arguments


def validate_arguments(tool: str, schema: Mapping[str, Any], arguments: Any, limits: Limits | None = None, *,
                       trusted: bool = False) -> dict[str, Any]:
    """Return `arguments` as a dict if they satisfy `schema`; otherwise raise with every problem named.

    `limits`: the configured ones (`Limits.of(settings)`); None means the settings' defaults.

    `trusted`: the schema is the server author's own (from type hints), so its keywords run without the per-keyword
    guard against broken schemas and slow checks (which cost as much as the check itself on a small call); patterns
    still run with a timeout."""
    limits = limits or _DEFAULTS
    timeout = limits.timeout
    checked = _object_within(tool, schema, arguments, limits.max_bytes)
    check = _Check(tool, time.monotonic() + timeout)
    previous = getattr(_current, "check", None)
    _current.check = check
    try:
        errors = _errors(schema, checked, check, trusted)
    except _OutOfTime:
        raise ToolArgumentsError(
            f"Invalid arguments for {clip(tool)}: checking them against the input schema took longer than "
            f"{timeout:g} s (LAZYTOOLS_VALIDATION_TIMEOUT); make them smaller or simpler.") from None
    except _PatternTooSlow as slow:
        raise ToolArgumentsError(
            f"Invalid arguments for {clip(tool)}: the input schema's pattern {clip(slow.pattern, 80)!r} took more "
            f"than {_PATTERN_TIMEOUT:g} s on a value (it backtracks); not checked, not sent.") from None
    finally:
        _current.check = previous
    for problem in sorted(check.problems):
        _warn_once(tool, problem)
    if not errors:
        return checked
    problems: list[str] = []
    for error in errors:
        where = "/".join(clip(str(part), 60) for part in error.absolute_path)
        message = _type_message(error) if error.validator == "type" else _shorten(error.message)
        problems.append(f"{where}: {message}" if where else message)
    problems = list(dict.fromkeys(problems))  # a schema reached twice ($ref, allOf) says the same thing twice
    errors = errors[: len(problems)]
    more = f" (and {len(errors) - _MAX_REPORTED} more)" if len(errors) > _MAX_REPORTED else ""
    more = more.replace(" more)", "+ more)") if len(errors) >= _MAX_COLLECTED else more
    raise ToolArgumentsError(
        f"Invalid arguments for {clip(tool)}: " + "; ".join(problems[:_MAX_REPORTED]) + more
        + f". Input schema: {schema_text(schema)}"
    )


_VALIDATORS: dict[tuple[int, bool], tuple[Mapping[str, Any], Validator]] = {}
_MAX_VALIDATORS = 4096
"""Validators built, by the schema object's id: a tool's schema is one object for as long as the tool is listed,
and building a validator cost as much as checking a small call with it. The entry holds the schema itself, so its
id cannot be reused while it is cached; a re-listed tool brings a new object and a new entry."""


def _validator(schema: Mapping[str, Any], trusted: bool) -> Validator:
    key = (id(schema), trusted)
    cached = _VALIDATORS.get(key)
    if cached is not None and cached[0] is schema:
        return cached[1]
    base = validators.validator_for(schema, default=validators.Draft202012Validator)
    validator: Validator = (_trusted_class if trusted else _safe_class)(base)(schema, registry=_LOCAL_ONLY)
    if len(_VALIDATORS) >= _MAX_VALIDATORS:
        _VALIDATORS.clear()
    _VALIDATORS[key] = (schema, validator)
    return validator


_ENDLESS: dict[int, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
"""Schemas found to recurse without end, by id (holding the schema, so the id is not reused while listed), each
with its copy without references, which later calls check instead: every try of the whole could end in a panic of
jsonschema's Rust maps, which prints itself to stderr (with RUST_BACKTRACE set, hundreds of lines), and an upstream's
schema must not write that once per call. The copy still checks what it can (types, required fields)."""

_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
_MAX_COPY_DEPTH = 64


def _without_references(value: Any, depth: int = 0) -> Any:
    """`value` (a schema part) without its references; past _MAX_COPY_DEPTH a part accepts anything."""
    if depth > _MAX_COPY_DEPTH:
        return {}
    if isinstance(value, Mapping):
        return {key: _without_references(part, depth + 1) for key, part in value.items() if key not in _REFERENCES}
    if isinstance(value, list):
        return [_without_references(part, depth + 1) for part in value]
    return value


def _endless(schema: Mapping[str, Any], check: _Check) -> list[ValidationError]:
    check.problems.add(_ENDLESS_NOTE)
    if _ENDLESS.get(id(schema), (None,))[0] is not schema:
        if len(_ENDLESS) >= _MAX_VALIDATORS:
            _ENDLESS.clear()
        _ENDLESS[id(schema)] = (schema, _without_references(schema))
    return []


def _errors(schema: Mapping[str, Any], arguments: dict[str, Any], check: _Check,
            trusted: bool = False) -> list[ValidationError]:
    endless = _ENDLESS.get(id(schema))
    if endless is not None and endless[0] is schema:
        check.problems.add(_ENDLESS_NOTE)
        schema = endless[1]
    try:
        validator = _validator(schema, trusted)
    except Exception as exc:  # noqa: BLE001 - a schema jsonschema cannot even load: nothing can be checked
        check.problems.add(f"cannot be loaded ({type(exc).__name__}: {clip(str(exc), 120)})")
        return []
    try:
        found = list(islice(validator.iter_errors(arguments), _MAX_COLLECTED))
    except RecursionError:
        return _endless(schema, check)
    except (_OutOfTime, _PatternTooSlow):
        raise
    except BaseException as exc:
        # The recursion limit can be reached inside jsonschema's Rust-backed maps (rpds), which then panic: the
        # panic is a BaseException that carries the RecursionError in its message. Anything else goes on.
        if type(exc).__name__ != "PanicException" or "RecursionError" not in str(exc):
            raise
        return _endless(schema, check)
    except Exception as exc:  # noqa: BLE001 - raised outside any keyword (e.g. an unknown $schema dialect)
        check.problems.add(f"cannot be applied ({type(exc).__name__}: {clip(str(exc), 120)})")
        return []
    return sorted(found, key=lambda e: list(map(str, e.absolute_path)))


async def validate_off_loop(tool: str, schema: Mapping[str, Any], arguments: Any, limits: Limits) -> dict[str, Any]:
    """`validate_arguments` in a worker thread: the event loop keeps serving every other session meanwhile."""
    run = partial(validate_arguments, tool, schema, arguments, limits)
    # The deadline inside the check stops it; this outer one only covers a check stuck in one C call.
    with anyio.move_on_after(limits.timeout + 1.0) as scope:
        return await anyio.to_thread.run_sync(run, limiter=_limiter(), abandon_on_cancel=True)
    assert scope.cancelled_caught
    raise ToolArgumentsError(f"Invalid arguments for {clip(tool)}: not checked within {limits.timeout:g} s "
                             "(LAZYTOOLS_VALIDATION_TIMEOUT).")


INLINE_BYTES = 4096
"""Arguments up to about this size may be checked on the event loop (a trusted schema's always, an upstream's
within INLINE_SECONDS)."""
INLINE_SECONDS = 0.002
"""How long a check of small arguments against an upstream's schema may hold the event loop. A tool's usual call
takes microseconds; one that takes longer is checked again in a worker thread with the full timeout."""


def _checked_inline(tool: str, schema: Mapping[str, Any], arguments: Any) -> dict[str, Any] | None:
    """`arguments` if they pass `schema` within INLINE_SECONDS on the event loop; None when that cannot be told
    so quickly: the validator is not built yet, the time ran out, or there is anything to report (the worker-thread
    check then reports it exactly as always)."""
    key = (id(schema), False)
    cached = _VALIDATORS.get(key)
    if _REGEX is None or type(arguments) is not dict or cached is None or cached[0] is not schema:
        return None  # without the regex package a pattern has no timeout: never on the loop
    if _has_non_finite(arguments):
        return None  # NaN passes a "number" keyword; the full check refuses it with its own message
    check = _Check(tool, time.monotonic() + INLINE_SECONDS)
    previous = getattr(_current, "check", None)
    _current.check = check
    try:
        errors = _errors(schema, arguments, check)
    except (_OutOfTime, _PatternTooSlow):
        return None
    finally:
        _current.check = previous
    return arguments if not errors and not check.problems else None


async def validate_call(tool: str, schema: Mapping[str, Any], arguments: Any, limits: Limits, *,
                        trusted: bool, left_to_tool: bool = False) -> dict[str, Any]:
    """Check a call's arguments: inline when the arguments are small and the schema trusted, or an upstream's that
    passes them within INLINE_SECONDS (a worker-thread round trip cost a third of a trivial call's throughput, and
    most of the gateway's own time per call); else in a worker thread (`validate_off_loop`). `left_to_tool`: the
    tool's call checks small arguments against the schema itself (`ToolEntry.checks_arguments`), so only their
    shape and size are checked here: one check per call, not two."""
    if within(arguments, INLINE_BYTES):
        if left_to_tool:
            measured = INLINE_BYTES <= limits.max_bytes  # within the smaller budget: within the larger one too
            return _object_within(tool, schema, arguments, None if measured else limits.max_bytes)
        if trusted:
            return validate_arguments(tool, schema, arguments, limits, trusted=True)
        if limits.max_bytes >= INLINE_BYTES and (valid := _checked_inline(tool, schema, arguments)) is not None:
            return valid
    return await validate_off_loop(tool, schema, arguments, limits)


def _limiter() -> anyio.CapacityLimiter:
    return loop_limiter(_LIMITER, _WORKERS)


def _type_message(error: Any) -> str:
    """A type error with JSON's null, true and false (`null is not of type 'number'`, not Python's `None`): the model
    wrote JSON. A null where a number belongs is often NaN or Infinity, which a client's JSON encoder sent as null."""
    instance, expected = error.instance, error.validator_value
    if not (instance is None or isinstance(instance, bool)):
        return _shorten(error.message)
    wanted = " or ".join(f"'{kind}'" for kind in expected) if isinstance(expected, list) else f"'{expected}'"
    message = f"{compact_json(instance)} is not of type {wanted}"
    kinds = set(expected) if isinstance(expected, list) else {expected}
    if instance is None and kinds & {"number", "integer"}:
        message += " (JSON has no NaN or Infinity: a client's encoder may have sent one as null)"
    return message


def _shorten(message: str, limit: int = 300) -> str:
    # jsonschema quotes the offending value: a huge value must not become a huge error for the model.
    return message if len(message) <= limit else message[: limit - 20] + f"… ({len(message)} chars)"
