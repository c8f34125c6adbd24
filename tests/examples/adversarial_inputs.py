"""Hostile arguments for every bundled tool, derived from its signature (shared by the test and the benchmark).

Each call keeps every other argument at a valid baseline and makes one argument hostile: huge strings of the
characters that make patterns backtrack, deep or wide JSON, huge and non-finite numbers, lone surrogates, and
every choice of a Literal. Sizes are the caps the tools state (MAX_TEXT_CHARS, MAX_ITEMS) and the smaller ones
some tools use, so inputs just under a cap reach the tool's code instead of its length check.
"""

from __future__ import annotations

import base64
import inspect
import os
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from lazytools_examples._common import MAX_ITEMS, MAX_TEXT_CHARS

__all__ = ["adversarial_calls", "make_adversarial_root", "tool_functions", "BASELINES"]

# Valid values for required parameters whose plain defaults below would be refused before any real work.
BASELINES: dict[str, dict[str, Any]] = {
    "convert_case": {"style": "snake"},
    "truncate_text": {"max_length": 50},
    "diff_texts": {"old_text": "a\nb\n", "new_text": "a\nc\n"},
    "find_and_replace": {"find": "a", "replace": "bb"},
    "evaluate_expression": {"expression": "1 + 2"},
    "describe_numbers": {"numbers": [1.0, 2.0, 3.0]},
    "percentage_change": {"old_value": 1.0, "new_value": 2.0},
    "gcd_lcm": {"numbers": [4, 6]},
    "check_prime": {"n": 97},
    "prime_factors": {"n": 360},
    "convert_number_base": {"value": "255"},
    "solve_quadratic": {"a": 1.0, "b": -3.0, "c": 2.0},
    "compound_interest": {"principal": 1000.0, "annual_rate_percent": 5.0, "years": 10.0},
    "loan_payment": {"principal": 1000.0, "annual_rate_percent": 5.0, "years": 10.0},
    "apply_discount": {"price": 100.0},
    "split_bill": {"total": 100.0, "people": 3},
    "convert_units": {"value": 1.0, "from_unit": "km", "to_unit": "mi"},  # the other converters take Literals
    "format_byte_size": {"num_bytes": 123456789.0},
    "convert_timezone": {"datetime_text": "2024-03-10 12:00", "from_zone": "UTC", "to_zone": "Europe/Paris"},
    "add_to_date": {"start": "2024-01-31"},
    "days_between_dates": {"start_date": "2024-01-01", "end_date": "2024-12-31"},
    "weekday_of_date": {"date_text": "2024-07-04"},
    "parse_datetime": {"text": "2024-07-04T10:00:00Z"},
    "unix_to_iso": {"timestamp": 1700000000.0},
    "iso_to_unix": {"datetime_text": "2024-07-04T10:00:00Z"},
    "month_calendar": {"year": 2024, "month": 2},
    "validate_json": {"json_text": '{"a": [1, 2]}'},
    "format_json": {"json_text": '{"a": [1, 2]}'},
    "json_get_path": {"data": {"a": {"b": [1, 2]}}, "path": "a.b[1]"},
    "flatten_json": {"data": {"a": {"b": [1, 2]}}},
    "unflatten_json": {"data": {"a.b": 1, "a.c.0": 2}},
    "diff_json": {"old": {"a": 1, "b": [1]}, "new": {"a": 2, "c": 3}},
    "csv_to_json": {"csv_text": "a,b\n1,x\n2,y\n"},
    "csv_column_stats": {"csv_text": "a,b\n1,x\n2,y\n"},
    "json_to_csv": {"records": [{"a": 1, "b": "x"}, {"a": 2}]},
    "records_to_markdown_table": {"records": [{"a": 1, "b": "x"}, {"a": 2}]},
    "hmac_verify": {"signature": "00" * 32},
    "decode_jwt_unverified": {"token": "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIiwiZXhwIjoxfQ.c2ln"},
    "base64_decode": {"data": "aGVsbG8="},
    "hex_decode": {"data": "68656c6c6f"},
    "parse_url": {"url": "https://user@example.com:8080/a/b?x=1&y=2#f"},
    "unicode_char_info": {"text": "aé€"},
    # Patterns that run in linear time, so hostile texts exercise the tools' own limits; runaway patterns and the
    # child's timeout have their own tests (test_regex.py).
    "regex_test": {"pattern": "(b)(?P<n>c)", "text": "abc"},
    "regex_find_all": {"pattern": "a", "text": "banana"},
    "regex_replace": {"pattern": "a", "replacement": "#", "text": "banana"},
    "regex_split": {"pattern": ",", "text": "a,b,c"},
    "regex_validate": {"pattern": r"(a)(?P<n>b)"},
    "read_text_file": {"path": "notes.txt"},
    "get_file_info": {"path": "notes.txt"},
    "search_in_files": {"query": "line"},
    "find_files": {"pattern": "*.txt"},
    "file_checksum": {"path": "notes.txt"},
    "convert_color": {"color": "#1e90ff"},
    "color_contrast_ratio": {"foreground": "#000", "background": "white"},
    "adjust_color_lightness": {"color": "navy", "amount": 20.0},
    "mix_colors": {"color_a": "red", "color_b": "blue"},
    "color_palette": {"color": "teal"},
    "semver_compare": {"version_a": "1.2.3", "version_b": "1.10.0-rc.1"},
    "semver_sort": {"versions": ["1.0.0", "0.9.1", "1.0.0-alpha"]},
    "semver_bump": {"version": "1.2.3", "part": "minor"},
    "semver_satisfies": {"version": "1.2.3", "range_expression": "^1.0.0 || >=2.0.0 <3.0.0"},
    "cron_next_runs": {"expression": "*/15 9-17 * * 1-5", "start": "2024-01-01T00:00:00"},
    "describe_cron": {"expression": "0 9 * * 1-5"},
    "pick_random_items": {"items": ["a", "b", "c"]},
    "shuffle_items": {"items": ["a", "b", "c"]},
}

_SIZES = (MAX_TEXT_CHARS, 100_000, 1_000)


def _strings(n: int) -> list[tuple[str, str]]:
    """Strings of about n characters whose shapes have made regexes and parsers slow or outputs huge."""
    half, third = n // 2, n // 3
    return [
        ("a", "a" * n),
        ("dots+x", "." * (n - 1) + "x"),
        ("a.", "a." * half),
        ("digits+x", "1" * (n - 1) + "x"),
        ("CAPS", "A" * n),
        ("spaces+x", " " * (n - 1) + "x"),
        ("newline+ws", "\n" + "\t\r " * third),
        ("['", "['" * half),
        ("a@", "a@" * half),
        (",\"", ',"' * half),
        ("(", "(" * n),
        ("*a", "*a" * half),
        ("é", "é" * n),
        ("words", "word " * (n // 5)),
        ("lines", "x\n" * half),
    ]


def _special_strings() -> list[tuple[str, str]]:
    deep = "[" * 5_000 + "]" * 5_000
    return [
        ("empty", ""),
        ("surrogate", "a\ud800b"),
        ("json-deep", deep),
        ("json-wide", "[" + ",".join(["1"] * 100_000) + "]"),
        ("json-object-deep", '{"a":' * 900 + "1" + "}" * 900),
        ("json-nan", '{"a": NaN, "b": Infinity}'),
        ("csv-wide", ",".join(f"c{i}" for i in range(50_000)) + "\n" + "," * 49_999 + "\n"),
        ("csv-tall", "a\n" + "1\n" * 49_000),
        ("bigint", "9" * 5_000),
        ("regex-lookahead", "(?=(.*))"),
        ("regex-nested", "(a+)+$"),
        ("glob", "**/" * 300 + "*"),
        ("jwt-deep", _jwt('{"a":' + "[" * 950 + "]" * 950 + "}")),
        ("jwt-surrogate", _jwt('{"a":"\\ud800"}')),
        ("path-escape", "../../../../etc/passwd"),
        ("dev-zero", "zero"),
        ("fifo", "pipe"),
        ("long-line-file", "wide.txt"),
        ("not-utf8-name", "bad\\xffname"),
    ]


def _jwt(payload: str) -> str:
    def seg(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")

    header = seg('{"alg": "none"}')
    return f"{header}.{seg(payload)}.sig"


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """The bare type and the Field constraints (annotated_types objects) of a parameter's annotation."""
    metadata: list[Any] = []
    while get_origin(annotation) is typing.Annotated:
        annotation, *extra = get_args(annotation)
        for item in extra:
            metadata.extend(getattr(item, "metadata", []) or [])
    return annotation, metadata


def _bound(metadata: list[Any], name: str) -> Any:
    for item in metadata:
        if hasattr(item, name):
            return getattr(item, name)
    return None


def _values(annotation: Any) -> list[tuple[str, Any]]:
    """Hostile values for one parameter type."""
    bare, metadata = _unwrap(annotation)
    origin = get_origin(bare)
    if origin in (Union, types.UnionType):
        values: list[tuple[str, Any]] = [("none", None)]
        for option in get_args(bare):
            if option is not type(None):
                values += _values(option)
        return values
    if origin is Literal:
        return [(f"choice {c}", c) for c in get_args(bare)]
    if bare is str:
        limit = _bound(metadata, "max_length")
        sizes = [s for s in _SIZES if limit is None or s <= limit] or [limit]
        return [(f"{label} x{len(v):,}", v) for size in sizes for label, v in _strings(size)] + _special_strings()
    if bare is bool:
        return [("true", True), ("false", False)]
    if bare is int:
        high, low = _bound(metadata, "le"), _bound(metadata, "ge")
        return [("max", high if high is not None else 10**40), ("min", low if low is not None else -(10**40)),
                ("zero", 0), ("2**63", 2**63), ("4000 digits", 10**3999)]
    if bare is float:
        return [("nan", float("nan")), ("inf", float("inf")), ("-inf", float("-inf")), ("1e308", 1e308),
                ("-1e308", -1e308), ("tiny", 5e-324), ("zero", 0.0)]
    if origin is list:
        (item,) = get_args(bare) or (Any,)
        item_bare, _ = _unwrap(item)
        if item_bare is str:
            return [("many", ["x"] * MAX_ITEMS), ("one huge", ["a." * (MAX_TEXT_CHARS // 2)]), ("empty", []),
                    ("surrogates", ["\ud800"] * 10), ("semver-ish", ["1.0.0-" + "a." * 5_000 + "a"] * 20)]
        if item_bare is float:
            return [("many", [1.5] * MAX_ITEMS), ("huge", [1e308] * 1_000), ("nan", [float("nan"), 1.0]),
                    ("empty", [])]
        if item_bare is int:
            return [("many", list(range(2, 10_002))), ("huge", [10**4000 + 1, 10**4000 + 3]),
                    ("primes", [2**61 - 1, 2**89 - 1, 2**107 - 1, 2**127 - 1] * 50), ("empty", [])]
        return _records() + _json_data()
    if origin is dict or bare is dict:
        key, value = get_args(bare) or (str, Any)
        if value is float:
            return [("nan", {"x": float("nan")}), ("many", {f"v{i}": 1.0 for i in range(10_000)})]
        return _json_data()
    return _json_data()


def _records() -> list[tuple[str, Any]]:
    return [
        ("one wide record + empty ones", [{f"k{i}": 1 for i in range(200_000)}] + [{} for _ in range(9_999)]),
        ("one long cell + many rows", [{"a": "x" * MAX_TEXT_CHARS}] + [{"a": 1} for _ in range(9_999)]),
        ("many records", [{"a": i, "b": "x"} for i in range(MAX_ITEMS)]),
    ]


def _json_data() -> list[tuple[str, Any]]:
    deep: Any = 1
    for _ in range(150):
        deep = {"a": [deep]}
    return [
        ("deep", deep),
        ("wide object", {f"key{i}": i for i in range(100_000)}),
        ("long list", {"k": list(range(100_000))}),
        ("huge key", {"a" * MAX_TEXT_CHARS: 1}),
        ("nan", {"a": float("nan"), "b": [float("inf")]}),
        ("surrogate", {"\ud800": "\udfff"}),
        ("many dotted keys", {".".join(["a"] * 500) + f".{i}": i for i in range(1_000)}),
        ("records", [{"a": i} for i in range(10_000)]),
    ]


def tool_functions(files_root: Path) -> dict[str, Callable[..., Any]]:
    from lazytools_examples import build_catalog

    return {fn.__name__: fn for fns in build_catalog(files_root).values() for fn in fns}


def _baseline(name: str, fn: Callable[..., Any]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    hints = get_type_hints(fn, include_extras=True)
    for param in inspect.signature(fn).parameters.values():
        if param.name in BASELINES.get(name, {}):
            args[param.name] = BASELINES[name][param.name]
        elif param.default is not inspect.Parameter.empty:
            continue
        else:
            bare, _ = _unwrap(hints[param.name])
            plain: dict[Any, Any] = {str: "hello world", int: 3, float: 1.5, bool: True}
            if get_origin(bare) is Literal:
                args[param.name] = get_args(bare)[0]
            else:
                args[param.name] = plain.get(bare, ["a", "b"])
    return args


def adversarial_calls(name: str, files_root: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(label, arguments) pairs for tool `name`: the baseline, then each parameter in turn made hostile."""
    fn = tool_functions(Path(files_root))[name]
    base = _baseline(name, fn)
    yield "baseline", dict(base)
    hints = get_type_hints(fn, include_extras=True)
    for param in inspect.signature(fn).parameters:
        for label, value in _values(hints[param]):
            yield f"{param}={label}", {**base, param: value}


def make_adversarial_root(root: Path) -> Path:
    """A files root holding what a hostile user could leave there for the file tools."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "notes.txt").write_text("line one\nline two\n")
    (root / "wide.txt").write_text("w" * 3_000_000 + "\n" + "short\n")
    (root / "many_lines.txt").write_text("line\n" * 200_000)
    (root / "blob.bin").write_bytes(b"\x00" * 10_000)
    deep = root
    for level in range(40):
        deep = deep / f"d{level}"
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("deep down\n")
    crowd = root / "crowd"
    crowd.mkdir()
    for i in range(3_000):
        (crowd / f"f{i:05d}.txt").write_text("x\n")
    os.mkfifo(root / "pipe")
    os.symlink("/dev/zero", root / "zero")
    os.symlink("loop", root / "loop")
    os.symlink("..", root / "up")
    with open(os.fsencode(root) + b"/bad\xffname", "wb") as handle:
        handle.write(b"odd name\n")
    return root
